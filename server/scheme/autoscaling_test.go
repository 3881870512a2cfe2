package scheme

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// TestHPAVersions: the internal HorizontalPodAutoscaler is the
// autoscaling/v2 type, autoscaling/v2 is preferred, and an HPA converts to
// autoscaling/v1 and back through the scheme without losing what v1 has no
// field for.
func TestHPAVersions(t *testing.T) {
	internal := schema.GroupVersion{Group: "autoscaling", Version: runtime.APIVersionInternal}
	obj, err := Scheme.New(internal.WithKind("HorizontalPodAutoscaler"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); !ok {
		t.Fatalf("internal HPA is %T", obj)
	}
	if got := Scheme.PrioritizedVersionsForGroup("autoscaling"); len(got) != 2 || got[0] != autoscalingv2.SchemeGroupVersion {
		t.Errorf("autoscaling priority = %v", got)
	}

	v2 := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: map[string]string{"keep": "me"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))},
				}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)},
				}},
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To[int32](30),
				Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}},
			}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 3,
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "Ready"}},
		},
	}
	out, err := Scheme.ConvertToVersion(v2.DeepCopy(), autoscalingv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	v1, ok := out.(*autoscalingv1.HorizontalPodAutoscaler)
	if !ok {
		t.Fatalf("v1 form is %T", out)
	}
	if v1.Spec.TargetCPUUtilizationPercentage == nil || *v1.Spec.TargetCPUUtilizationPercentage != 60 {
		t.Errorf("targetCPUUtilizationPercentage = %v", v1.Spec.TargetCPUUtilizationPercentage)
	}
	for _, k := range []string{"autoscaling.alpha.kubernetes.io/metrics", "autoscaling.alpha.kubernetes.io/behavior", "autoscaling.alpha.kubernetes.io/conditions", "keep"} {
		if _, ok := v1.Annotations[k]; !ok {
			t.Errorf("v1 annotations %v lack %s", v1.Annotations, k)
		}
	}
	if v1.APIVersion != "autoscaling/v1" || v1.Kind != "HorizontalPodAutoscaler" {
		t.Errorf("v1 TypeMeta = %+v", v1.TypeMeta)
	}

	back, err := Scheme.ConvertToVersion(v1, internal)
	if err != nil {
		t.Fatal(err)
	}
	got := back.(*autoscalingv2.HorizontalPodAutoscaler)
	got.TypeMeta = metav1.TypeMeta{}
	if diff := cmp.Diff(v2, got); diff != "" {
		t.Errorf("v2 → v1 → v2 changed the HPA (-want +got):\n%s", diff)
	}

	// A bare v1 HPA targets 80 % CPU once converted; minReplicas is
	// defaulted on the v1 object.
	bare := &autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3}}
	Scheme.Default(bare)
	if bare.Spec.MinReplicas == nil || *bare.Spec.MinReplicas != 1 {
		t.Errorf("v1 minReplicas = %v", bare.Spec.MinReplicas)
	}
	var conv autoscalingv2.HorizontalPodAutoscaler
	if err := Scheme.Convert(bare, &conv, nil); err != nil {
		t.Fatal(err)
	}
	if len(conv.Spec.Metrics) != 1 || conv.Spec.Metrics[0].Resource == nil || *conv.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("metrics of a bare v1 HPA = %+v", conv.Spec.Metrics)
	}

	// Lists convert item by item.
	list := &autoscalingv2.HorizontalPodAutoscalerList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []autoscalingv2.HorizontalPodAutoscaler{*v2}}
	lout, err := Scheme.ConvertToVersion(list, autoscalingv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	if l := lout.(*autoscalingv1.HorizontalPodAutoscalerList); l.ResourceVersion != "7" || len(l.Items) != 1 || l.Items[0].Name != "web" {
		t.Errorf("v1 list = %+v", l)
	}
}
