package agent

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/component-base/metrics"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/k1s/k1s/agent/prober"
	agentserver "github.com/k1s/k1s/agent/server"
	"github.com/k1s/k1s/agent/stats"
)

// nodeStats is the node's stats provider and the agent API's metrics
// endpoints made from it.
type nodeStats struct {
	// provider is nil when stats are off (--disable-stats).
	provider *stats.Provider
	// run keeps the samples fresh; nil when stats are off.
	run func(context.Context) error
	// api holds the agent API's stats dependencies.
	api agentserver.Deps
}

// newNodeStats builds the stats provider (unless stats are off) and the
// handlers of /stats/summary, /metrics/resource, /metrics/cadvisor and
// /metrics/probes. /metrics/probes is served either way.
func (n *Node) newNodeStats(runtime internalapi.RuntimeService, images internalapi.ImageManagerService, pods func() []*corev1.Pod, claims claimReader) (*nodeStats, error) {
	probes := metrics.NewKubeRegistry()
	prober.RegisterMetrics(probes)
	out := &nodeStats{api: agentserver.Deps{MetricsProbes: metrics.HandlerFor(probes, metrics.HandlerOpts{})}}
	if n.cfg.Agent.NodeFlags.DisableStats {
		return out, nil
	}
	p, err := stats.New(stats.Config{
		NodeName:        n.cfg.Agent.NodeName,
		RootDir:         n.cfg.Agent.AgentDir(),
		CgroupRoot:      n.cfg.Agent.NodeFlags.CgroupRoot,
		EmbeddedRuntime: n.runtime != nil,
	}, stats.Deps{Runtime: runtime, Images: images, PVCVolumes: pvcVolumes(pods, claims)})
	if err != nil {
		return nil, err
	}
	resource := metrics.NewKubeRegistry()
	resource.CustomMustRegister(stats.NewResourceMetricsCollector(p.GetCPUAndMemoryStats))
	cadvisor := prometheus.NewRegistry()
	cadvisor.MustRegister(p.NewCadvisorCollector()...)
	out.provider, out.run = p, p.Run
	out.api.Stats = p
	out.api.MetricsResource = metrics.HandlerFor(resource, metrics.HandlerOpts{})
	out.api.MetricsCadvisor = promhttp.HandlerFor(cadvisor, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return out, nil
}

// claimReader reads claims and their volumes (the node's envSource).
type claimReader interface {
	GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error)
}

// pvcVolumes lists the pods' claim-backed volumes whose PersistentVolume
// is a hostPath or local directory (the only kinds the volume manager
// mounts), for the stats provider's volume walk. A bound claim's path is
// remembered, so the walk asks the apiserver only about new claims.
func pvcVolumes(pods func() []*corev1.Pod, claims claimReader) func(context.Context) map[string][]stats.PVCVolume {
	var mu sync.Mutex
	paths := map[string]string{} // namespace/claim → path
	return func(ctx context.Context) map[string][]stats.PVCVolume {
		out := map[string][]stats.PVCVolume{}
		used := map[string]bool{}
		defer func() {
			mu.Lock()
			for k := range paths {
				if !used[k] {
					delete(paths, k)
				}
			}
			mu.Unlock()
		}()
		for _, pod := range pods() {
			for _, v := range pod.Spec.Volumes {
				var claim string
				switch {
				case v.PersistentVolumeClaim != nil:
					claim = v.PersistentVolumeClaim.ClaimName
				case v.Ephemeral != nil:
					claim = pod.Name + "-" + v.Name
				default:
					continue
				}
				key := pod.Namespace + "/" + claim
				used[key] = true
				mu.Lock()
				p, ok := paths[key]
				mu.Unlock()
				if !ok {
					pvc, err := claims.GetPersistentVolumeClaim(ctx, pod.Namespace, claim)
					if err != nil || pvc.Spec.VolumeName == "" {
						continue
					}
					pv, err := claims.GetPersistentVolume(ctx, pvc.Spec.VolumeName)
					if err != nil {
						continue
					}
					switch {
					case pv.Spec.HostPath != nil:
						p = pv.Spec.HostPath.Path
					case pv.Spec.Local != nil:
						p = pv.Spec.Local.Path
					default:
						continue
					}
					mu.Lock()
					paths[key] = p
					mu.Unlock()
				}
				out[string(pod.UID)] = append(out[string(pod.UID)], stats.PVCVolume{Name: v.Name, Namespace: pod.Namespace, Claim: claim, Path: p})
			}
		}
		return out
	}
}
