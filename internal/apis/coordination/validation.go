package coordination

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateLease validates a Lease on create.
func ValidateLease(l *coordinationv1.Lease) field.ErrorList {
	errs := validateObjectMeta(&l.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateLeaseSpec(&l.Spec, field.NewPath("spec"))...)
}

// ValidateLeaseUpdate validates an update of a Lease. Every spec field may
// change (holders renew and hand over leases by updating them).
func ValidateLeaseUpdate(l, old *coordinationv1.Lease) field.ErrorList {
	errs := validateObjectMetaUpdate(&l.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateLeaseSpec(&l.Spec, field.NewPath("spec"))...)
}

func validateLeaseSpec(spec *coordinationv1.LeaseSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(p.Child("leaseDurationSeconds"), *spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(p.Child("leaseTransitions"), *spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		errs = append(errs, validateStrategy(*spec.Strategy, p.Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(p.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// validateStrategy accepts the built-in OldestEmulationVersion strategy or
// any domain-prefixed custom strategy. Upstream reports these errors one
// level below spec.strategy (at spec.strategy.strategy); k1s keeps that path
// so clients see the same error.
func validateStrategy(s coordinationv1.CoordinatedLeaseStrategy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ep := p.Child("strategy")
	if !strings.Contains(string(s), "/") {
		if s != coordinationv1.OldestEmulationVersion {
			errs = append(errs, field.NotSupported(ep, s, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}))
		}
		return errs
	}
	for _, msg := range validation.IsQualifiedName(string(s)) {
		errs = append(errs, field.Invalid(ep, s, msg))
	}
	return errs
}
