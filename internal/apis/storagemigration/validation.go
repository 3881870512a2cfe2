package storagemigration

import (
	"fmt"
	"strings"

	svmv1 "k8s.io/api/storagemigration/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateStorageVersionMigration validates a StorageVersionMigration on create.
func ValidateStorageVersionMigration(m *svmv1.StorageVersionMigration) field.ErrorList {
	errs := validateObjectMeta(&m.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	rp := field.NewPath("spec", "resource")
	if r := m.Spec.Resource.Resource; r == "" {
		errs = append(errs, field.Required(rp.Child("resource"), "resource is required to be set"))
	} else if msgs := validation.IsDNS1035Label(r); len(msgs) > 0 {
		errs = append(errs, field.Invalid(rp.Child("resource"), r, strings.Join(msgs, ",")))
	}
	if g := m.Spec.Resource.Group; g != "" {
		if msgs := validation.IsDNS1123Subdomain(g); len(msgs) > 0 {
			errs = append(errs, field.Invalid(rp.Child("group"), g, strings.Join(msgs, ",")))
		}
	}
	return errs
}

// ValidateStorageVersionMigrationUpdate validates an update: the spec is immutable.
func ValidateStorageVersionMigrationUpdate(m, old *svmv1.StorageVersionMigration) field.ErrorList {
	errs := ValidateStorageVersionMigration(m)
	errs = append(errs, validateObjectMetaUpdate(&m.ObjectMeta, &old.ObjectMeta)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(m.Spec, old.Spec, field.NewPath("spec"))...)
}

// ValidateStorageVersionMigrationStatusUpdate validates a status update.
func ValidateStorageVersionMigrationStatusUpdate(m, old *svmv1.StorageVersionMigration) field.ErrorList {
	errs := validateObjectMetaUpdate(&m.ObjectMeta, &old.ObjectMeta)
	sp := field.NewPath("status")
	if rv := m.Status.ResourceVersion; rv != "" {
		if cmp, err := resourceversion.CompareResourceVersion(rv, rv); err != nil || cmp != 0 {
			if err == nil {
				err = fmt.Errorf("unable to compare resource versions, %s is not equal to %s", rv, rv)
			}
			errs = append(errs, field.Invalid(sp.Child("resourceVersion"), rv, err.Error()))
		}
	}
	errs = append(errs, metav1validation.ValidateConditions(m.Status.Conditions, sp.Child("conditions"))...)
	if old.Status.ResourceVersion != "" && old.Status.ResourceVersion != m.Status.ResourceVersion {
		errs = append(errs, field.Invalid(sp.Child("resourceVersion"), m.Status.ResourceVersion, "field is immutable"))
	}
	cp := sp.Child("conditions")
	if isTrue(m, svmv1.MigrationSucceeded) && isTrue(m, svmv1.MigrationFailed) {
		errs = append(errs, field.Invalid(cp, m.Status.Conditions, "Both success and failed conditions cannot be true at the same time"))
	}
	if isTrue(old, svmv1.MigrationSucceeded) && !isTrue(m, svmv1.MigrationSucceeded) {
		errs = append(errs, field.Invalid(cp, m.Status.Conditions, "Success condition cannot be set to false once it is true"))
	}
	if isTrue(old, svmv1.MigrationFailed) && !isTrue(m, svmv1.MigrationFailed) {
		errs = append(errs, field.Invalid(cp, m.Status.Conditions, "Failed condition cannot be set to false once it is true"))
	}
	return errs
}

func isTrue(m *svmv1.StorageVersionMigration, t svmv1.MigrationConditionType) bool {
	return apimeta.IsStatusConditionTrue(m.Status.Conditions, string(t))
}
