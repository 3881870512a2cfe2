// Package nodeautonomy names the Node marker of k1s's edge autonomy and
// the node-lifecycle taints that autonomy exempts from eviction. The agent
// sets the marker (k1s agent --edge-autonomy); the node-lifecycle
// controllers read it. It lives below both so neither imports the other.
//
// The marker is the annotation node.k1s.io/autonomy="true" (OpenYurt's
// equivalent is node.beta.openyurt.io/autonomy). A label of the same key
// and value mirrors it for selectors (kubectl get nodes -l ...); only the
// annotation decides.
package nodeautonomy

import corev1 "k8s.io/api/core/v1"

const (
	// Annotation marks a Node autonomous when its value is "true".
	Annotation = "node.k1s.io/autonomy"
	// Label mirrors Annotation for label selectors; it decides nothing.
	Label = Annotation
	// Value is the marker's value.
	Value = "true"
)

// IsAutonomous reports whether node carries the autonomy annotation with
// the value "true". A nil node is not autonomous.
func IsAutonomous(node *corev1.Node) bool {
	return node != nil && node.Annotations[Annotation] == Value
}

// ExemptTaint reports whether an autonomous node's taint t must not evict
// its pods: the NoExecute taints the node-lifecycle controller applies when
// the node's Ready condition is Unknown (unreachable) or False (not-ready).
// Any other NoExecute taint (an operator's, out-of-service) still evicts.
func ExemptTaint(t corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoExecute &&
		(t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady)
}

// EvictingTaints returns the taints of node that evict its pods: all of
// taints when node is not autonomous, else taints less the exempt ones.
// taints is not modified.
func EvictingTaints(node *corev1.Node, taints []corev1.Taint) []corev1.Taint {
	if !IsAutonomous(node) {
		return taints
	}
	var out []corev1.Taint
	for _, t := range taints {
		if !ExemptTaint(t) {
			out = append(out, t)
		}
	}
	return out
}
