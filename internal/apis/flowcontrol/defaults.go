package flowcontrol

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Defaults, upstream's.
const (
	// DefaultMatchingPrecedence is a FlowSchema's matchingPrecedence when unset.
	DefaultMatchingPrecedence int32 = 1000
	// DefaultHandSize, DefaultQueues and DefaultQueueLengthLimit fill an
	// unset queuing configuration.
	DefaultHandSize         int32 = 8
	DefaultQueues           int32 = 64
	DefaultQueueLengthLimit int32 = 50
	// DefaultNominalConcurrencyShares is a limited level's shares when unset.
	DefaultNominalConcurrencyShares int32 = 30
)

// RegisterDefaults adds the FlowSchema and PriorityLevelConfiguration
// defaulters (and their lists') to s.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&flowcontrolv1.FlowSchema{}, func(obj interface{}) {
		DefaultFlowSchemaSpec(&obj.(*flowcontrolv1.FlowSchema).Spec)
	})
	s.AddTypeDefaultingFunc(&flowcontrolv1.FlowSchemaList{}, func(obj interface{}) {
		list := obj.(*flowcontrolv1.FlowSchemaList)
		for i := range list.Items {
			DefaultFlowSchemaSpec(&list.Items[i].Spec)
		}
	})
	s.AddTypeDefaultingFunc(&flowcontrolv1.PriorityLevelConfiguration{}, func(obj interface{}) {
		DefaultPriorityLevelConfiguration(obj.(*flowcontrolv1.PriorityLevelConfiguration))
	})
	s.AddTypeDefaultingFunc(&flowcontrolv1.PriorityLevelConfigurationList{}, func(obj interface{}) {
		list := obj.(*flowcontrolv1.PriorityLevelConfigurationList)
		for i := range list.Items {
			DefaultPriorityLevelConfiguration(&list.Items[i])
		}
	})
	return nil
}

// DefaultFlowSchemaSpec sets matchingPrecedence to 1000 when unset.
func DefaultFlowSchemaSpec(spec *flowcontrolv1.FlowSchemaSpec) {
	if spec.MatchingPrecedence == 0 {
		spec.MatchingPrecedence = DefaultMatchingPrecedence
	}
}

// DefaultPriorityLevelConfiguration fills the exempt and limited
// configurations present: shares and lendable percent (0 for exempt, 30
// and 0 for limited) and the queuing parameters (64 queues, hand size 8,
// queue length limit 50).
func DefaultPriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = ptr.To[int32](0)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = ptr.To[int32](0)
		}
	}
	l := pl.Spec.Limited
	if l == nil {
		return
	}
	if l.NominalConcurrencyShares == nil {
		l.NominalConcurrencyShares = ptr.To(DefaultNominalConcurrencyShares)
	}
	if l.LendablePercent == nil {
		l.LendablePercent = ptr.To[int32](0)
	}
	if q := l.LimitResponse.Queuing; q != nil {
		if q.HandSize == 0 {
			q.HandSize = DefaultHandSize
		}
		if q.Queues == 0 {
			q.Queues = DefaultQueues
		}
		if q.QueueLengthLimit == 0 {
			q.QueueLengthLimit = DefaultQueueLengthLimit
		}
	}
}
