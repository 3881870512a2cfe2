package daemonset

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// TemplateGenerationLabel is the pod label that recorded a DaemonSet's
// template generation before revisions existed; a pod carrying the value of
// the deprecated.daemonset.template.generation annotation counts as
// updated.
const TemplateGenerationLabel = "pod-template-generation"

// daemonTolerations are the tolerations every daemon pod gets, so that node
// problems neither keep it off a node nor evict it: not-ready and
// unreachable NoExecute without tolerationSeconds, and the NoSchedule
// condition taints. network-unavailable only for host-network pods, which
// need no pod network.
func daemonTolerations(hostNetwork bool) []corev1.Toleration {
	t := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		t = append(t, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return t
}

// addDaemonTolerations adds daemonTolerations to spec. A toleration of the
// spec with the same key, operator, value and effect is replaced by the
// daemon one (so a tolerationSeconds on it is dropped), as upstream does.
func addDaemonTolerations(spec *corev1.PodSpec) {
	for _, add := range daemonTolerations(spec.HostNetwork) {
		replaced := false
		out := make([]corev1.Toleration, 0, len(spec.Tolerations)+1)
		for _, t := range spec.Tolerations {
			if add.MatchToleration(&t) {
				out = append(out, add)
				replaced = true
				continue
			}
			out = append(out, t)
		}
		if !replaced {
			out = append(out, add)
		}
		spec.Tolerations = out
	}
}

// placement is what decides where a DaemonSet's pods belong; build it
// once per sync with newPlacement and check each node with it.
type placement struct {
	nodeName    string
	tolerations []corev1.Toleration
	affinity    nodeaffinity.RequiredNodeAffinity
}

func newPlacement(ds *appsv1.DaemonSet) placement {
	spec := ds.Spec.Template.Spec.DeepCopy()
	addDaemonTolerations(spec)
	return placement{
		nodeName:    spec.NodeName,
		tolerations: spec.Tolerations,
		affinity:    nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity),
	}
}

// check reports whether a daemon pod should be started on node
// (shouldRun) and whether one already there may stay (shouldContinue):
// the template's nodeName, nodeSelector and required node affinity must
// match; an untolerated NoSchedule or NoExecute taint keeps new pods off,
// and only an untolerated NoExecute taint drives running ones away. An
// affinity that does not parse matches no node.
func (p placement) check(logger klog.Logger, node *corev1.Node) (shouldRun, shouldContinue bool) {
	if p.nodeName != "" && p.nodeName != node.Name {
		return false, false
	}
	if fits, _ := p.affinity.Match(node); !fits {
		return false, false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, p.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if !untolerated {
		return true, true
	}
	_, evicting := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, p.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return false, !evicting
}

// NodeShouldRunDaemonPod reports for node and ds whether a daemon pod
// should be started there and whether a running one may stay, with the
// daemon tolerations added to the template's (see package doc).
func NodeShouldRunDaemonPod(logger klog.Logger, node *corev1.Node, ds *appsv1.DaemonSet) (shouldRun, shouldContinueRunning bool) {
	return newPlacement(ds).check(logger, node)
}

// templateGeneration parses the deprecated template generation annotation;
// nil when it is absent or not a number.
func templateGeneration(ds *appsv1.DaemonSet) *int64 {
	v, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	if !ok {
		return nil
	}
	g, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &g
}

// podTemplate is the template of ds's pods at revision hash: the daemon
// tolerations added, labelled with the revision hash (and the template
// generation when the deprecated annotation has one).
func podTemplate(ds *appsv1.DaemonSet, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if g := templateGeneration(ds); g != nil {
		t.Labels[TemplateGenerationLabel] = strconv.FormatInt(*g, 10)
	}
	if hash != "" {
		t.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	}
	return t
}

// isPodUpdated reports whether pod belongs to the revision hash, or to
// the template generation gen.
func isPodUpdated(pod *corev1.Pod, hash string, gen *int64) bool {
	if hash != "" && pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
		return true
	}
	return gen != nil && pod.Labels[TemplateGenerationLabel] == strconv.FormatInt(*gen, 10)
}

// bindToNode makes affinity require the node named nodeName, through a
// metadata.name field requirement that replaces any required node
// selector terms (the DaemonSet only picks nodes those terms match). The
// scheduler then places the pod there, honouring resources and ports.
func bindToNode(affinity *corev1.Affinity, nodeName string) *corev1.Affinity {
	required := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{
			Key:      metav1.ObjectNameField,
			Operator: corev1.NodeSelectorOpIn,
			Values:   []string{nodeName},
		}},
	}}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = required
	return affinity
}

// targetNode is the node a daemon pod belongs to: its spec.nodeName once
// bound, else the metadata.name requirement of its required node
// affinity.
func targetNode(pod *corev1.Pod) (string, error) {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName, nil
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", fmt.Errorf("pod %s/%s has no required node affinity", pod.Namespace, pod.Name)
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, req := range term.MatchFields {
			if req.Key != metav1.ObjectNameField || req.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			if len(req.Values) != 1 {
				return "", fmt.Errorf("pod %s/%s: %s requirement names %d nodes, want 1", pod.Namespace, pod.Name, metav1.ObjectNameField, len(req.Values))
			}
			return req.Values[0], nil
		}
	}
	return "", fmt.Errorf("pod %s/%s names no node", pod.Namespace, pod.Name)
}
