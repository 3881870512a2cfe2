// Package events owns defaulting and validation for the events.k8s.io/v1
// kind the k1s apiserver serves: Event.
//
// It works directly on the versioned k8s.io/api/events/v1 types and applies
// the strict rules upstream Kubernetes v1.37 uses for writes through the
// events.k8s.io API: eventTime, reportingController, reportingInstance,
// action and reason are required, type is Normal or Warning, the deprecated
// core-compatibility fields must stay unset, and almost everything is
// immutable after creation.
//
// Field paths: upstream validates events.k8s.io Events after converting them
// to the core Event type and so reports core field names. k1s keeps those
// paths so clients see the same errors: regarding is reported as
// involvedObject, note as message, deprecatedSource as source,
// deprecatedFirstTimestamp as firstTimestamp, deprecatedLastTimestamp as
// lastTimestamp and deprecatedCount as count. The code is written for k1s.
package events
