package scheduler

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Requests assumed for a container that asks for no cpu or memory, when
// scoring (not when filtering), as upstream: 0.1 core and 200 MiB.
const (
	defaultMilliCPURequest int64 = 100
	defaultMemoryRequest   int64 = 200 * 1024 * 1024
)

var nonZeroDefaults = corev1.ResourceList{
	corev1.ResourceCPU:    *resource.NewMilliQuantity(defaultMilliCPURequest, resource.DecimalSI),
	corev1.ResourceMemory: *resource.NewQuantity(defaultMemoryRequest, resource.DecimalSI),
}

// resources is a resource vector in the units the filters compare:
// millicores, bytes, and counts for everything else.
type resources struct {
	milliCPU  int64
	memory    int64
	ephemeral int64
	pods      int64
	scalar    map[corev1.ResourceName]int64
}

// isScalar reports whether name is counted in resources.scalar: extended
// resources, kubernetes.io-prefixed native ones, huge pages and attachable
// volumes.
func isScalar(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") || strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) ||
		strings.HasPrefix(s, corev1.ResourceAttachableVolumesPrefix)
}

func newResources(rl corev1.ResourceList) resources {
	var r resources
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.milliCPU = q.MilliValue()
		case corev1.ResourceMemory:
			r.memory = q.Value()
		case corev1.ResourceEphemeralStorage:
			r.ephemeral = q.Value()
		case corev1.ResourcePods:
			r.pods = q.Value()
		default:
			if isScalar(name) {
				if r.scalar == nil {
					r.scalar = map[corev1.ResourceName]int64{}
				}
				r.scalar[name] = q.Value()
			}
		}
	}
	return r
}

// add adds (sign 1) or subtracts (sign -1) o.
func (r *resources) add(o *resources, sign int64) {
	r.milliCPU += sign * o.milliCPU
	r.memory += sign * o.memory
	r.ephemeral += sign * o.ephemeral
	r.pods += sign * o.pods
	for name, v := range o.scalar {
		if r.scalar == nil {
			r.scalar = map[corev1.ResourceName]int64{}
		}
		r.scalar[name] += sign * v
	}
}

func (r resources) clone() resources {
	if r.scalar != nil {
		m := make(map[corev1.ResourceName]int64, len(r.scalar))
		for k, v := range r.scalar {
			m[k] = v
		}
		r.scalar = m
	}
	return r
}

// affinityTerm is a parsed pod (anti-)affinity term.
type affinityTerm struct {
	namespaces  sets.Set[string]
	nsSelector  labels.Selector
	selector    labels.Selector
	topologyKey string
}

// matches reports whether pod is selected by the term; nsLabels are the
// labels of pod's namespace (nil once namespace selectors were expanded
// into namespaces).
func (t *affinityTerm) matches(pod *corev1.Pod, nsLabels labels.Set) bool {
	if t.namespaces.Has(pod.Namespace) || t.nsSelector.Matches(nsLabels) {
		return t.selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

type weightedTerm struct {
	affinityTerm
	weight int32
}

func newAffinityTerm(pod *corev1.Pod, t *corev1.PodAffinityTerm) (affinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		return affinityTerm{}, fmt.Errorf("labelSelector: %w", err)
	}
	ns := sets.New(t.Namespaces...)
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		ns.Insert(pod.Namespace)
	}
	nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
	if err != nil {
		return affinityTerm{}, fmt.Errorf("namespaceSelector: %w", err)
	}
	return affinityTerm{namespaces: ns, nsSelector: nsSel, selector: sel, topologyKey: t.TopologyKey}, nil
}

// podInfo is what the scheduler derives from a pod once: its requests,
// host ports and parsed affinity terms. Immutable after newPodInfo.
type podInfo struct {
	pod      *corev1.Pod
	priority int32
	// req is what NodeResourcesFit checks (init containers, sidecars,
	// pod-level resources and overhead as upstream); req.pods is 1.
	req resources
	// nonZeroCPU and nonZeroMem are the requests with containers that ask
	// for nothing counted at the defaults, for LeastAllocated.
	nonZeroCPU, nonZeroMem int64
	ports                  []corev1.ContainerPort

	reqAffinity, reqAnti   []affinityTerm
	prefAffinity, prefAnti []weightedTerm
	// parseErr is set when an affinity term's selector does not parse.
	parseErr error
}

func newPodInfo(pod *corev1.Pod) *podInfo {
	pi := &podInfo{pod: pod, priority: corev1helpers.PodPriority(pod)}
	pi.req = newResources(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	pi.req.pods = 1
	nz := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: nonZeroDefaults})
	pi.nonZeroCPU = nz.Cpu().MilliValue()
	pi.nonZeroMem = nz.Memory().Value()
	pi.ports = hostPorts(pod)

	a := pod.Spec.Affinity
	if a == nil {
		return pi
	}
	var errs []error
	required := func(terms []corev1.PodAffinityTerm) []affinityTerm {
		var out []affinityTerm
		for i := range terms {
			t, err := newAffinityTerm(pod, &terms[i])
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, t)
		}
		return out
	}
	preferred := func(terms []corev1.WeightedPodAffinityTerm) []weightedTerm {
		var out []weightedTerm
		for i := range terms {
			if terms[i].Weight == 0 {
				continue
			}
			t, err := newAffinityTerm(pod, &terms[i].PodAffinityTerm)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, weightedTerm{affinityTerm: t, weight: terms[i].Weight})
		}
		return out
	}
	if pa := a.PodAffinity; pa != nil {
		pi.reqAffinity = required(pa.RequiredDuringSchedulingIgnoredDuringExecution)
		pi.prefAffinity = preferred(pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		pi.reqAnti = required(pa.RequiredDuringSchedulingIgnoredDuringExecution)
		pi.prefAnti = preferred(pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	pi.parseErr = errors.Join(errs...)
	return pi
}

// hasPodAffinity reports whether the pod has any pod affinity or
// anti-affinity (required or preferred); such pods are indexed per node.
func (pi *podInfo) hasPodAffinity() bool {
	a := pi.pod.Spec.Affinity
	return a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

// hostPorts lists the container ports with a host port, of the regular
// containers and of sidecars (restartable init containers), which run for
// the pod's whole life.
func hostPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				out = append(out, p)
			}
		}
	}
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if p.HostPort > 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

// usedPort is a host port taken on a node.
type usedPort struct {
	ip       string // "" means every address
	protocol corev1.Protocol
	port     int32
}

func newUsedPort(p corev1.ContainerPort) usedPort {
	u := usedPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
	if u.protocol == "" {
		u.protocol = corev1.ProtocolTCP
	}
	if u.ip == "0.0.0.0" || u.ip == "::" {
		u.ip = ""
	}
	return u
}

// conflicts reports whether two host ports cannot both be bound: same
// protocol and port, and the same address or either one on every address.
func (u usedPort) conflicts(o usedPort) bool {
	return u.port == o.port && u.protocol == o.protocol && (u.ip == "" || o.ip == "" || u.ip == o.ip)
}

// podKey is namespace/name.
func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
