package batch

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxCronJobNameLength leaves room for the 11-character "-<minutes>" suffix
// the controller appends to each Job name (Job names are DNS labels).
const maxCronJobNameLength = validation.DNS1035LabelMaxLength - 11

// ValidateCronJob validates a CronJob on create.
func ValidateCronJob(cj *batchv1.CronJob) field.ErrorList {
	errs := validateObjectMeta(&cj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validateCronJobSpec(&cj.Spec, nil, field.NewPath("spec"))...)
	if len(cj.Name) > maxCronJobNameLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength)))
	}
	return errs
}

// ValidateCronJobUpdate validates an update of a CronJob. Every spec field
// may change. The name length limit is not re-checked, so older CronJobs
// with long names stay editable; a TZ prefix in a schedule that already had
// one is tolerated, and an unchanged timeZone is not re-checked.
func ValidateCronJobUpdate(cj, old *batchv1.CronJob) field.ErrorList {
	errs := validateObjectMetaUpdate(&cj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateCronJobSpec(&cj.Spec, &old.Spec, field.NewPath("spec"))...)
}

// ValidateCronJobStatusUpdate validates a write to the status subresource of
// a CronJob. Upstream checks nothing in the status; only metadata rules
// apply.
func ValidateCronJobStatusUpdate(cj, old *batchv1.CronJob) field.ErrorList {
	return validateObjectMetaUpdate(&cj.ObjectMeta, &old.ObjectMeta)
}

func validateCronJobSpec(spec, oldSpec *batchv1.CronJobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	sp := p.Child("schedule")
	if spec.Schedule == "" {
		errs = append(errs, field.Required(sp, ""))
	} else {
		allowTZ := oldSpec != nil && strings.Contains(oldSpec.Schedule, "TZ")
		errs = append(errs, validateScheduleFormat(spec.Schedule, allowTZ, spec.TimeZone, sp)...)
	}
	errs = append(errs, nonNegative64(spec.StartingDeadlineSeconds, p.Child("startingDeadlineSeconds"))...)
	if oldSpec == nil || !equalStringPtr(oldSpec.TimeZone, spec.TimeZone) {
		errs = append(errs, validateTimeZone(spec.TimeZone, p.Child("timeZone"))...)
	}
	cp := p.Child("concurrencyPolicy")
	switch spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(cp, ""))
	default:
		errs = append(errs, field.NotSupported(cp, spec.ConcurrencyPolicy,
			[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	errs = append(errs, validateJobTemplateSpec(&spec.JobTemplate, p.Child("jobTemplate"))...)
	errs = append(errs, nonNegative32(spec.SuccessfulJobsHistoryLimit, p.Child("successfulJobsHistoryLimit"))...)
	return append(errs, nonNegative32(spec.FailedJobsHistoryLimit, p.Child("failedJobsHistoryLimit"))...)
}

// validateJobTemplateSpec applies the Job spec rules to a CronJob's job
// template. Its selector is always generated, so none may be given.
func validateJobTemplateSpec(t *batchv1.JobTemplateSpec, p *field.Path) field.ErrorList {
	sp := p.Child("spec")
	errs := validateJobSpec(&t.Spec, sp)
	if t.Spec.Selector != nil {
		errs = append(errs, field.Invalid(sp.Child("selector"), t.Spec.Selector, "`selector` will be auto-generated"))
	}
	if t.Spec.ManualSelector != nil && *t.Spec.ManualSelector {
		errs = append(errs, field.NotSupported(sp.Child("manualSelector"), t.Spec.ManualSelector, []string{"nil", "false"}))
	}
	return errs
}

// validateScheduleFormat checks that the schedule parses and that it does not
// carry a TZ/CRON_TZ prefix (the timeZone field replaces it). A stored
// schedule with such a prefix keeps being accepted, but not together with
// timeZone.
func validateScheduleFormat(schedule string, allowTZ bool, timeZone *string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := ParseSchedule(schedule); err != nil {
		errs = append(errs, field.Invalid(p, schedule, err.Error()))
	}
	hasTZ := strings.Contains(schedule, "TZ")
	switch {
	case allowTZ && hasTZ && timeZone != nil:
		errs = append(errs, field.Invalid(p, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && hasTZ:
		errs = append(errs, field.Invalid(p, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// tzComponent matches one path component of an IANA zone name (digits and
// '+' are tolerated for legacy names such as Etc/GMT+5).
var tzComponent = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// validateTimeZone accepts nil or an explicit IANA zone name that this host
// can load. "Local" is rejected because it depends on the server.
func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !tzComponent.MatchString(part) {
			return field.ErrorList{field.Invalid(p, tz, fmt.Sprintf("unknown time zone %s", *tz))}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, tz, err.Error()))
	}
	return errs
}

func nonNegative64(v *int64, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return apimachineryvalidation.ValidateNonnegativeField(*v, p)
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
