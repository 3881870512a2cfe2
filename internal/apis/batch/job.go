package batch

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/core"
)

// Legacy, unprefixed pod labels the job controller still sets and selects on.
const (
	LegacyJobNameLabel       = "job-name"
	LegacyControllerUIDLabel = "controller-uid"
)

const (
	maxParallelismForIndexedJob             = 100000
	maxFailedIndexesForIndexedJob           = 100000
	completionsSoftLimit                    = 100000
	parallelismLimitForHighCompletions      = 10000
	maxFailedIndexesLimitForHighCompletions = 10000
	maxPodFailurePolicyRules                = 20
	maxPodFailurePolicyOnExitCodesValues    = 255
	maxPodFailurePolicyOnPodConditions      = 20
	maxManagedByLength                      = 63
	maxSucceededIndexesLength               = 64 * 1024
	maxSuccessPolicyRules                   = 20
)

// GenerateJobSelector gives a Job whose manualSelector is not true the
// labels and selector the job controller relies on: job-name and
// controller-uid labels (prefixed and legacy) on the pod template, unless the
// user set them, and a selector on the prefixed controller-uid. The Job's
// name and UID must already be set. Call it on create, before validation.
func GenerateJobSelector(job *batchv1.Job) {
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return
	}
	tpl := &job.Spec.Template
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	for key, value := range map[string]string{
		LegacyJobNameLabel:         job.Name,
		batchv1.JobNameLabel:       job.Name,
		LegacyControllerUIDLabel:   string(job.UID),
		batchv1.ControllerUidLabel: string(job.UID),
	} {
		if _, set := tpl.Labels[key]; !set {
			tpl.Labels[key] = value
		}
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, set := job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !set {
		job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(job.UID)
	}
}

// DropDisabledJobFields clears spec.scheduling, which belongs to the
// WorkloadWithJob alpha feature that k1s does not enable, unless the stored
// spec (oldSpec, nil on create) already uses it. Call it on create and update
// before validation.
func DropDisabledJobFields(spec, oldSpec *batchv1.JobSpec) {
	if oldSpec != nil && oldSpec.Scheduling != nil {
		return
	}
	spec.Scheduling = nil
}

// ValidateJob validates a Job on create. The selector must be the generated
// one unless manualSelector is true (see GenerateJobSelector).
func ValidateJob(job *batchv1.Job) field.ErrorList {
	errs := validateObjectMeta(&job.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validateGeneratedSelector(job, true)...)
	errs = append(errs, validateJobSpecWithSelector(&job.Spec, nil, false, field.NewPath("spec"))...)
	return append(errs, validateNameAllowsCompletions(job)...)
}

// ValidateJobUpdate validates an update of a Job. selector, completionMode,
// podFailurePolicy, backoffLimitPerIndex, managedBy and successPolicy are
// immutable; completions may only change for Indexed Jobs, together with
// parallelism. The pod template is immutable except while the Job is
// suspended and has no active pods (and never started, or is marked
// Suspended): then scheduling directives, template labels and annotations
// and container resources may change.
func ValidateJobUpdate(job, old *batchv1.Job) field.ErrorList {
	errs := validateObjectMetaUpdate(&job.ObjectMeta, &old.ObjectMeta)
	p := field.NewPath("spec")
	spec, oldSpec := &job.Spec, &old.Spec
	tolerate := metav1validation.LabelSelectorHasInvalidLabelValue(oldSpec.Selector)
	errs = append(errs, validateJobSpecWithSelector(spec, oldSpec, tolerate, p)...)
	errs = append(errs, validateCompletionsUpdate(spec, oldSpec, p.Child("completions"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.Selector, oldSpec.Selector, p.Child("selector"))...)
	errs = append(errs, validatePodTemplateUpdate(spec, oldSpec, templateMutable(old), p)...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.CompletionMode, oldSpec.CompletionMode, p.Child("completionMode"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.PodFailurePolicy, oldSpec.PodFailurePolicy, p.Child("podFailurePolicy"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.BackoffLimitPerIndex, oldSpec.BackoffLimitPerIndex, p.Child("backoffLimitPerIndex"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.ManagedBy, oldSpec.ManagedBy, p.Child("managedBy"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.SuccessPolicy, oldSpec.SuccessPolicy, p.Child("successPolicy"))...)
	return append(errs, validateNameAllowsCompletions(job)...)
}

// templateMutable reports whether the pod template of the stored Job may be
// changed: the Job is suspended, has no active pods, and either never started
// or carries the Suspended=True condition.
func templateMutable(old *batchv1.Job) bool {
	suspended := old.Spec.Suspend != nil && *old.Spec.Suspend
	neverStarted := old.Status.StartTime == nil
	return suspended && (neverStarted || conditionTrue(old.Status.Conditions, batchv1.JobSuspended)) && old.Status.Active == 0
}

func validateGeneratedSelector(job *batchv1.Job, requirePrefixed bool) field.ErrorList {
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return nil
	}
	if job.Spec.Selector == nil {
		return nil // reported as required by the spec validation
	}
	var errs field.ErrorList
	if job.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	tp := field.NewPath("spec", "template", "metadata")
	expected := map[string]string{
		LegacyControllerUIDLabel: string(job.UID),
		LegacyJobNameLabel:       job.Name,
	}
	if requirePrefixed {
		expected[batchv1.ControllerUidLabel] = string(job.UID)
		expected[batchv1.JobNameLabel] = job.Name
	}
	for _, key := range []string{LegacyControllerUIDLabel, LegacyJobNameLabel, batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
		want, checked := expected[key]
		if !checked {
			continue
		}
		got, found := job.Spec.Template.Labels[key]
		lp := tp.Child("labels").Key(key)
		switch {
		case !found:
			errs = append(errs, field.Required(lp, fmt.Sprintf("must be '%s'", want)))
		case got != want:
			errs = append(errs, field.Invalid(lp, job.Spec.Template.Labels, fmt.Sprintf("must be '%s'", want)))
		}
	}
	if sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !sel.Matches(labels.Set(expected)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

func validateNameAllowsCompletions(job *batchv1.Job) field.ErrorList {
	spec := &job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion || spec.Completions == nil || *spec.Completions <= 0 {
		return nil
	}
	// Pods of an Indexed Job get the hostname "<job name>-<index>".
	longest := fmt.Sprintf("%s-%d", job.Name, *spec.Completions-1)
	if len(validation.IsDNS1123Label(longest)) == 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), job.Name,
		fmt.Sprintf("will not able to create pod with invalid DNS label: %s", longest))}
}

// validateJobSpecWithSelector adds the selector rules of a Job (required,
// valid, matching the template) to the spec rules shared with job templates.
func validateJobSpecWithSelector(spec, oldSpec *batchv1.JobSpec, tolerateSelector bool, p *field.Path) field.ErrorList {
	errs := validateJobSpec(spec, p)
	sp := p.Child("selector")
	if spec.Selector == nil {
		errs = append(errs, field.Required(sp, ""))
	} else {
		opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: tolerateSelector}
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, opts, sp)...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

func nonNegative32(v *int32, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return apimachineryvalidation.ValidateNonnegativeField(int64(*v), p)
}

// validateJobSpec holds the rules shared by Jobs and CronJob job templates.
func validateJobSpec(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, nonNegative32(spec.Parallelism, p.Child("parallelism"))...)
	errs = append(errs, nonNegative32(spec.Completions, p.Child("completions"))...)
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(*spec.ActiveDeadlineSeconds, p.Child("activeDeadlineSeconds"))...)
	}
	errs = append(errs, nonNegative32(spec.BackoffLimit, p.Child("backoffLimit"))...)
	errs = append(errs, nonNegative32(spec.TTLSecondsAfterFinished, p.Child("ttlSecondsAfterFinished"))...)
	errs = append(errs, nonNegative32(spec.BackoffLimitPerIndex, p.Child("backoffLimitPerIndex"))...)
	if spec.MaxFailedIndexes != nil {
		errs = append(errs, nonNegative32(spec.MaxFailedIndexes, p.Child("maxFailedIndexes"))...)
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(p.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	if spec.ManagedBy != nil {
		mp := p.Child("managedBy")
		errs = append(errs, validation.IsDomainPrefixedPath(mp, *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			errs = append(errs, field.TooLong(mp, "", maxManagedByLength))
		}
	}
	indexed := spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
	if spec.CompletionMode != nil && !indexed && *spec.CompletionMode != batchv1.NonIndexedCompletion {
		errs = append(errs, field.NotSupported(p.Child("completionMode"), *spec.CompletionMode,
			[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if indexed {
		errs = append(errs, validateIndexedLimits(spec, p)...)
	}
	if spec.CompletionMode == nil || *spec.CompletionMode == batchv1.NonIndexedCompletion {
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, p.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if !indexed {
			errs = append(errs, field.Invalid(p.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			errs = append(errs, validateSuccessPolicy(spec, p.Child("successPolicy"))...)
		}
	}
	errs = append(errs, validatePodReplacementPolicy(spec, p.Child("podReplacementPolicy"))...)

	tp := p.Child("template")
	errs = append(errs, core.ValidatePodTemplateSpec(&spec.Template, tp)...)
	rp := tp.Child("spec", "restartPolicy")
	switch rpol := spec.Template.Spec.RestartPolicy; {
	case rpol == corev1.RestartPolicyAlways || rpol == "":
		errs = append(errs, field.Required(rp, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rpol != corev1.RestartPolicyOnFailure && rpol != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(rp, rpol, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case spec.PodFailurePolicy != nil && rpol != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(rp, rpol, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

func validateIndexedLimits(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Completions == nil {
		errs = append(errs, field.Required(p.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if spec.Parallelism != nil && *spec.Parallelism > maxParallelismForIndexedJob {
		errs = append(errs, field.Invalid(p.Child("parallelism"), *spec.Parallelism,
			fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
	}
	mf := spec.MaxFailedIndexes
	if spec.Completions != nil && mf != nil && *mf > *spec.Completions {
		errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *mf, "must be less than or equal to completions"))
	}
	if mf != nil && *mf > maxFailedIndexesForIndexedJob {
		errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *mf, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
	}
	if spec.Completions != nil && *spec.Completions > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
		if mf == nil {
			errs = append(errs, field.Required(p.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if spec.Parallelism != nil && *spec.Parallelism > parallelismLimitForHighCompletions {
			errs = append(errs, field.Invalid(p.Child("parallelism"), *spec.Parallelism,
				fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHighCompletions, completionsSoftLimit)))
		}
		if mf != nil && *mf > maxFailedIndexesLimitForHighCompletions {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *mf,
				fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesLimitForHighCompletions, completionsSoftLimit)))
		}
	}
	return errs
}

var podFailurePolicyActions = []batchv1.PodFailurePolicyAction{
	batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
	batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore,
}

func validatePodFailurePolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rp := p.Child("rules")
	if len(spec.PodFailurePolicy.Rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rp, len(spec.PodFailurePolicy.Rules), maxPodFailurePolicyRules))
	}
	containers := map[string]bool{}
	for _, c := range spec.Template.Spec.Containers {
		containers[c.Name] = true
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers[c.Name] = true
	}
	for i := range spec.PodFailurePolicy.Rules {
		errs = append(errs, validatePodFailurePolicyRule(spec, &spec.PodFailurePolicy.Rules[i], containers, rp.Index(i))...)
	}
	return errs
}

func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, containers map[string]bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ap := p.Child("action")
	switch {
	case rule.Action == "":
		errs = append(errs, field.Required(ap, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(ap, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case rule.Action != batchv1.PodFailurePolicyActionCount && rule.Action != batchv1.PodFailurePolicyActionFailJob && rule.Action != batchv1.PodFailurePolicyActionIgnore:
		errs = append(errs, field.NotSupported(ap, rule.Action, podFailurePolicyActions))
	}
	if rule.OnExitCodes != nil {
		errs = append(errs, validateOnExitCodes(rule.OnExitCodes, containers, p.Child("onExitCodes"))...)
	}
	if len(rule.OnPodConditions) > 0 {
		errs = append(errs, validateOnPodConditions(rule.OnPodConditions, p.Child("onPodConditions"))...)
	}
	switch {
	case rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0:
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	case rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0:
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, containers map[string]bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	operators := []batchv1.PodFailurePolicyOnExitCodesOperator{batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn}
	op := p.Child("operator")
	switch req.Operator {
	case "":
		errs = append(errs, field.Required(op, fmt.Sprintf("valid values: %q", operators)))
	case batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn:
	default:
		errs = append(errs, field.NotSupported(op, req.Operator, operators))
	}
	if req.ContainerName != nil && !containers[*req.ContainerName] {
		errs = append(errs, field.Invalid(p.Child("containerName"), *req.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	vp := p.Child("values")
	switch {
	case len(req.Values) == 0:
		errs = append(errs, field.Invalid(vp, req.Values, "at least one value is required"))
	case len(req.Values) > maxPodFailurePolicyOnExitCodesValues:
		errs = append(errs, field.TooMany(vp, len(req.Values), maxPodFailurePolicyOnExitCodesValues))
	}
	seen := map[int32]bool{}
	ordered := true
	for i, v := range req.Values {
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(vp.Index(i), v, "must not be 0 for the In operator"))
		}
		if seen[v] {
			errs = append(errs, field.Duplicate(vp.Index(i), v))
		}
		seen[v] = true
		if i > 0 && req.Values[i-1] > v {
			ordered = false
		}
	}
	if !ordered {
		errs = append(errs, field.Invalid(vp, req.Values, "must be ordered"))
	}
	return errs
}

func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(patterns) > maxPodFailurePolicyOnPodConditions {
		errs = append(errs, field.TooMany(p, len(patterns), maxPodFailurePolicyOnPodConditions))
	}
	statuses := []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
	for i, pat := range patterns {
		pp := p.Index(i)
		for _, msg := range validation.IsQualifiedName(string(pat.Type)) {
			errs = append(errs, field.Invalid(pp.Child("type"), string(pat.Type), msg))
		}
		sp := pp.Child("status")
		switch pat.Status {
		case "":
			errs = append(errs, field.Required(sp, fmt.Sprintf("valid values: %q", statuses)))
		case corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown:
		default:
			errs = append(errs, field.NotSupported(sp, pat.Status, statuses))
		}
	}
	return errs
}

func validateSuccessPolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rp := p.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		errs = append(errs, field.Required(rp, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		errs = append(errs, field.TooMany(rp, len(rules), maxSuccessPolicyRules))
	}
	if spec.Completions == nil {
		return errs // reported as required by the indexed-mode rules
	}
	completions := *spec.Completions
	for i, rule := range rules {
		p := rp.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			errs = append(errs, field.Required(p, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var total int32
		if rule.SucceededIndexes != nil {
			ip := p.Child("succeededIndexes")
			if len(*rule.SucceededIndexes) > maxSucceededIndexesLength {
				errs = append(errs, field.TooLong(ip, "", maxSucceededIndexesLength))
			}
			n, err := countIndexes(*rule.SucceededIndexes, completions)
			if err != nil {
				errs = append(errs, field.Invalid(ip, *rule.SucceededIndexes, fmt.Sprintf("error parsing succeededIndexes: %s", err)))
			}
			total = n
		}
		if rule.SucceededCount != nil {
			cp := p.Child("succeededCount")
			errs = append(errs, nonNegative32(rule.SucceededCount, cp)...)
			if *rule.SucceededCount > completions {
				errs = append(errs, field.Invalid(cp, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && *rule.SucceededCount > total {
				errs = append(errs, field.Invalid(cp, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
	}
	return errs
}

func validatePodReplacementPolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	if spec.PodReplacementPolicy == nil {
		return nil
	}
	policy := *spec.PodReplacementPolicy
	if spec.PodFailurePolicy != nil {
		if policy != batchv1.Failed {
			return field.ErrorList{field.NotSupported(p, policy, []batchv1.PodReplacementPolicy{batchv1.Failed})}
		}
		return nil
	}
	if policy != batchv1.Failed && policy != batchv1.TerminatingOrFailed {
		return field.ErrorList{field.NotSupported(p, policy, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed})}
	}
	return nil
}

func validateCompletionsUpdate(spec, oldSpec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	indexed := spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
	if !indexed {
		return apimachineryvalidation.ValidateImmutableField(spec.Completions, oldSpec.Completions, p)
	}
	if equality.Semantic.DeepEqual(spec.Completions, oldSpec.Completions) || spec.Completions == nil {
		return nil
	}
	if spec.Parallelism == nil || *spec.Completions != *spec.Parallelism {
		return field.ErrorList{field.Invalid(p, spec.Completions, "can only be modified in tandem with spec.parallelism")}
	}
	return nil
}

// validatePodTemplateUpdate enforces template immutability. While the
// template is mutable (see templateMutable), scheduling directives, template
// labels and annotations and container resources may change.
func validatePodTemplateUpdate(spec, oldSpec *batchv1.JobSpec, mutable bool, p *field.Path) field.ErrorList {
	tp := p.Child("template")
	if !mutable {
		return apimachineryvalidation.ValidateImmutableField(&spec.Template, &oldSpec.Template, tp)
	}
	// Start from the stored template and carry over everything that may
	// change; what is left must be equal.
	allowed := oldSpec.Template.DeepCopy()
	newSpec := &spec.Template.Spec
	switch {
	case newSpec.Affinity == nil && allowed.Spec.Affinity != nil:
		allowed.Spec.Affinity.NodeAffinity = nil
		if equality.Semantic.DeepEqual(*allowed.Spec.Affinity, corev1.Affinity{}) {
			allowed.Spec.Affinity = nil
		}
	case newSpec.Affinity != nil && allowed.Spec.Affinity == nil:
		allowed.Spec.Affinity = &corev1.Affinity{NodeAffinity: newSpec.Affinity.NodeAffinity}
	case newSpec.Affinity != nil && allowed.Spec.Affinity != nil:
		allowed.Spec.Affinity.NodeAffinity = newSpec.Affinity.NodeAffinity
	}
	allowed.Spec.NodeSelector = newSpec.NodeSelector
	allowed.Spec.Tolerations = newSpec.Tolerations
	allowed.Spec.SchedulingGates = newSpec.SchedulingGates
	copyResources(allowed.Spec.Containers, newSpec.Containers)
	copyResources(allowed.Spec.InitContainers, newSpec.InitContainers)
	return apimachineryvalidation.ValidateImmutableField(*newSpec, allowed.Spec, tp.Child("spec"))
}

// copyResources copies the resource requirements of same-named containers
// at the same position from src to dst.
func copyResources(dst, src []corev1.Container) {
	if len(dst) != len(src) {
		return
	}
	for i := range dst {
		if dst[i].Name == src[i].Name {
			dst[i].Resources = src[i].Resources
		}
	}
}

// countIndexes parses a compressed index list such as "1,3-5,7" whose
// indexes lie below completions, in increasing order, and returns how many
// indexes it holds.
func countIndexes(s string, completions int32) (int32, error) {
	intervals, err := parseIndexes(s, completions)
	if err != nil {
		return 0, err
	}
	var total int32
	for _, iv := range intervals {
		total += iv[1] - iv[0] + 1
	}
	return total, nil
}

func parseIndexes(s string, completions int32) ([][2]int32, error) {
	if s == "" {
		return nil, nil
	}
	var out [][2]int32
	for _, part := range strings.Split(s, ",") {
		lo, hi, err := parseInterval(part, completions)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && out[len(out)-1][1] >= lo {
			return nil, fmt.Errorf("non-increasing order, previous: %d, current: %d", out[len(out)-1][1], lo)
		}
		out = append(out, [2]int32{lo, hi})
	}
	return out, nil
}

func parseInterval(s string, completions int32) (int32, int32, error) {
	bounds := strings.Split(s, "-")
	if len(bounds) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", s)
	}
	var vals [2]int32
	for i, b := range bounds {
		v, err := strconv.Atoi(b)
		if err != nil {
			return 0, 0, fmt.Errorf("cannot convert string to integer for index: %q", b)
		}
		if v >= int(completions) {
			return 0, 0, fmt.Errorf("too large index: %q", b)
		}
		vals[i] = int32(v)
	}
	if len(bounds) == 1 {
		return vals[0], vals[0], nil
	}
	if vals[0] >= vals[1] {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", vals[0], vals[1])
	}
	return vals[0], vals[1], nil
}

// indexesOverlap reports the first index present in both compressed lists.
// Unparseable intervals are ignored here; the format checks report them.
func indexesOverlap(a, b string, completions int32) (int32, bool) {
	ia, ib := lenientIntervals(a, completions), lenientIntervals(b, completions)
	for _, x := range ia {
		for _, y := range ib {
			if x[0] <= y[1] && y[0] <= x[1] {
				return max(x[0], y[0]), true
			}
		}
	}
	return 0, false
}

func lenientIntervals(s string, completions int32) [][2]int32 {
	if s == "" {
		return nil
	}
	var out [][2]int32
	for _, part := range strings.Split(s, ",") {
		if lo, hi, err := parseInterval(part, completions); err == nil {
			out = append(out, [2]int32{lo, hi})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func conditionTrue(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func conditionFalse(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}
