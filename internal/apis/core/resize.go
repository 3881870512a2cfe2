package core

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubectl/pkg/util/qos"
)

// ValidatePodResize validates an update through the pods/resize
// subresource, as upstream's: the pod as a whole, only cpu and memory
// requests and limits (and resize policies) of its containers and
// sidecars changed, no request or limit removed, and the QoS class kept.
func ValidatePodResize(newPod, oldPod *corev1.Pod) field.ErrorList {
	errs := validateMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validatePodMetaAndSpec(newPod)...)
	specPath := field.NewPath("spec")
	if len(newPod.Spec.Containers) != len(oldPod.Spec.Containers) || len(newPod.Spec.InitContainers) != len(oldPod.Spec.InitContainers) {
		return append(errs, field.Forbidden(specPath, "pod resize may not add or remove containers"))
	}
	if qos.GetPodQOS(newPod) != qos.GetPodQOS(oldPod) {
		errs = append(errs, field.Invalid(specPath, newPod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	for i := range newPod.Spec.Containers {
		errs = append(errs, validateContainerResize(&newPod.Spec.Containers[i], &oldPod.Spec.Containers[i], specPath.Child("containers").Index(i))...)
	}
	for i := range newPod.Spec.InitContainers {
		c, old := &newPod.Spec.InitContainers[i], &oldPod.Spec.InitContainers[i]
		p := specPath.Child("initContainers").Index(i)
		sidecar := old.RestartPolicy != nil && *old.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if !sidecar && !equality.Semantic.DeepEqual(c.Resources, old.Resources) {
			errs = append(errs, field.Forbidden(p.Child("resources"), "resources for non-sidecar init containers are immutable"))
			continue
		}
		errs = append(errs, validateContainerResize(c, old, p)...)
	}
	return errs
}

// validateContainerResize checks one container's resize: only cpu and
// memory change, and no request or limit that was set goes away.
func validateContainerResize(c, old *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name     string
		new, old corev1.ResourceList
	}{{"requests", c.Resources.Requests, old.Resources.Requests}, {"limits", c.Resources.Limits, old.Resources.Limits}} {
		lp := p.Child("resources", list.name)
		for name, q := range list.old {
			nq, ok := list.new[name]
			switch {
			case !ok:
				errs = append(errs, field.Forbidden(lp.Key(string(name)), fmt.Sprintf("resource %s may not be removed", list.name)))
			case name != corev1.ResourceCPU && name != corev1.ResourceMemory && !nq.Equal(q):
				errs = append(errs, field.Forbidden(lp.Key(string(name)), "only cpu and memory resources are mutable"))
			}
		}
		for name := range list.new {
			if _, had := list.old[name]; !had && name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				errs = append(errs, field.Forbidden(lp.Key(string(name)), "only cpu and memory resources are mutable"))
			}
		}
	}
	return errs
}
