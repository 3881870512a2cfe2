package networking

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// ---- ServiceCIDR ----

// ValidateServiceCIDR validates a ServiceCIDR on create: one or two
// CIDRs, valid, at most one per IP family.
func ValidateServiceCIDR(c *networkingv1.ServiceCIDR) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateServiceCIDRs(c.Spec.CIDRs, field.NewPath("spec", "cidrs"))...)
}

func validateServiceCIDRs(cidrs []string, p *field.Path) field.ErrorList {
	switch {
	case len(cidrs) == 0:
		return field.ErrorList{field.Required(p, "at least one CIDR required")}
	case len(cidrs) > 2:
		return field.ErrorList{field.Invalid(p, cidrs, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	for i, c := range cidrs {
		errs = append(errs, validation.IsValidCIDR(p.Index(i), c)...)
	}
	if len(cidrs) == 2 {
		f0, f1 := netutils.IPFamilyOfCIDRString(cidrs[0]), netutils.IPFamilyOfCIDRString(cidrs[1])
		if f0 == f1 && f0 != netutils.IPFamilyUnknown {
			errs = append(errs, field.Invalid(p, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
		}
	}
	return errs
}

// ValidateServiceCIDRUpdate: the CIDRs do not change, except that a
// single-stack range may gain a second of the other family.
func ValidateServiceCIDRUpdate(c, old *networkingv1.ServiceCIDR) field.ErrorList {
	errs := validateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta)
	p := field.NewPath("spec", "cidrs")
	switch {
	case len(c.Spec.CIDRs) == len(old.Spec.CIDRs):
		for i := range old.Spec.CIDRs {
			if c.Spec.CIDRs[i] != old.Spec.CIDRs[i] {
				errs = append(errs, field.Invalid(p.Index(i), c.Spec.CIDRs[i], apimachineryvalidation.FieldImmutableErrorMsg))
			}
		}
	case len(old.Spec.CIDRs) == 1 && len(c.Spec.CIDRs) == 2:
		if c.Spec.CIDRs[0] != old.Spec.CIDRs[0] {
			errs = append(errs, field.Invalid(p.Index(0), c.Spec.CIDRs[0], apimachineryvalidation.FieldImmutableErrorMsg))
		}
		errs = append(errs, validateServiceCIDRs(c.Spec.CIDRs, p)...)
	default:
		errs = append(errs, field.Invalid(p, c.Spec.CIDRs, apimachineryvalidation.FieldImmutableErrorMsg))
	}
	return errs
}

// ValidateServiceCIDRStatusUpdate checks the status conditions.
func ValidateServiceCIDRStatusUpdate(c, old *networkingv1.ServiceCIDR) field.ErrorList {
	errs := validateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta)
	return append(errs, metav1validation.ValidateConditions(c.Status.Conditions, field.NewPath("status", "conditions"))...)
}

// ---- IPAddress ----

// ValidateIPAddress validates an IPAddress: its name is an IP address in
// canonical form, and it names the object that holds it.
func ValidateIPAddress(a *networkingv1.IPAddress) field.ErrorList {
	errs := validateObjectMeta(&a.ObjectMeta, false, func(name string, _ bool) []string {
		var out []string
		for _, e := range validation.IsValidIP(&field.Path{}, name) {
			out = append(out, e.Detail)
		}
		return out
	})
	return append(errs, validateParentReference(a.Spec.ParentRef, field.NewPath("spec", "parentRef"))...)
}

func validateParentReference(ref *networkingv1.ParentReference, p *field.Path) field.ErrorList {
	if ref == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(p.Child("group"), ref.Group, msg))
		}
	}
	segment := func(name, value string, required bool) {
		if value == "" {
			if required {
				errs = append(errs, field.Required(p.Child(name), ""))
			}
			return
		}
		for _, msg := range content.IsPathSegmentName(value) {
			errs = append(errs, field.Invalid(p.Child(name), value, msg))
		}
	}
	segment("resource", ref.Resource, true)
	segment("name", ref.Name, true)
	segment("namespace", ref.Namespace, false)
	return errs
}

// ValidateIPAddressUpdate: the parent reference does not change.
func ValidateIPAddressUpdate(a, old *networkingv1.IPAddress) field.ErrorList {
	errs := validateObjectMetaUpdate(&a.ObjectMeta, &old.ObjectMeta)
	return append(errs, apimachineryvalidation.ValidateImmutableField(a.Spec.ParentRef, old.Spec.ParentRef, field.NewPath("spec", "parentRef"))...)
}
