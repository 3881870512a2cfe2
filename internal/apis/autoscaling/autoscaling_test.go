package autoscaling

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateScale(t *testing.T) {
	tests := []struct {
		name  string
		scale autoscalingv1.Scale
		want  []errKey
	}{
		{name: "zero replicas", scale: autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 0}}},
		{name: "some replicas, odd metadata ignored", scale: autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "Not A Name!"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}},
		{name: "negative replicas", scale: autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: -1}}, want: []errKey{e(field.ErrorTypeInvalid, "spec.replicas")}},
		{
			name: "managed field without operation",
			scale: autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl", FieldsType: "FieldsV1"},
			}}},
			want: []errKey{e(field.ErrorTypeRequired, "metadata.managedFields[0].operation")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, ValidateScale(&tc.scale), tc.want...)
			expectErrs(t, ValidateScaleUpdate(&tc.scale, &autoscalingv1.Scale{}), tc.want...)
		})
	}
}
