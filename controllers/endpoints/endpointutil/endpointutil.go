// Package endpointutil holds what the Endpoints and EndpointSlice
// controllers share: which pods back a Service and how, the mapping of pod
// events to the Services that select the pod, and the tracker of the
// endpoints.kubernetes.io/last-change-trigger-time annotation.
package endpointutil

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	netutils "k8s.io/utils/net"
)

// ShouldPodBeInEndpoints reports whether pod is an endpoint of the
// Services selecting it at all (ready or not): it has an IP, it is not
// being deleted unless includeTerminating, and it has not finished for
// good (a Succeeded or Failed pod that its restart policy will not
// restart).
func ShouldPodBeInEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	if !includeTerminating && pod.DeletionTimestamp != nil {
		return false
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
	case corev1.RestartPolicyOnFailure:
		return pod.Status.Phase != corev1.PodSucceeded
	}
	return true
}

// IsPodReady reports whether the pod's Ready condition is True.
func IsPodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ShouldSetHostname reports whether the pod's hostname is published in the
// Service's endpoints: the pod names a hostname and the Service (in its
// namespace) as its subdomain.
func ShouldSetHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace
}

// FindPort resolves a Service port's targetPort on pod: a number is used
// as is; a name is looked up among the ports of the pod's containers and
// restartable (sidecar) init containers with the Service port's protocol.
func FindPort(pod *corev1.Pod, port *corev1.ServicePort) (int, error) {
	target := port.TargetPort
	switch target.Type {
	case intstr.Int:
		if target.IntVal == 0 {
			// Unset target ports default to the port itself.
			return int(port.Port), nil
		}
		return target.IntValue(), nil
	case intstr.String:
		if target.StrVal == "" {
			return int(port.Port), nil
		}
		protocol := port.Protocol
		if protocol == "" {
			protocol = corev1.ProtocolTCP
		}
		match := func(containers []corev1.Container, sidecarsOnly bool) (int, bool) {
			for _, c := range containers {
				if sidecarsOnly && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
					continue
				}
				for _, p := range c.Ports {
					proto := p.Protocol
					if proto == "" {
						proto = corev1.ProtocolTCP
					}
					if p.Name == target.StrVal && proto == protocol {
						return int(p.ContainerPort), true
					}
				}
			}
			return 0, false
		}
		if n, ok := match(pod.Spec.Containers, false); ok {
			return n, nil
		}
		if n, ok := match(pod.Spec.InitContainers, true); ok {
			return n, nil
		}
	}
	return 0, fmt.Errorf("no port named %q for protocol %s on pod %s/%s", target.String(), port.Protocol, pod.Namespace, pod.Name)
}

// ServiceFamily is the IP family whose addresses the Endpoints of svc
// hold: its first (primary) family, else the family of its cluster IP,
// else fallbackIP's.
func ServiceFamily(svc *corev1.Service, fallbackIP string) corev1.IPFamily {
	switch {
	case len(svc.Spec.IPFamilies) > 0:
		return svc.Spec.IPFamilies[0]
	case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone:
		if netutils.IsIPv6String(svc.Spec.ClusterIP) {
			return corev1.IPv6Protocol
		}
	case netutils.IsIPv6String(fallbackIP):
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// PodIP returns the pod's first IP of the family, normalized, or "".
func PodIP(pod *corev1.Pod, family corev1.IPFamily) string {
	ips := pod.Status.PodIPs
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []corev1.PodIP{{IP: pod.Status.PodIP}}
	}
	for _, p := range ips {
		ip := netutils.ParseIPSloppy(p.IP)
		if ip == nil {
			continue
		}
		if (ip.To4() == nil) == (family == corev1.IPv6Protocol) {
			return ip.String()
		}
	}
	return ""
}

// IsServiceIPSet reports whether svc has a cluster IP (is not headless).
func IsServiceIPSet(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != ""
}

// podEndpointChanged reports whether an update of a pod can change the
// endpoints it backs (labels aside).
func podEndpointChanged(old, cur *corev1.Pod) bool {
	if (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		IsPodReady(old) != IsPodReady(cur) ||
		old.Status.PodIP != cur.Status.PodIP || !slices.Equal(old.Status.PodIPs, cur.Status.PodIPs) ||
		old.Status.Phase != cur.Status.Phase ||
		old.Spec.NodeName != cur.Spec.NodeName ||
		old.Spec.Hostname != cur.Spec.Hostname || old.Spec.Subdomain != cur.Spec.Subdomain {
		return true
	}
	// Ready conditions that flip and back between two events still move
	// the trigger time.
	return readyTransition(old) != readyTransition(cur)
}

func readyTransition(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// PodHandler returns informer handlers that call enqueue with the key of
// every Service in the pod's namespace whose selector matched the pod
// before or after the event, when the event can change its endpoints.
func PodHandler(services corelisters.ServiceLister, enqueue func(key string)) cache.ResourceEventHandlerFuncs {
	enqueueFor := func(pod *corev1.Pod, extra map[string]string) {
		svcs, err := services.Services(pod.Namespace).List(labels.Everything())
		if err != nil {
			return
		}
		for _, svc := range svcs {
			if svc.Spec.Selector == nil {
				continue
			}
			sel := labels.Set(svc.Spec.Selector).AsSelectorPreValidated()
			if sel.Matches(labels.Set(pod.Labels)) || (extra != nil && sel.Matches(labels.Set(extra))) {
				enqueue(svc.Namespace + "/" + svc.Name)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				enqueueFor(pod, nil)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.Pod)
			cur, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
				return
			}
			if !maps.Equal(old.Labels, cur.Labels) {
				enqueueFor(cur, old.Labels)
				return
			}
			if podEndpointChanged(old, cur) || portsChanged(old, cur) {
				enqueueFor(cur, nil)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				enqueueFor(pod, nil)
			}
		},
	}
}

func portsChanged(old, cur *corev1.Pod) bool {
	ports := func(p *corev1.Pod) []corev1.ContainerPort {
		var out []corev1.ContainerPort
		for _, c := range p.Spec.Containers {
			out = append(out, c.Ports...)
		}
		for _, c := range p.Spec.InitContainers {
			out = append(out, c.Ports...)
		}
		return out
	}
	return !slices.Equal(ports(old), ports(cur))
}

// TriggerTimeTracker computes the endpoints.kubernetes.io/
// last-change-trigger-time of a Service's endpoints: the earliest time of
// the changes since the previous computation, where a pod's time is its
// Ready condition's last transition (else its creation) and the Service's
// is its creation. Safe for concurrent use.
type TriggerTimeTracker struct {
	mu     sync.Mutex
	states map[string]triggerState
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time
}

// NewTriggerTimeTracker returns an empty tracker.
func NewTriggerTimeTracker() *TriggerTimeTracker {
	return &TriggerTimeTracker{states: map[string]triggerState{}}
}

// Compute returns the trigger time for svc backed by pods and remembers
// their state; the zero time means nothing changed.
func (t *TriggerTimeTracker) Compute(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	key := svc.Namespace + "/" + svc.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, known := t.states[key]
	next := triggerState{service: svc.CreationTimestamp.Time, pods: make(map[string]time.Time, len(pods))}
	var earliest time.Time
	consider := func(ts time.Time) {
		if earliest.IsZero() || ts.Before(earliest) {
			earliest = ts
		}
	}
	for _, pod := range pods {
		ts := readyTransition(pod)
		if ts.IsZero() {
			ts = pod.CreationTimestamp.Time
		}
		next.pods[pod.Name] = ts
		if was, ok := prev.pods[pod.Name]; !ok || !was.Equal(ts) {
			consider(ts)
		}
	}
	if !known || !prev.service.Equal(next.service) {
		consider(next.service)
	}
	t.states[key] = next
	return earliest
}

// Delete forgets the Service namespace/name.
func (t *TriggerTimeTracker) Delete(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, namespace+"/"+name)
}
