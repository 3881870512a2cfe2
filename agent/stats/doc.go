// Package stats is the node agent's resource-usage provider: what the
// kubelet's summary provider and cAdvisor give it. It owns
//
//   - the Summary (k8s.io/kubelet/pkg/apis/stats/v1alpha1) behind the
//     agent API's /stats/summary and the eviction manager: node CPU,
//     memory, network, the agent's root filesystem (nodefs), the runtime's
//     image filesystem (imagefs), process limits, the kubelet, runtime and
//     pods system containers; per pod CPU, memory, network, volumes and
//     ephemeral storage; per container CPU, memory, rootfs and logs;
//   - /metrics/resource's series (NewResourceMetricsCollector), the ones
//     metrics-server and k1s's built-in metrics API scrape;
//   - /metrics/cadvisor (NewCadvisorCollector): cAdvisor's own Prometheus
//     collector over the same samples (CPU, memory, network, machine).
//
// It reads the cgroup files directly into cAdvisor's model
// (github.com/google/cadvisor/lib/model; github.com/opencontainers/cgroups
// for the mounts and file access), not through cAdvisor's in-process
// manager or its libcontainer handler: nothing watches the cgroup tree,
// and a read is three files a cgroup. One collection every housekeeping
// interval (10 s) walks the runtime's running sandboxes and containers
// (CRI), finds each one's cgroup once from its process
// (/proc/<pid>/cgroup, so both the flat /k8s.io/<id> layout and
// kubepods/<qos>/pod<uid>/<id> work) and keeps the previous CPU sample of
// each to compute usageNanoCores. Volume usage is walked every
// --volume-stats-agg-period (1 m).
package stats
