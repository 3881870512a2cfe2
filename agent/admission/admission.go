// Package admission decides, as kubelet's pod admission does, whether a
// pod bound to this node may start here: the general predicates of
// upstream's predicateAdmitHandler (resources against the node's
// allocatable, host ports, node name, required node affinity and
// selector, NoExecute taints) and any other handler the agent adds (the
// eviction manager's pressure rule). A pod refused is never started: the
// agent fails it with the handler's reason and "Pod was rejected: …".
package admission

import (
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Result is a handler's verdict. Reason is a CamelCase word (the event
// reason and the pod's status reason), Message says why.
type Result struct {
	Admit   bool
	Reason  string
	Message string
}

// Handler admits or refuses pod, given the pods already admitted to the
// node that are not finished (pod itself is not among them).
type Handler interface {
	Admit(pod *corev1.Pod, others []*corev1.Pod) Result
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(pod *corev1.Pod, others []*corev1.Pod) Result

// Admit calls f.
func (f HandlerFunc) Admit(pod *corev1.Pod, others []*corev1.Pod) Result { return f(pod, others) }

// Chain runs handlers in order; the first refusal is the verdict.
func Chain(pod *corev1.Pod, others []*corev1.Pod, handlers ...Handler) Result {
	for _, h := range handlers {
		if h == nil {
			continue
		}
		if r := h.Admit(pod, others); !r.Admit {
			return r
		}
	}
	return Result{Admit: true}
}

// Predicate names and reasons, upstream's (the scheduler plugins' names
// and messages, as kubelet reports them).
const (
	nodeAffinityName   = "NodeAffinity"
	nodeAffinityReason = "node(s) didn't match Pod's node affinity/selector"
	nodeNameName       = "NodeName"
	nodeNameReason     = "node(s) didn't match the requested node name"
	nodePortsName      = "NodePorts"
	nodePortsReason    = "node(s) didn't have free ports for the requested pod ports"
	taintName          = "TaintToleration"
	taintReason        = "node(s) had taints that the pod didn't tolerate"
)

// General is kubelet's general predicate check against the node Node
// returns; a nil node admits everything (the node is not known yet).
type General struct {
	Node func() *corev1.Node
}

// Admit applies the predicates in upstream's order and reports the first
// failure.
func (g General) Admit(pod *corev1.Pod, others []*corev1.Pod) Result {
	var node *corev1.Node
	if g.Node != nil {
		node = g.Node()
	}
	if node == nil {
		return Result{Admit: true}
	}
	if r, ok := fits(pod, others, node.Status.Allocatable); !ok {
		return r
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return predicateFailed(nodeAffinityName, nodeAffinityReason)
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return predicateFailed(nodeNameName, nodeNameReason)
	}
	if !portsFree(pod, others) {
		return predicateFailed(nodePortsName, nodePortsReason)
	}
	if !isStatic(pod) {
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
			func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }, false)
		if untolerated {
			return predicateFailed(taintName, taintReason)
		}
	}
	return Result{Admit: true}
}

func predicateFailed(name, desc string) Result {
	return Result{Reason: name, Message: fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// isStatic reports a pod from the static pod directory (the agent's
// source annotation, kubelet's kubernetes.io/config.source).
func isStatic(pod *corev1.Pod) bool {
	return pod.Annotations["kubernetes.io/config.source"] == "file"
}

// fits checks pod's requests, with those of others, against allocatable:
// the pod count, CPU, memory, ephemeral storage and every other resource
// the pod requests, as the scheduler's NodeResourcesFit. The reason of a
// shortage is kubelet's: OutOfcpu, OutOfmemory, OutOfephemeral-storage,
// OutOfpods, OutOf<name>.
func fits(pod *corev1.Pod, others []*corev1.Pod, allocatable corev1.ResourceList) (Result, bool) {
	if len(allocatable) == 0 {
		return Result{Admit: true}, true
	}
	if max, ok := allocatable[corev1.ResourcePods]; ok && int64(len(others)+1) > max.Value() {
		return insufficient(corev1.ResourcePods, 1, int64(len(others)), max.Value()), false
	}
	want := requests(pod)
	if len(want) == 0 {
		return Result{Admit: true}, true
	}
	used := corev1.ResourceList{}
	for _, o := range others {
		for name, q := range requests(o) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	for _, name := range orderedNames(want) {
		q := want[name]
		if q.IsZero() {
			continue
		}
		have, listed := allocatable[name]
		if !listed && !countsWhenAbsent(name) {
			continue
		}
		u := used[name]
		if value(name, q) > value(name, have)-value(name, u) {
			return insufficient(name, value(name, q), value(name, u), value(name, have)), false
		}
	}
	return Result{Admit: true}, true
}

// countsWhenAbsent: a request of an extended resource or huge pages the
// node does not offer cannot fit; CPU, memory and ephemeral storage the
// node does not report are not checked.
func countsWhenAbsent(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return false
	}
	return true
}

func orderedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := []corev1.ResourceName{}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if _, ok := l[n]; ok {
			out = append(out, n)
		}
	}
	var rest []corev1.ResourceName
	for n := range l {
		if n != corev1.ResourceCPU && n != corev1.ResourceMemory && n != corev1.ResourceEphemeralStorage {
			rest = append(rest, n)
		}
	}
	sortNames(rest)
	return append(out, rest...)
}

func sortNames(ns []corev1.ResourceName) {
	for i := 1; i < len(ns); i++ {
		for j := i; j > 0 && ns[j] < ns[j-1]; j-- {
			ns[j], ns[j-1] = ns[j-1], ns[j]
		}
	}
}

// value is a quantity as the scheduler counts it: millicores for CPU,
// whole units otherwise.
func value(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func requests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

func insufficient(name corev1.ResourceName, requested, used, capacity int64) Result {
	return Result{
		Reason:  "OutOf" + string(name),
		Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity),
	}
}

// portsFree reports whether none of pod's host ports is taken by others,
// as the scheduler's NodePorts: same protocol and port, and the same host
// IP or either one the wildcard.
func portsFree(pod *corev1.Pod, others []*corev1.Pod) bool {
	want := hostPorts(pod)
	if len(want) == 0 {
		return true
	}
	for _, o := range others {
		for _, have := range hostPorts(o) {
			for _, w := range want {
				if w.conflicts(have) {
					return false
				}
			}
		}
	}
	return true
}

type hostPort struct {
	ip       string
	protocol corev1.Protocol
	port     int32
}

func (p hostPort) conflicts(q hostPort) bool {
	if p.port != q.port || p.protocol != q.protocol {
		return false
	}
	return p.ip == q.ip || isWildcard(p.ip) || isWildcard(q.ip)
}

func isWildcard(ip string) bool {
	parsed := net.ParseIP(ip)
	return ip == "" || (parsed != nil && parsed.IsUnspecified())
}

func hostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []corev1.Container) {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort <= 0 {
					continue
				}
				proto := p.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				ip := p.HostIP
				if isWildcard(ip) {
					ip = "0.0.0.0"
				}
				out = append(out, hostPort{ip: ip, protocol: proto, port: p.HostPort})
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	return out
}
