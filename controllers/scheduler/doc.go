// Package scheduler is k1s's pod scheduler: it places the pending pods
// whose spec.schedulerName is its own (default "default-scheduler") on
// nodes, behaving as upstream kube-scheduler's default profile does.
//
// It owns:
//   - a scheduling queue: active pods by priority then creation order; a
//     backoff queue (1s doubling to 10s per failed attempt); unschedulable
//     pods, moved back when a node or pod event may help them, or after
//     PodMaxInUnschedulablePodsDuration. Pods with scheduling gates, being
//     deleted or already assigned are not queued.
//   - a cache of nodes and the pods on them, which counts a pod as soon
//     as it is assumed on a node, before its binding shows up in the
//     informer, and a snapshot of it per scheduling cycle that copies only
//     what changed.
//   - the filters NodeName, NodeUnschedulable, TaintToleration,
//     NodeAffinity (nodeSelector and required node affinity), NodePorts,
//     NodeResourcesFit, PodTopologySpread (DoNotSchedule) and
//     InterPodAffinity (required affinity and anti-affinity), and the
//     scores NodeResourcesFit (LeastAllocated), BalancedAllocation,
//     NodeAffinity (preferred), TaintToleration (PreferNoSchedule),
//     PodTopologySpread (ScheduleAnyway, with the system default
//     constraints) and InterPodAffinity (preferred), weighted as upstream.
//   - binding through pods/binding in the background, FailedScheduling
//     events and the PodScheduled condition in upstream's wording, and
//     priority-based preemption (DefaultPreemption) honouring
//     PodDisruptionBudgets and preemptionPolicy.
//
// The scheduler runs as a controller of controllers/manager (Descriptor),
// under its leader election, as the kube-system/kube-scheduler service
// account.
package scheduler
