package autoscaling

import (
	"encoding/json"
	"maps"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// autoscaling/v1 holds only a CPU utilization target; the rest of an
// autoscaling/v2 HPA travels in these annotations, as upstream keeps it.
const (
	MetricSpecsAnnotation                       = "autoscaling.alpha.kubernetes.io/metrics"
	MetricStatusesAnnotation                    = "autoscaling.alpha.kubernetes.io/current-metrics"
	HorizontalPodAutoscalerConditionsAnnotation = "autoscaling.alpha.kubernetes.io/conditions"
	BehaviorSpecsAnnotation                     = "autoscaling.alpha.kubernetes.io/behavior"
	ToleranceScaleDownAnnotation                = "autoscaling.alpha.kubernetes.io/scale-down-tolerance"
	ToleranceScaleUpAnnotation                  = "autoscaling.alpha.kubernetes.io/scale-up-tolerance"
)

var roundTripAnnotations = []string{
	MetricSpecsAnnotation, BehaviorSpecsAnnotation, ToleranceScaleDownAnnotation,
	ToleranceScaleUpAnnotation, MetricStatusesAnnotation, HorizontalPodAutoscalerConditionsAnnotation,
}

// dropRoundTripAnnotations returns annotations without the conversion's
// own, copying the map only when one is present.
func dropRoundTripAnnotations(in map[string]string) map[string]string {
	for _, k := range roundTripAnnotations {
		if _, ok := in[k]; ok {
			out := maps.Clone(in)
			for _, k := range roundTripAnnotations {
				delete(out, k)
			}
			return out
		}
	}
	return in
}

func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil &&
		m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

// HPAToV1 converts an autoscaling/v2 HPA to autoscaling/v1: the CPU
// utilization target and current value as fields, every other metric, the
// behavior and the conditions as annotations.
func HPAToV1(in *autoscalingv2.HorizontalPodAutoscaler, out *autoscalingv1.HorizontalPodAutoscaler) error {
	out.ObjectMeta = in.ObjectMeta
	out.Annotations = dropRoundTripAnnotations(in.Annotations)
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
		MinReplicas:    in.Spec.MinReplicas,
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) {
			u := *m.Resource.Target.AverageUtilization
			out.Spec.TargetCPUUtilizationPercentage = &u
			break
		}
	}
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration,
		LastScaleTime:      in.Status.LastScaleTime,
		CurrentReplicas:    in.Status.CurrentReplicas,
		DesiredReplicas:    in.Status.DesiredReplicas,
	}
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			u := *m.Resource.Current.AverageUtilization
			out.Status.CurrentCPUUtilizationPercentage = &u
		}
	}

	var other []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if !isCPUUtilization(m) {
			other = append(other, metricSpecToV1(m))
		}
	}
	current := make([]autoscalingv1.MetricStatus, 0, len(in.Status.CurrentMetrics))
	for _, m := range in.Status.CurrentMetrics {
		current = append(current, metricStatusToV1(m))
	}
	conds := make([]autoscalingv1.HorizontalPodAutoscalerCondition, 0, len(in.Status.Conditions))
	for _, c := range in.Status.Conditions {
		conds = append(conds, autoscalingv1.HorizontalPodAutoscalerCondition{
			Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
			ObservedGeneration: c.ObservedGeneration,
		})
	}
	copied := false
	set := func(key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if !copied {
			out.Annotations = maps.Clone(out.Annotations)
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			copied = true
		}
		out.Annotations[key] = string(b)
		return nil
	}
	if len(other) > 0 {
		if err := set(MetricSpecsAnnotation, other); err != nil {
			return err
		}
	}
	if len(in.Status.CurrentMetrics) > 0 {
		if err := set(MetricStatusesAnnotation, current); err != nil {
			return err
		}
	}
	if in.Spec.Behavior != nil {
		if err := set(BehaviorSpecsAnnotation, behaviorAnnotationOf(in.Spec.Behavior)); err != nil {
			return err
		}
	}
	if len(in.Status.Conditions) > 0 {
		if err := set(HorizontalPodAutoscalerConditionsAnnotation, conds); err != nil {
			return err
		}
	}
	return nil
}

// HPAToV2 converts an autoscaling/v1 HPA to autoscaling/v2, taking back
// what HPAToV1 put in annotations; without any metric the HPA targets
// 80 % CPU utilization.
func HPAToV2(in *autoscalingv1.HorizontalPodAutoscaler, out *autoscalingv2.HorizontalPodAutoscaler) error {
	out.ObjectMeta = in.ObjectMeta
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
		MinReplicas:    in.Spec.MinReplicas,
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	if t := in.Spec.TargetCPUUtilizationPercentage; t != nil {
		u := *t
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(u)}
	}
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration,
		LastScaleTime:      in.Status.LastScaleTime,
		CurrentReplicas:    in.Status.CurrentReplicas,
		DesiredReplicas:    in.Status.DesiredReplicas,
	}
	if c := in.Status.CurrentCPUUtilizationPercentage; c != nil {
		u := *c
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type:     autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &u}},
		}}
	}

	ann := in.Annotations
	if enc, ok := ann[MetricSpecsAnnotation]; ok {
		var other []autoscalingv1.MetricSpec
		if json.Unmarshal([]byte(enc), &other) == nil {
			metrics := make([]autoscalingv2.MetricSpec, 0, len(other)+1)
			for _, m := range other {
				metrics = append(metrics, metricSpecToV2(m))
			}
			if len(out.Spec.Metrics) > 0 {
				metrics = append(metrics, out.Spec.Metrics[0])
			}
			out.Spec.Metrics = metrics
		}
	}
	if enc, ok := ann[BehaviorSpecsAnnotation]; ok {
		var b behaviorAnnotation
		if json.Unmarshal([]byte(enc), &b) == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = b.toV2()
		}
	}
	if enc, ok := ann[MetricStatusesAnnotation]; ok {
		var current []autoscalingv1.MetricStatus
		if json.Unmarshal([]byte(enc), &current) == nil {
			out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, 0, len(current))
			for _, m := range current {
				out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, metricStatusToV2(m))
			}
		}
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(DefaultCPUUtilization)}
	}
	if enc, ok := ann[HorizontalPodAutoscalerConditionsAnnotation]; ok {
		var conds []autoscalingv1.HorizontalPodAutoscalerCondition
		if json.Unmarshal([]byte(enc), &conds) == nil {
			out.Status.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, 0, len(conds))
			for _, c := range conds {
				out.Status.Conditions = append(out.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
					Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
					LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
					ObservedGeneration: c.ObservedGeneration,
				})
			}
		}
	}
	out.Annotations = dropRoundTripAnnotations(ann)
	return nil
}

func cpuUtilization(u int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &u},
		},
	}
}

func metricSpecToV1(m autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		o := &autoscalingv1.ObjectMetricSource{
			Target:       autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName:   s.Metric.Name,
			Selector:     s.Metric.Selector,
			AverageValue: s.Target.AverageValue,
		}
		if s.Target.Value != nil {
			o.TargetValue = *s.Target.Value
		}
		out.Object = o
	}
	if s := m.Pods; s != nil {
		p := &autoscalingv1.PodsMetricSource{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Target.AverageValue != nil {
			p.TargetAverageValue = *s.Target.AverageValue
		}
		out.Pods = p
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: s.Name, TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: s.Name, Container: s.Container, TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricSource{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector, TargetValue: s.Target.Value, TargetAverageValue: s.Target.AverageValue}
	}
	return out
}

func metricSpecToV2(m autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, AverageValue: s.AverageValue}
		if s.AverageValue == nil {
			v := s.TargetValue
			t.Value = &v
		} else {
			t.Type = autoscalingv2.AverageValueMetricType
			if !s.TargetValue.IsZero() {
				v := s.TargetValue
				t.Value = &v
			}
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Target:          t,
		}
	}
	if s := m.Pods; s != nil {
		v := s.TargetAverageValue
		out.Pods = &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v},
		}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: s.Name, Target: resourceTarget(s.TargetAverageUtilization, s.TargetAverageValue)}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: s.Name, Container: s.Container, Target: resourceTarget(s.TargetAverageUtilization, s.TargetAverageValue)}
	}
	if s := m.External; s != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: s.TargetValue, AverageValue: s.TargetAverageValue}
		if s.TargetValue == nil {
			t.Type = autoscalingv2.AverageValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Target: t,
		}
	}
	return out
}

func resourceTarget(utilization *int32, averageValue *resource.Quantity) autoscalingv2.MetricTarget {
	t := autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: utilization, AverageValue: averageValue}
	if utilization == nil {
		t.Type = autoscalingv2.AverageValueMetricType
	}
	return t
}

func metricStatusToV1(m autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		o := &autoscalingv1.ObjectMetricStatus{
			Target:     autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName: s.Metric.Name,
			Selector:   s.Metric.Selector,
		}
		if s.Current.Value != nil {
			o.CurrentValue = *s.Current.Value
		}
		if s.Current.AverageValue != nil {
			v := *s.Current.AverageValue
			o.AverageValue = &v
		}
		out.Object = o
	}
	if s := m.Pods; s != nil {
		p := &autoscalingv1.PodsMetricStatus{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Current.AverageValue != nil {
			p.CurrentAverageValue = *s.Current.AverageValue
		}
		out.Pods = p
	}
	if s := m.Resource; s != nil {
		r := &autoscalingv1.ResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			r.CurrentAverageValue = *s.Current.AverageValue
		}
		out.Resource = r
	}
	if s := m.ContainerResource; s != nil {
		r := &autoscalingv1.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			r.CurrentAverageValue = *s.Current.AverageValue
		}
		out.ContainerResource = r
	}
	if s := m.External; s != nil {
		e := &autoscalingv1.ExternalMetricStatus{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector, CurrentAverageValue: s.Current.AverageValue}
		if s.Current.Value != nil {
			e.CurrentValue = *s.Current.Value
		}
		out.External = e
	}
	return out
}

func metricStatusToV2(m autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		v := s.CurrentValue
		out.Object = &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Current:         autoscalingv2.MetricValueStatus{Value: &v, AverageValue: s.AverageValue},
		}
	}
	if s := m.Pods; s != nil {
		v := s.CurrentAverageValue
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: &v},
		}
	}
	if s := m.Resource; s != nil {
		v := s.CurrentAverageValue
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: s.Name, Current: autoscalingv2.MetricValueStatus{AverageValue: &v, AverageUtilization: s.CurrentAverageUtilization}}
	}
	if s := m.ContainerResource; s != nil {
		v := s.CurrentAverageValue
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, Current: autoscalingv2.MetricValueStatus{AverageValue: &v, AverageUtilization: s.CurrentAverageUtilization}}
	}
	if s := m.External; s != nil {
		v := s.CurrentValue
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: &v, AverageValue: s.CurrentAverageValue},
		}
	}
	return out
}

// behaviorAnnotation is the behavior as upstream writes it into the
// annotation: its internal type, without JSON tags, so with Go field names.
// (Reading it back matches names case-insensitively, so a behavior written
// with the autoscaling/v2 names is read too.)
type behaviorAnnotation struct {
	ScaleUp   *rulesAnnotation
	ScaleDown *rulesAnnotation
}

type rulesAnnotation struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *autoscalingv2.ScalingPolicySelect
	Policies                   []policyAnnotation
	Tolerance                  *resource.Quantity
}

type policyAnnotation struct {
	Type          autoscalingv2.HPAScalingPolicyType
	Value         int32
	PeriodSeconds int32
}

func behaviorAnnotationOf(b *autoscalingv2.HorizontalPodAutoscalerBehavior) behaviorAnnotation {
	rules := func(r *autoscalingv2.HPAScalingRules) *rulesAnnotation {
		if r == nil {
			return nil
		}
		out := &rulesAnnotation{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
		for _, p := range r.Policies {
			out.Policies = append(out.Policies, policyAnnotation(p))
		}
		return out
	}
	return behaviorAnnotation{ScaleUp: rules(b.ScaleUp), ScaleDown: rules(b.ScaleDown)}
}

func (b behaviorAnnotation) toV2() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	rules := func(r *rulesAnnotation) *autoscalingv2.HPAScalingRules {
		if r == nil {
			return nil
		}
		out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
		for _, p := range r.Policies {
			out.Policies = append(out.Policies, autoscalingv2.HPAScalingPolicy(p))
		}
		return out
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(b.ScaleUp), ScaleDown: rules(b.ScaleDown)}
}
