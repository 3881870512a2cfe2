package storage

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// maxParameterCount bounds the number of StorageClass parameters.
	maxParameterCount = 512
	// maxParameterBytes bounds the summed size of parameter keys and values.
	maxParameterBytes = 256 * 1024
)

// ValidateStorageClass validates a StorageClass on create. The provisioner is
// required and must be a qualified name (compared case-insensitively).
func ValidateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	errs := validateObjectMeta(&sc.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validateProvisioner(sc.Provisioner, field.NewPath("provisioner"))...)
	errs = append(errs, validateParameters(sc.Parameters, field.NewPath("parameters"))...)
	errs = append(errs, validateReclaimPolicy(sc.ReclaimPolicy, field.NewPath("reclaimPolicy"))...)
	errs = append(errs, validateVolumeBindingMode(sc.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
	return append(errs, validateAllowedTopologies(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
}

// ValidateStorageClassUpdate validates an update of a StorageClass:
// parameters, provisioner, reclaimPolicy and volumeBindingMode are immutable.
// Only metadata, mountOptions, allowVolumeExpansion and allowedTopologies may
// change.
func ValidateStorageClassUpdate(sc, old *storagev1.StorageClass) field.ErrorList {
	errs := validateObjectMetaUpdate(&sc.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(sc.Parameters, old.Parameters, field.NewPath("parameters"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(sc.Provisioner, old.Provisioner, field.NewPath("provisioner"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(sc.ReclaimPolicy, old.ReclaimPolicy, field.NewPath("reclaimPolicy"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}

func validateProvisioner(provisioner string, p *field.Path) field.ErrorList {
	if provisioner == "" {
		return field.ErrorList{field.Required(p, provisioner)}
	}
	var errs field.ErrorList
	lower := strings.ToLower(provisioner)
	for _, msg := range validation.IsQualifiedName(lower) {
		errs = append(errs, field.Invalid(p, lower, msg))
	}
	return errs
}

func validateParameters(params map[string]string, p *field.Path) field.ErrorList {
	if len(params) > maxParameterCount {
		return field.ErrorList{field.TooLong(p, "", maxParameterCount)}
	}
	var errs field.ErrorList
	total := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(p, k, "field can not be empty."))
		}
		total += len(k) + len(v)
	}
	if total > maxParameterBytes {
		errs = append(errs, field.TooLong(p, "", maxParameterBytes))
	}
	return errs
}

func validateReclaimPolicy(policy *corev1.PersistentVolumeReclaimPolicy, p *field.Path) field.ErrorList {
	if policy == nil || *policy == "" {
		return nil
	}
	switch *policy {
	case corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, *policy, []string{
		string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRetain),
	})}
}

func validateVolumeBindingMode(mode *storagev1.VolumeBindingMode, p *field.Path) field.ErrorList {
	if mode == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	switch *mode {
	case storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, *mode, []string{
		string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer),
	})}
}

// validateAllowedTopologies checks every term's label requirements and
// rejects two terms that select exactly the same key/value sets.
func validateAllowedTopologies(terms []corev1.TopologySelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make([]map[string]map[string]bool, 0, len(terms))
	for i, term := range terms {
		tp := p.Index(i)
		exprs := make(map[string]map[string]bool)
		for j, req := range term.MatchLabelExpressions {
			rp := tp.Child("matchLabelExpressions").Index(j)
			values := make(map[string]bool)
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(rp.Child("values"), ""))
			}
			for k, v := range req.Values {
				if values[v] {
					errs = append(errs, field.Duplicate(rp.Child("values").Index(k), v))
				}
				values[v] = true
			}
			errs = append(errs, metav1validation.ValidateLabelName(req.Key, rp.Child("key"))...)
			if _, dup := exprs[req.Key]; dup {
				errs = append(errs, field.Duplicate(rp.Child("key"), req.Key))
			}
			exprs[req.Key] = values
		}
		for _, prev := range seen {
			if reflect.DeepEqual(prev, exprs) {
				errs = append(errs, field.Duplicate(tp.Child("matchLabelExpressions"), ""))
			}
		}
		seen = append(seen, exprs)
	}
	return errs
}
