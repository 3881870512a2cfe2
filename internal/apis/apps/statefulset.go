package apps

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/core"
)

// statefulSetOptions relax rules on update so that stored objects stay
// editable.
type statefulSetOptions struct {
	allowInvalidServiceName bool
	skipTemplate            bool
	skipClaimTemplates      bool
	allowRecreate           bool
}

// ValidateStatefulSet validates a StatefulSet on create. Its name must be a
// DNS label because it prefixes the pod host names.
func ValidateStatefulSet(ss *appsv1.StatefulSet) field.ErrorList {
	errs := validateObjectMeta(&ss.ObjectMeta, true, apimachineryvalidation.NameIsDNSLabel)
	return append(errs, validateStatefulSetSpec(&ss.Spec, field.NewPath("spec"), statefulSetOptions{})...)
}

// ValidateStatefulSetUpdate validates an update of a StatefulSet. selector,
// volumeClaimTemplates, serviceName and podManagementPolicy are immutable;
// everything else (replicas, template, updateStrategy, minReadySeconds,
// persistentVolumeClaimRetentionPolicy, ordinals, revisionHistoryLimit) may
// change. The name is not re-validated, and a template that was already
// invalid in the stored object is not re-validated either.
func ValidateStatefulSetUpdate(ss, old *appsv1.StatefulSet) field.ErrorList {
	opts := statefulSetOptions{
		allowInvalidServiceName: true,
		skipClaimTemplates:      true,
		allowRecreate:           old.Spec.UpdateStrategy.Type == appsv1.RecreateStatefulSetStrategyType,
	}
	if len(validateStatefulSetSpec(&old.Spec, nil, opts)) > 0 {
		opts.skipTemplate = true
	}
	errs := validateObjectMetaUpdate(&ss.ObjectMeta, &old.ObjectMeta)
	p := field.NewPath("spec")
	errs = append(errs, validateStatefulSetSpec(&ss.Spec, p, opts)...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(ss.Spec.Selector, old.Spec.Selector, p.Child("selector"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(ss.Spec.VolumeClaimTemplates, old.Spec.VolumeClaimTemplates, p.Child("volumeClaimTemplates"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(ss.Spec.ServiceName, old.Spec.ServiceName, p.Child("serviceName"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(ss.Spec.PodManagementPolicy, old.Spec.PodManagementPolicy, p.Child("podManagementPolicy"))...)
}

// ValidateStatefulSetStatusUpdate validates a write to the status
// subresource of a StatefulSet.
func ValidateStatefulSetStatusUpdate(ss, old *appsv1.StatefulSet) field.ErrorList {
	p := field.NewPath("status")
	st := &ss.Status
	errs := validateObjectMetaUpdate(&ss.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, nonNegative(int64(st.Replicas), p.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(st.ReadyReplicas), p.Child("readyReplicas"))...)
	errs = append(errs, nonNegative(int64(st.CurrentReplicas), p.Child("currentReplicas"))...)
	errs = append(errs, nonNegative(int64(st.UpdatedReplicas), p.Child("updatedReplicas"))...)
	errs = append(errs, nonNegative(int64(st.AvailableReplicas), p.Child("availableReplicas"))...)
	errs = append(errs, nonNegative(st.ObservedGeneration, p.Child("observedGeneration"))...)
	errs = append(errs, nonNegativePtr(st.CollisionCount, p.Child("collisionCount"))...)
	const msg = "cannot be greater than status.replicas"
	for _, c := range []struct {
		name string
		v    int32
	}{{"readyReplicas", st.ReadyReplicas}, {"currentReplicas", st.CurrentReplicas}, {"updatedReplicas", st.UpdatedReplicas}, {"availableReplicas", st.AvailableReplicas}} {
		if c.v > st.Replicas {
			errs = append(errs, field.Invalid(p.Child(c.name), c.v, msg))
		}
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than status.readyReplicas"))
	}
	return append(errs, collisionCountDecremented(st.CollisionCount, old.Status.CollisionCount, p.Child("collisionCount"))...)
}

func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, p *field.Path, opts statefulSetOptions) field.ErrorList {
	var errs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(p.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(p.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	errs = append(errs, validateStatefulSetUpdateStrategy(&spec.UpdateStrategy, p.Child("updateStrategy"), opts.allowRecreate)...)
	if rp := spec.PersistentVolumeClaimRetentionPolicy; rp != nil {
		rpp := p.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, validateRetentionPolicyType(rp.WhenDeleted, rpp.Child("whenDeleted"))...)
		errs = append(errs, validateRetentionPolicyType(rp.WhenScaled, rpp.Child("whenScaled"))...)
	}
	if !opts.skipClaimTemplates {
		for i := range spec.VolumeClaimTemplates {
			errs = append(errs, validateClaimTemplateSpec(&spec.VolumeClaimTemplates[i], p.Child("volumeClaimTemplates").Index(i))...)
		}
	}
	errs = append(errs, nonNegativePtr(spec.Replicas, p.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		errs = append(errs, nonNegative(int64(spec.Ordinals.Start), p.Child("ordinals", "start"))...)
	}
	if !opts.allowInvalidServiceName && spec.ServiceName != "" {
		for _, msg := range validation.IsDNS1123Label(spec.ServiceName) {
			errs = append(errs, field.Invalid(p.Child("serviceName"), spec.ServiceName, msg))
		}
	}
	errs = append(errs, validateStrictSelector(spec.Selector, "statefulset", p.Child("selector"))...)
	tp := p.Child("template")
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		errs = append(errs, field.Invalid(p.Child("selector"), spec.Selector, ""))
	} else {
		errs = append(errs, selectorMatchesTemplate(sel, &spec.Template, tp)...)
		if !opts.skipTemplate {
			errs = append(errs, core.ValidatePodTemplateSpec(statefulSetTemplateForValidation(spec), tp)...)
		}
	}
	return append(errs, longRunningPodRules(&spec.Template, "StatefulSet", tp)...)
}

// statefulSetTemplateForValidation returns the template as the controller
// will use it: hostname and subdomain are overwritten per pod, and every
// volume claim template becomes a PVC volume the containers may mount.
func statefulSetTemplateForValidation(spec *appsv1.StatefulSetSpec) *corev1.PodTemplateSpec {
	tpl := &spec.Template
	if tpl.Spec.Hostname == "" && tpl.Spec.Subdomain == "" && len(spec.VolumeClaimTemplates) == 0 {
		return tpl
	}
	tpl = tpl.DeepCopy()
	tpl.Spec.Hostname = ""
	tpl.Spec.Subdomain = ""
	if len(spec.VolumeClaimTemplates) == 0 {
		return tpl
	}
	claims := make(map[string]bool, len(spec.VolumeClaimTemplates))
	volumes := make([]corev1.Volume, 0, len(spec.VolumeClaimTemplates)+len(tpl.Spec.Volumes))
	for _, c := range spec.VolumeClaimTemplates {
		if claims[c.Name] {
			continue
		}
		claims[c.Name] = true
		volumes = append(volumes, corev1.Volume{
			Name:         c.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}},
		})
	}
	for _, v := range tpl.Spec.Volumes {
		if !claims[v.Name] {
			volumes = append(volumes, v)
		}
	}
	tpl.Spec.Volumes = volumes
	return tpl
}

// validateClaimTemplateSpec checks the spec of one volume claim template
// with the PVC rules of package core, reporting errors under p.spec. The
// template's own metadata is not validated, as upstream.
func validateClaimTemplateSpec(claim *corev1.PersistentVolumeClaim, p *field.Path) field.ErrorList {
	probe := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim-template", Namespace: "default"},
		Spec:       claim.Spec,
	}
	var errs field.ErrorList
	for _, err := range core.ValidatePersistentVolumeClaim(probe) {
		if err.Field != "spec" && !strings.HasPrefix(err.Field, "spec.") && !strings.HasPrefix(err.Field, "spec[") {
			continue
		}
		rerooted := *err
		rerooted.Field = p.String() + "." + err.Field
		errs = append(errs, &rerooted)
	}
	return errs
}

func validateStatefulSetUpdateStrategy(us *appsv1.StatefulSetUpdateStrategy, p *field.Path, allowRecreate bool) field.ErrorList {
	onlyRolling := fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)
	switch {
	case us.Type == "":
		return field.ErrorList{field.Required(p, "")}
	case us.Type == appsv1.OnDeleteStatefulSetStrategyType, us.Type == appsv1.RecreateStatefulSetStrategyType && allowRecreate:
		if us.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(p.Child("rollingUpdate"), us.RollingUpdate, onlyRolling)}
		}
		return nil
	case us.Type == appsv1.RollingUpdateStatefulSetStrategyType:
		if us.RollingUpdate == nil {
			return nil
		}
		rp := p.Child("rollingUpdate")
		errs := nonNegativePtr(us.RollingUpdate.Partition, rp.Child("partition"))
		if mu := us.RollingUpdate.MaxUnavailable; mu != nil {
			mp := rp.Child("maxUnavailable")
			errs = append(errs, ValidatePositiveIntOrPercent(*mu, mp)...)
			if intOrPercentValue(*mu) == 0 {
				errs = append(errs, field.Invalid(mp, *mu, "cannot be 0"))
			}
			errs = append(errs, IsNotMoreThan100Percent(*mu, mp)...)
		}
		return errs
	}
	valid := fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)
	if allowRecreate {
		valid = fmt.Sprintf("must be '%s', '%s', or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType, appsv1.RecreateStatefulSetStrategyType)
	}
	return field.ErrorList{field.Invalid(p, us, valid)}
}

func validateRetentionPolicyType(t appsv1.PersistentVolumeClaimRetentionPolicyType, p *field.Path) field.ErrorList {
	switch t {
	case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, t, []string{
		string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType), string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType),
	})}
}
