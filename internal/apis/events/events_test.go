package events

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validEvent() *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "web-0.17a", Namespace: "default", ResourceVersion: "1"},
		EventTime:           metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)),
		ReportingController: "k1s.io/agent",
		ReportingInstance:   "agent-node-a",
		Action:              "Pulling",
		Reason:              "Pulling",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0"},
		Note:                "pulling image",
		Type:                corev1.EventTypeNormal,
	}
}

func TestValidateEvent(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*eventsv1.Event)
		want   []errKey
	}{
		{name: "valid", mutate: func(*eventsv1.Event) {}},
		{
			name: "cluster-scoped object from kube-system",
			mutate: func(ev *eventsv1.Event) {
				ev.Namespace = "kube-system"
				ev.Regarding = corev1.ObjectReference{Kind: "Node", Name: "a"}
			},
		},
		{
			name: "cluster-scoped object from other namespace",
			mutate: func(ev *eventsv1.Event) {
				ev.Namespace = "apps"
				ev.Regarding = corev1.ObjectReference{Kind: "Node", Name: "a"}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "involvedObject.namespace")},
		},
		{
			name: "missing required fields",
			mutate: func(ev *eventsv1.Event) {
				ev.ReportingController, ev.ReportingInstance, ev.Action, ev.Reason = "", "", "", ""
			},
			want: []errKey{
				e(field.ErrorTypeRequired, "reportingController"),
				// The empty name also fails the qualified-name format twice,
				// exactly as upstream reports it.
				e(field.ErrorTypeInvalid, "reportingController"),
				e(field.ErrorTypeInvalid, "reportingController"),
				e(field.ErrorTypeRequired, "reportingInstance"),
				e(field.ErrorTypeRequired, "action"),
				e(field.ErrorTypeRequired, "reason"),
			},
		},
		{
			name:   "note too long",
			mutate: func(ev *eventsv1.Event) { ev.Note = strings.Repeat("x", NoteLengthLimit+1) },
			want:   []errKey{e(field.ErrorTypeInvalid, "message")},
		},
		{
			name:   "bad type",
			mutate: func(ev *eventsv1.Event) { ev.Type = "Fatal" },
			want:   []errKey{e(field.ErrorTypeInvalid, "type")},
		},
		{
			name: "no event time (falls back to legacy namespace rule)",
			mutate: func(ev *eventsv1.Event) {
				ev.EventTime = metav1.MicroTime{}
			},
			want: []errKey{e(field.ErrorTypeRequired, "eventTime")},
		},
		{
			name: "deprecated fields set",
			mutate: func(ev *eventsv1.Event) {
				ev.DeprecatedCount = 3
				ev.DeprecatedSource = corev1.EventSource{Component: "kubelet"}
				ev.DeprecatedFirstTimestamp = metav1.Now()
				ev.DeprecatedLastTimestamp = metav1.Now()
			},
			want: []errKey{
				e(field.ErrorTypeInvalid, "count"),
				e(field.ErrorTypeInvalid, "source"),
				e(field.ErrorTypeInvalid, "firstTimestamp"),
				e(field.ErrorTypeInvalid, "lastTimestamp"),
			},
		},
		{
			name:   "bad series",
			mutate: func(ev *eventsv1.Event) { ev.Series = &eventsv1.EventSeries{Count: 1} },
			want: []errKey{
				e(field.ErrorTypeInvalid, "series.count"),
				e(field.ErrorTypeRequired, "series.lastObservedTime"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := validEvent()
			tc.mutate(ev)
			expectErrs(t, ValidateEvent(ev), tc.want...)
		})
	}
}

func TestValidateEventUpdate(t *testing.T) {
	old := validEvent()
	series := old.DeepCopy()
	series.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Now())}
	series.EventTime = metav1.NewMicroTime(old.EventTime.Add(500 * time.Nanosecond))
	expectErrs(t, ValidateEventUpdate(series, old))

	bad := old.DeepCopy()
	bad.Note = "rewritten"
	bad.Reason = "Other"
	bad.Regarding.Name = "web-1"
	bad.EventTime = metav1.NewMicroTime(old.EventTime.Add(time.Second))
	bad.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(time.Now())}
	expectErrs(t, ValidateEventUpdate(bad, old),
		e(field.ErrorTypeInvalid, "message"),
		e(field.ErrorTypeInvalid, "reason"),
		e(field.ErrorTypeInvalid, "involvedObject"),
		e(field.ErrorTypeInvalid, "eventTime"),
		e(field.ErrorTypeInvalid, "series.count"))
}
