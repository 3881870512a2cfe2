package events

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Length limits of the free-form Event fields.
const (
	ReportingInstanceLengthLimit = 128
	ActionLengthLimit            = 128
	ReasonLengthLimit            = 128
	NoteLengthLimit              = 1024
)

// RegisterDefaults adds the Event and EventList defaulters to s. Events have
// no defaulted fields; the defaulters exist so every kind has one.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&eventsv1.Event{}, func(obj interface{}) { DefaultEvent(obj.(*eventsv1.Event)) })
	s.AddTypeDefaultingFunc(&eventsv1.EventList{}, func(obj interface{}) {
		list := obj.(*eventsv1.EventList)
		for i := range list.Items {
			DefaultEvent(&list.Items[i])
		}
	})
	return nil
}

// DefaultEvent sets defaults on an Event. Nothing is defaulted.
func DefaultEvent(ev *eventsv1.Event) {}

// ValidateEvent validates an Event created through events.k8s.io/v1.
func ValidateEvent(ev *eventsv1.Event) field.ErrorList {
	errs := validateEventFields(ev)
	errs = append(errs, validateObjectMeta(&ev.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)...)
	errs = append(errs, validateSeries(ev)...)
	if ev.EventTime.Time.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", ev.Type)))
	}
	if !ev.DeprecatedFirstTimestamp.Time.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !ev.DeprecatedLastTimestamp.Time.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if ev.DeprecatedCount != 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if ev.DeprecatedSource.Component != "" || ev.DeprecatedSource.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return errs
}

// ValidateEventUpdate validates an update of an Event through
// events.k8s.io/v1. Only the series (and metadata) may change; eventTime may
// differ below microsecond precision, which clients lose when serializing.
func ValidateEventUpdate(ev, old *eventsv1.Event) field.ErrorList {
	errs := validateEventFields(ev)
	errs = append(errs, validateObjectMetaUpdate(&ev.ObjectMeta, &old.ObjectMeta)...)
	if !equality.Semantic.DeepEqual(ev.Series, old.Series) {
		errs = append(errs, validateSeries(ev)...)
	}
	immutable := func(newVal, oldVal interface{}, name string) {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(newVal, oldVal, field.NewPath(name))...)
	}
	immutable(ev.Regarding, old.Regarding, "involvedObject")
	immutable(ev.Reason, old.Reason, "reason")
	immutable(ev.Note, old.Note, "message")
	immutable(ev.DeprecatedSource, old.DeprecatedSource, "source")
	immutable(ev.DeprecatedFirstTimestamp, old.DeprecatedFirstTimestamp, "firstTimestamp")
	immutable(ev.DeprecatedLastTimestamp, old.DeprecatedLastTimestamp, "lastTimestamp")
	immutable(ev.DeprecatedCount, old.DeprecatedCount, "count")
	immutable(ev.Type, old.Type, "type")
	if !ev.EventTime.Truncate(time.Microsecond).Equal(old.EventTime.Truncate(time.Microsecond)) {
		immutable(ev.EventTime, old.EventTime, "eventTime")
	}
	immutable(ev.Action, old.Action, "action")
	immutable(ev.Related, old.Related, "related")
	immutable(ev.ReportingController, old.ReportingController, "reportingController")
	immutable(ev.ReportingInstance, old.ReportingInstance, "reportingInstance")
	return errs
}

// validateEventFields holds the checks every Event write passes, whatever
// API version it came through.
func validateEventFields(ev *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	if ev.EventTime.Time.IsZero() {
		// Old-style events: the event lives in its object's namespace, or in
		// "" / "default" for cluster-scoped objects.
		if ev.Regarding.Namespace == "" {
			if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, ev.Regarding.Namespace, "does not match event.namespace"))
			}
		} else if ev.Namespace != ev.Regarding.Namespace {
			errs = append(errs, field.Invalid(nsPath, ev.Regarding.Namespace, "does not match event.namespace"))
		}
		return errs
	}
	if ev.Regarding.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(nsPath, ev.Regarding.Namespace, "does not match event.namespace"))
	}
	rc := field.NewPath("reportingController")
	if ev.ReportingController == "" {
		errs = append(errs, field.Required(rc, ""))
	}
	for _, msg := range validation.IsQualifiedName(ev.ReportingController) {
		errs = append(errs, field.Invalid(rc, ev.ReportingController, msg))
	}
	errs = append(errs, requireBounded(ev.ReportingInstance, ReportingInstanceLengthLimit, "reportingInstance")...)
	errs = append(errs, requireBounded(ev.Action, ActionLengthLimit, "action")...)
	errs = append(errs, requireBounded(ev.Reason, ReasonLengthLimit, "reason")...)
	if len(ev.Note) > NoteLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", NoteLengthLimit)))
	}
	return errs
}

func requireBounded(v string, limit int, name string) field.ErrorList {
	p := field.NewPath(name)
	var errs field.ErrorList
	if v == "" {
		errs = append(errs, field.Required(p, ""))
	}
	if len(v) > limit {
		errs = append(errs, field.Invalid(p, "", fmt.Sprintf("can have at most %v characters", limit)))
	}
	return errs
}

// validateSeries requires an observed series to count at least two
// occurrences and to carry the time of the last one. The paths are the
// dotted single segments upstream reports.
func validateSeries(ev *eventsv1.Event) field.ErrorList {
	if ev.Series == nil {
		return nil
	}
	var errs field.ErrorList
	if ev.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if ev.Series.LastObservedTime.Time.IsZero() {
		errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return errs
}
