package printers

import (
	"cmp"
	"slices"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var flowSchemaCells = eachObject(func(now time.Time, fs *flowcontrolv1.FlowSchema) []interface{} {
	method := none
	if fs.Spec.DistinguisherMethod != nil {
		method = string(fs.Spec.DistinguisherMethod.Type)
	}
	missing := "?"
	for _, c := range fs.Status.Conditions {
		if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
			missing = string(c.Status)
			break
		}
	}
	return []interface{}{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method, since(now, fs.CreationTimestamp), missing}
})

// flowSchemaPrinter: a list is printed in matching order (precedence,
// then name), as upstream prints it.
var flowSchemaPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("PriorityLevel", "string", flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]),
		col("MatchingPrecedence", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]),
		col("DistinguisherMethod", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]),
		ageColumn(),
		col("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
	},
	rows: func(now time.Time, objs []runtime.Object, fromList bool) ([]metav1.TableRow, error) {
		if fromList {
			objs = slices.Clone(objs)
			slices.SortStableFunc(objs, func(a, b runtime.Object) int {
				fa, oka := a.(*flowcontrolv1.FlowSchema)
				fb, okb := b.(*flowcontrolv1.FlowSchema)
				if !oka || !okb {
					return 0
				}
				return cmp.Or(cmp.Compare(fa.Spec.MatchingPrecedence, fb.Spec.MatchingPrecedence), cmp.Compare(fa.Name, fb.Name))
			})
		}
		return flowSchemaCells(now, objs, fromList)
	},
}

var priorityLevelConfigurationPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Type", "string", flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]),
		col("NominalConcurrencyShares", "string", flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]),
		col("Queues", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queues"]),
		col("HandSize", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["handSize"]),
		col("QueueLengthLimit", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queueLengthLimit"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, pl *flowcontrolv1.PriorityLevelConfiguration) []interface{} {
		var shares, queues, handSize, queueLength interface{} = none, none, none, none
		if l := pl.Spec.Limited; l != nil {
			if l.NominalConcurrencyShares != nil {
				shares = int64(*l.NominalConcurrencyShares)
			}
			if q := l.LimitResponse.Queuing; q != nil {
				queues, handSize, queueLength = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
			}
		}
		return []interface{}{pl.Name, string(pl.Spec.Type), shares, queues, handSize, queueLength, since(now, pl.CreationTimestamp)}
	}),
}
