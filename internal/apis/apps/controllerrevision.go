package apps

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateControllerRevision validates a ControllerRevision on create: the
// revision number is non-negative and data is a JSON object.
func ValidateControllerRevision(cr *appsv1.ControllerRevision) field.ErrorList {
	errs := validateControllerRevisionCommon(cr)
	return append(errs, validateRevisionData(cr)...)
}

// ValidateControllerRevisionUpdate validates an update of a
// ControllerRevision; data is immutable.
func ValidateControllerRevisionUpdate(cr, old *appsv1.ControllerRevision) field.ErrorList {
	errs := validateObjectMetaUpdate(&cr.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateControllerRevisionCommon(cr)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(cr.Data, old.Data, field.NewPath("data"))...)
}

func validateControllerRevisionCommon(cr *appsv1.ControllerRevision) field.ErrorList {
	errs := validateObjectMeta(&cr.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, nonNegative(cr.Revision, field.NewPath("revision"))...)
}

func validateRevisionData(cr *appsv1.ControllerRevision) field.ErrorList {
	p := field.NewPath("data")
	raw := cr.Data.Raw
	if raw == nil && cr.Data.Object != nil {
		// A revision built in process carries a typed object instead of
		// bytes; judge the JSON it will be stored as.
		b, err := json.Marshal(cr.Data.Object)
		if err != nil {
			return field.ErrorList{field.Invalid(p, "<value omitted>", fmt.Sprintf("error parsing data: %v", err))}
		}
		raw = b
	}
	if raw == nil {
		return field.ErrorList{field.Required(p, "data is mandatory")}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return field.ErrorList{field.Invalid(p, "<value omitted>", fmt.Sprintf("error parsing data: %v", err))}
	}
	switch v.(type) {
	case nil:
		return field.ErrorList{field.Required(p, "data is mandatory")}
	case map[string]any:
		return nil
	}
	return field.ErrorList{field.Required(p, "data must be a valid JSON object")}
}
