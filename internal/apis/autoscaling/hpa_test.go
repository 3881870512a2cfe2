package autoscaling

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func validHPA() *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "1"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    5,
			Behavior:       &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}},
		},
	}
	DefaultHorizontalPodAutoscaler(h)
	return h
}

func TestDefaultHorizontalPodAutoscaler(t *testing.T) {
	h := validHPA()
	if *h.Spec.MinReplicas != 1 {
		t.Errorf("minReplicas = %d", *h.Spec.MinReplicas)
	}
	if m := h.Spec.Metrics; len(m) != 1 || m[0].Resource.Name != corev1.ResourceCPU || *m[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("metrics = %+v", m)
	}
	b := h.Spec.Behavior
	if len(b.ScaleUp.Policies) != 2 || *b.ScaleUp.StabilizationWindowSeconds != 0 || *b.ScaleUp.SelectPolicy != autoscalingv2.MaxChangePolicySelect {
		t.Errorf("scaleUp = %+v", b.ScaleUp)
	}
	if *b.ScaleDown.StabilizationWindowSeconds != 60 || len(b.ScaleDown.Policies) != 1 || b.ScaleDown.Policies[0].Value != 100 {
		t.Errorf("scaleDown = %+v", b.ScaleDown)
	}
	// Without a behavior none is made up.
	bare := &autoscalingv2.HorizontalPodAutoscaler{}
	DefaultHorizontalPodAutoscaler(bare)
	if bare.Spec.Behavior != nil {
		t.Errorf("behavior = %+v", bare.Spec.Behavior)
	}
}

func TestValidateHorizontalPodAutoscaler(t *testing.T) {
	external := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("10"))}}}
	tests := []struct {
		name   string
		mutate func(*autoscalingv2.HorizontalPodAutoscaler)
		want   []errKey
	}{
		{name: "valid", mutate: func(*autoscalingv2.HorizontalPodAutoscaler) {}},
		{name: "no max", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 0 },
			want: []errKey{e(field.ErrorTypeRequired, "spec.maxReplicas"), e(field.ErrorTypeInvalid, "spec.maxReplicas")}},
		{name: "max below min", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](6) },
			want: []errKey{e(field.ErrorTypeInvalid, "spec.maxReplicas")}},
		{name: "scale to zero needs an object or external metric", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](0) },
			want: []errKey{e(field.ErrorTypeForbidden, "spec.metrics")}},
		{name: "scale to zero on an external metric", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.MinReplicas = ptr.To[int32](0)
			h.Spec.Metrics = append(h.Spec.Metrics, external)
		}},
		{name: "core target group", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.APIVersion = "v1" },
			want: []errKey{e(field.ErrorTypeInvalid, "spec.scaleTargetRef.apiVersion")}},
		{name: "replication controller in the core group", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "ReplicationController", Name: "rc"}
		}},
		{name: "no target name", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = "" },
			want: []errKey{e(field.ErrorTypeRequired, "spec.scaleTargetRef.name")}},
		{name: "utilization and value", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[0].Resource.Target.AverageValue = ptr.To(resource.MustParse("100m"))
		}, want: []errKey{e(field.ErrorTypeForbidden, "spec.metrics[0].resource.target.averageValue")}},
		{name: "two sources", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics[0].External = external.External },
			want: []errKey{e(field.ErrorTypeForbidden, "spec.metrics[0].external")}},
		{name: "source missing", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics[0].Resource = nil },
			want: []errKey{e(field.ErrorTypeRequired, "spec.metrics[0].resource")}},
		{name: "container resource without container", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}}
		}, want: []errKey{e(field.ErrorTypeRequired, "spec.metrics[0].containerResource.container")}},
		{name: "bad policy", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior.ScaleDown.Policies = []autoscalingv2.HPAScalingPolicy{{Type: "Nodes", Value: 0, PeriodSeconds: 3600}}
		}, want: []errKey{e(field.ErrorTypeNotSupported, "spec.behavior.scaleDown.policies[0].type"), e(field.ErrorTypeInvalid, "spec.behavior.scaleDown.policies[0].value"),
			e(field.ErrorTypeInvalid, "spec.behavior.scaleDown.policies[0].periodSeconds")}},
		{name: "negative tolerance", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior.ScaleUp.Tolerance = ptr.To(resource.MustParse("-1"))
		}, want: []errKey{e(field.ErrorTypeInvalid, "spec.behavior.scaleUp.tolerance")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := validHPA()
			tc.mutate(h)
			expectErrs(t, ValidateHorizontalPodAutoscaler(h), tc.want...)
		})
	}
	old, h := validHPA(), validHPA()
	old.Spec.ScaleTargetRef.APIVersion = "extensions/v1beta1/x"
	h.Spec.ScaleTargetRef.APIVersion = "extensions/v1beta1/x"
	// An invalid apiVersion stored before is tolerated while it is kept.
	expectErrs(t, ValidateHorizontalPodAutoscalerUpdate(h, old))
	h = validHPA()
	h.Status.DesiredReplicas = -1
	expectErrs(t, ValidateHorizontalPodAutoscalerStatusUpdate(h, old), e(field.ErrorTypeInvalid, "status.desiredReplicas"))
}
