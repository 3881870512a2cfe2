package agent

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/k1s/k1s/agent/admission"
	"github.com/k1s/k1s/agent/kuberuntime"
)

// AddAdmitHandler adds h to the checks every new pod passes before it is
// started (after the general predicates), as kubelet's admit handlers.
// Call it before Run.
func (a *Agent) AddAdmitHandler(h admission.Handler) {
	a.admitMu.Lock()
	defer a.admitMu.Unlock()
	a.admitHandlers = append(a.admitHandlers, h)
}

// admit decides once whether pod may start on this node, as kubelet's
// pod admission: a pod the runtime already has something of was admitted
// before (by this agent before a restart); any other is checked against
// the pods already admitted or created before it that are not finished.
// Verdicts are remembered; a refused pod is failed by the caller and
// never started.
func (a *Agent) admit(pod *corev1.Pod, rs *kuberuntime.PodStatus) admission.Result {
	a.admitMu.Lock()
	defer a.admitMu.Unlock()
	if a.admitted == nil {
		a.admitted, a.rejected = map[types.UID]bool{}, map[types.UID]bool{}
	}
	switch {
	case a.admitted[pod.UID]:
		return admission.Result{Admit: true}
	case len(rs.Sandboxes) > 0 || len(rs.Containers) > 0:
		a.admitted[pod.UID] = true
		return admission.Result{Admit: true}
	}
	var others []*corev1.Pod
	for _, o := range a.pods.Pods() {
		if o.UID == pod.UID || a.rejected[o.UID] {
			continue
		}
		if st, ok := a.statuses.GetPodStatus(o.UID); ok && (st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed) {
			continue
		}
		if o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed {
			continue
		}
		if a.admitted[o.UID] || o.CreationTimestamp.Before(&pod.CreationTimestamp) {
			others = append(others, o)
		}
	}
	general := admission.General{Node: func() *corev1.Node {
		if node, ok := a.nodeWatch.Node(); ok {
			return node
		}
		if a.deps.Checkpoint != nil {
			// Cut off from the apiserver: the Node last kept.
			if node, ok := a.deps.Checkpoint.Node(a.cfg.NodeName); ok {
				return node
			}
		}
		return nil
	}}
	r := admission.Chain(pod, others, append([]admission.Handler{general}, a.admitHandlers...)...)
	if r.Admit {
		a.admitted[pod.UID] = true
	} else {
		a.rejected[pod.UID] = true
	}
	return r
}

// forgetAdmission drops the verdict on a pod the agent no longer runs.
func (a *Agent) forgetAdmission(uid types.UID) {
	a.admitMu.Lock()
	defer a.admitMu.Unlock()
	delete(a.admitted, uid)
	delete(a.rejected, uid)
}
