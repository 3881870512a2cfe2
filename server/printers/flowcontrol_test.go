package printers

import (
	"reflect"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestFlowControlCells(t *testing.T) {
	schemas := schema.GroupResource{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}
	levels := schema.GroupResource{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, CreationTimestamp: ago(5 * time.Second)}
	}
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: meta("fs"), Spec: flowcontrolv1.FlowSchemaSpec{
		MatchingPrecedence:         800,
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-high"},
		DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByNamespaceType},
	}, Status: flowcontrolv1.FlowSchemaStatus{Conditions: []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse}}}}
	if got, want := cells(t, schemas, fs), []interface{}{"fs", "workload-high", int64(800), "ByNamespace", "5s", "False"}; !reflect.DeepEqual(got, want) {
		t.Errorf("flow schema cells = %#v, want %#v", got, want)
	}
	// A list prints in matching order.
	list := &flowcontrolv1.FlowSchemaList{Items: []flowcontrolv1.FlowSchema{
		{ObjectMeta: meta("b"), Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 500}},
		{ObjectMeta: meta("c"), Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 2}},
		{ObjectMeta: meta("a"), Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 500}},
	}}
	var order []interface{}
	for _, r := range convert(t, schemas, list, nil).Rows {
		order = append(order, r.Cells[0])
	}
	if want := []interface{}{"c", "a", "b"}; !reflect.DeepEqual(order, want) {
		t.Errorf("list order = %v, want %v", order, want)
	}

	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: meta("pl"), Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](40), LimitResponse: flowcontrolv1.LimitResponse{
			Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 128, HandSize: 6, QueueLengthLimit: 50},
		}},
	}}
	if got, want := cells(t, levels, pl), []interface{}{"pl", "Limited", int64(40), int64(128), int64(6), int64(50), "5s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("level cells = %#v, want %#v", got, want)
	}
	exempt := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: meta("exempt"), Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}}
	if got, want := cells(t, levels, exempt), []interface{}{"exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "5s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("exempt cells = %#v, want %#v", got, want)
	}
}
