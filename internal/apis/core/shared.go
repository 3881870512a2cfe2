package core

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks below are the core rules other groups apply to core types
// they embed: RuntimeClass (overhead, tolerations), VolumeAttachment (an
// inline PersistentVolume spec), the resource.k8s.io kinds (node
// selectors), CSI driver names. Upstream's other groups call
// pkg/apis/core/validation for the same.

// ValidateTolerations checks tolerations as a pod's are checked.
func ValidateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	return validateTolerations(tolerations, fldPath)
}

// ValidateOverhead checks a pod overhead (a RuntimeClass's podFixed) as the
// limits of a container's resources: names and quantities.
func ValidateOverhead(overhead corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	return validateResourceRequirements(&corev1.ResourceRequirements{Limits: overhead}, validateContainerResourceName, nil, fldPath)
}

// ValidateNodeSelector checks a node selector (terms of label and field
// requirements) as a pod's required node affinity is checked.
func ValidateNodeSelector(ns *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	return validateNodeSelector(ns, false, fldPath)
}

// ValidateCSIDriverName checks the name of a CSI driver: a DNS subdomain
// (compared lower-case) of at most 63 characters.
func ValidateCSIDriverName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return validateCSIDriverName(name, fldPath)
}

// ValidateNodeName checks a node name (a DNS subdomain).
func ValidateNodeName(name string, fldPath *field.Path) field.ErrorList {
	return nameErrs(nameIsSubdomain, name, fldPath)
}

// ValidateLabelSelectorStrict checks a label selector, rejecting invalid
// label values.
func ValidateLabelSelectorStrict(sel *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fldPath)
}

// ValidateInlinePersistentVolumeSpec checks a PersistentVolume spec given
// inline (a VolumeAttachment's source.inlineVolumeSpec, from a pod's CSI
// migration): only a CSI source, no capacity, claim reference or node
// affinity, and a Retain reclaim policy if any.
func ValidateInlinePersistentVolumeSpec(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.ClaimRef != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("claimRef"), "may not be specified in the context of inline volumes"))
	}
	if len(spec.Capacity) != 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("capacity"), "may not be specified in the context of inline volumes"))
	}
	if spec.CSI == nil {
		errs = append(errs, field.Required(fldPath.Child("csi"), "has to be specified in the context of inline volumes"))
	}
	errs = append(errs, validateAccessModes(spec.AccessModes, "", fldPath.Child("accessModes"))...)
	if rp := spec.PersistentVolumeReclaimPolicy; rp != "" && rp != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may only be "+string(corev1.PersistentVolumeReclaimRetain)+" in the context of inline volumes"))
	}
	if spec.NodeAffinity != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("nodeAffinity"), "may not be specified in the context of inline volumes"))
	}
	kinds := persistentVolumeSourceKinds(&spec.PersistentVolumeSource)
	if len(kinds) == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a volume type"))
	} else {
		for _, extra := range kinds[1:] {
			errs = append(errs, field.Forbidden(fldPath.Child(extra), msgOneVolumeType))
		}
	}
	if csi := spec.CSI; csi != nil {
		p := fldPath.Child("csi")
		if csi.Driver == "" {
			errs = append(errs, field.Required(p.Child("driver"), ""))
		} else {
			errs = append(errs, validateCSIDriverName(csi.Driver, p.Child("driver"))...)
		}
		if csi.VolumeHandle == "" {
			errs = append(errs, field.Required(p.Child("volumeHandle"), ""))
		}
	}
	if spec.StorageClassName != "" {
		errs = append(errs, nameErrs(nameIsSubdomain, spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if vm := spec.VolumeMode; vm != nil && !supportedVolumeModes.Has(*vm) {
		errs = append(errs, field.NotSupported(fldPath.Child("volumeMode"), *vm, sets.List(supportedVolumeModes)))
	}
	return errs
}

// IsKubernetesSignerName reports whether signerName is reserved by the
// Kubernetes project (its domain is kubernetes.io or a subdomain).
func IsKubernetesSignerName(signerName string) bool {
	host, _, _ := strings.Cut(signerName, "/")
	return host == "kubernetes.io" || strings.HasSuffix(host, ".kubernetes.io")
}

// ValidateSignerName checks a signer name: "<domain>/<path>", the domain
// of at least two DNS labels (at most 253 characters), the path of DNS
// subdomains separated by dots, 571 characters in all.
func ValidateSignerName(fldPath *field.Path, signerName string) field.ErrorList {
	if signerName == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	segments := strings.Split(signerName, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(fldPath, signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if len(segments[0]) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(fldPath, "", validation.DNS1123SubdomainMaxLength))
	}
	domain := strings.Split(segments[0], ".")
	for _, l := range domain {
		if msgs := validation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(fldPath, segments[0], fmt.Sprintf("validating label %q: %s", l, m)))
			}
			break
		}
	}
	if len(domain) < 2 {
		errs = append(errs, field.Invalid(fldPath, segments[0], "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(segments[1], ".") {
		if msgs := validation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(fldPath, segments[1], fmt.Sprintf("validating label %q: %s", l, m)))
			}
			break
		}
	}
	maxLen := validation.DNS1123SubdomainMaxLength + validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 2
	if len(signerName) > maxLen {
		errs = append(errs, field.TooLong(fldPath, "", maxLen))
	}
	return errs
}

// ClusterTrustBundleNameFunc returns the name rule of a ClusterTrustBundle
// of signerName: with a signer, the name starts with the signer name
// (slashes turned to colons) and a colon; without, it has no colon. The
// rest is a DNS subdomain.
func ClusterTrustBundleNameFunc(signerName string) func(name string, prefix bool) []string {
	return func(name string, prefix bool) []string {
		if signerName == "" {
			if strings.Contains(name, ":") {
				return []string{"ClusterTrustBundle without signer name must not have \":\" in its name"}
			}
			return apivalidation.NameIsDNSSubdomain(name, prefix)
		}
		want := strings.ReplaceAll(signerName, "/", ":") + ":"
		if !strings.HasPrefix(name, want) {
			return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signerName, want)}
		}
		return apivalidation.NameIsDNSSubdomain(strings.TrimPrefix(name, want), prefix)
	}
}

// ValidateUserAnnotations checks annotations a pod author passes to a
// signer: domain-prefixed keys (any case), annotation size limits.
func ValidateUserAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k := range annotations {
		errs = append(errs, validation.IsDomainPrefixedKey(fldPath, strings.ToLower(k))...)
	}
	if err := apivalidation.ValidateAnnotationsSize(annotations); err != nil {
		errs = append(errs, field.TooLong(fldPath, "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return errs
}

// IsExtendedResourceName reports whether name is an extended resource: not
// in the kubernetes.io domain, not prefixed "requests.", and a qualified
// name once so prefixed.
func IsExtendedResourceName(name corev1.ResourceName) bool {
	return isExtendedResource(name)
}

// ValidateContainerResourceName checks a resource name a container may
// request: a standard one (cpu, memory, ephemeral-storage, hugepages-*)
// or a qualified extended resource.
func ValidateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	return validateContainerResourceName(name, fldPath)
}
