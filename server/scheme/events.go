package scheme

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// Events are stored once, as core/v1 Events, and served both as core/v1
// and as events.k8s.io/v1 (the storage factory makes the two resources
// cohabit). These conversions translate between the two shapes, field for
// field as upstream maps them.
func addEventConversions(s *runtime.Scheme) error {
	if err := s.AddConversionFunc((*corev1.Event)(nil), (*eventsv1.Event)(nil), func(a, b any, _ conversion.Scope) error {
		CoreEventToEventsV1(a.(*corev1.Event), b.(*eventsv1.Event))
		return nil
	}); err != nil {
		return err
	}
	return s.AddConversionFunc((*eventsv1.Event)(nil), (*corev1.Event)(nil), func(a, b any, _ conversion.Scope) error {
		EventsV1ToCoreEvent(a.(*eventsv1.Event), b.(*corev1.Event))
		return nil
	})
}

// CoreEventToEventsV1 fills out from in.
func CoreEventToEventsV1(in *corev1.Event, out *eventsv1.Event) {
	out.ObjectMeta = in.ObjectMeta
	out.EventTime = in.EventTime
	out.Series = nil
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.Action = in.Action
	out.Reason = in.Reason
	out.Regarding = in.InvolvedObject
	out.Related = in.Related
	out.Note = in.Message
	out.Type = in.Type
	out.DeprecatedSource = in.Source
	out.DeprecatedFirstTimestamp = in.FirstTimestamp
	out.DeprecatedLastTimestamp = in.LastTimestamp
	out.DeprecatedCount = in.Count
}

// EventsV1ToCoreEvent fills out from in.
func EventsV1ToCoreEvent(in *eventsv1.Event, out *corev1.Event) {
	out.ObjectMeta = in.ObjectMeta
	out.EventTime = in.EventTime
	out.Series = nil
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.Action = in.Action
	out.Reason = in.Reason
	out.InvolvedObject = in.Regarding
	out.Related = in.Related
	out.Message = in.Note
	out.Type = in.Type
	out.Source = in.DeprecatedSource
	out.FirstTimestamp = in.DeprecatedFirstTimestamp
	out.LastTimestamp = in.DeprecatedLastTimestamp
	out.Count = in.DeprecatedCount
}
