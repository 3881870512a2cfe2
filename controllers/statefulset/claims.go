package statefulset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

const (
	retain = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	remove = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
)

// retentionPolicy is set's PVC retention policy, Retain/Retain if unset.
func retentionPolicy(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: retain, WhenScaled: retain}
	if rp := set.Spec.PersistentVolumeClaimRetentionPolicy; rp != nil {
		if rp.WhenDeleted != "" {
			p.WhenDeleted = rp.WhenDeleted
		}
		if rp.WhenScaled != "" {
			p.WhenScaled = rp.WhenScaled
		}
	}
	return p
}

// refersTo reports whether ref names obj as an object of gvk (any UID).
func refersTo(ref *metav1.OwnerReference, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	return ref.APIVersion == gvk.GroupVersion().String() && ref.Kind == gvk.Kind && ref.Name == obj.GetName()
}

// hasOwnerRef reports whether target has an owner reference with owner's
// UID.
func hasOwnerRef(target, owner metav1.Object) bool {
	for _, ref := range target.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

// hasStaleOwnerRef reports whether claim refers to obj's name and kind but
// another UID: an earlier object of the same name.
func hasStaleOwnerRef(claim *corev1.PersistentVolumeClaim, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	for i := range claim.OwnerReferences {
		if refersTo(&claim.OwnerReferences[i], obj, gvk) {
			return claim.OwnerReferences[i].UID != obj.GetUID()
		}
	}
	return false
}

// hasUnexpectedController reports whether, under a policy that deletes
// claims, claim is controlled by something other than set and pod (or by
// an earlier set or pod of the same name).
func hasUnexpectedController(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	p := retentionPolicy(set)
	if p.WhenScaled == retain && p.WhenDeleted == retain {
		return false
	}
	for i := range claim.OwnerReferences {
		ref := &claim.OwnerReferences[i]
		switch {
		case refersTo(ref, set, controllerKind):
			if ref.UID != set.UID {
				return true
			}
		case refersTo(ref, pod, podKind):
			if ref.UID != pod.UID {
				return true
			}
		case ref.Controller != nil && *ref.Controller:
			return true
		}
	}
	return false
}

// hasNonControllerOwner reports whether set or pod owns claim without
// being marked its controller.
func hasNonControllerOwner(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	for _, ref := range claim.OwnerReferences {
		if (ref.UID == set.UID || ref.UID == pod.UID) && (ref.Controller == nil || !*ref.Controller) {
			return true
		}
	}
	return false
}

// claimOwnerUpToDate reports whether claim's owner references follow
// set's retention policy for pod:
//
//	Retain on scale-down and deletion: neither set nor pod owns it;
//	Retain on scale-down, Delete on deletion: only the set;
//	Delete on scale-down, Retain on deletion: the pod once scaled away;
//	Delete on both: the set, or the pod once scaled away.
//
// Claims still referring to an earlier set or pod of the same name are
// left alone (reported up to date), as are claims another controller owns
// unless set or pod also refer to them.
func claimOwnerUpToDate(logger klog.Logger, claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	if hasStaleOwnerRef(claim, set, controllerKind) || hasStaleOwnerRef(claim, pod, podKind) {
		return true
	}
	if hasUnexpectedController(claim, set, pod) {
		return !hasOwnerRef(claim, set) && !hasOwnerRef(claim, pod)
	}
	if hasNonControllerOwner(claim, set, pod) {
		return false
	}
	p := retentionPolicy(set)
	scaledDown := !inOrdinalRange(pod, set)
	setOwns, podOwns := hasOwnerRef(claim, set), hasOwnerRef(claim, pod)
	switch {
	case p.WhenScaled == retain && p.WhenDeleted == remove:
		return setOwns && !podOwns
	case p.WhenScaled == remove && p.WhenDeleted == retain:
		return !setOwns && scaledDown == podOwns
	case p.WhenScaled == remove && p.WhenDeleted == remove:
		return scaledDown != setOwns && scaledDown == podOwns
	case p.WhenScaled == retain && p.WhenDeleted == retain:
	default:
		logger.Error(nil, "Unknown PVC retention policy, treating it as Retain", "statefulSet", klog.KObj(set), "policy", p)
	}
	return !setOwns && !podOwns
}

// setClaimOwnerRefs rewrites claim's owner references to follow set's
// retention policy for pod (see claimOwnerUpToDate). Under another
// controller, set's and pod's references are only removed.
func setClaimOwnerRefs(logger klog.Logger, claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) {
	unexpected := hasUnexpectedController(claim, set, pod)
	refs := make([]metav1.OwnerReference, 0, len(claim.OwnerReferences)+1)
	for i := range claim.OwnerReferences {
		ref := &claim.OwnerReferences[i]
		if refersTo(ref, set, controllerKind) || refersTo(ref, pod, podKind) {
			continue
		}
		refs = append(refs, *ref)
	}
	if !unexpected {
		p := retentionPolicy(set)
		scaledDown := !inOrdinalRange(pod, set)
		switch {
		case p.WhenScaled == retain && p.WhenDeleted == remove:
			refs = addControllerRef(refs, set, controllerKind)
		case p.WhenScaled == remove && p.WhenDeleted == retain:
			if scaledDown {
				refs = addControllerRef(refs, pod, podKind)
			}
		case p.WhenScaled == remove && p.WhenDeleted == remove:
			if scaledDown {
				refs = addControllerRef(refs, pod, podKind)
			} else {
				refs = addControllerRef(refs, set, controllerKind)
			}
		case p.WhenScaled == retain && p.WhenDeleted == retain:
		default:
			logger.Error(nil, "Unknown PVC retention policy, treating it as Retain", "statefulSet", klog.KObj(set), "policy", p)
		}
	}
	claim.OwnerReferences = refs
}

func addControllerRef(refs []metav1.OwnerReference, owner metav1.Object, gvk schema.GroupVersionKind) []metav1.OwnerReference {
	for _, r := range refs {
		if r.UID == owner.GetUID() {
			return refs
		}
	}
	return append(refs, *metav1.NewControllerRef(owner, gvk))
}
