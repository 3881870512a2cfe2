package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"sort"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// metricFailure is why one metric gave no proposal: the ScalingActive
// condition it sets, and the error.
type metricFailure struct {
	reason, message string
	err             error
}

// computeReplicas asks every metric for a count and takes the highest.
// It returns -1 (and sets ScalingActive False from the first failure)
// when every metric failed, or when some failed and the others would
// scale down; otherwise a failure is returned beside the count.
func (c *Controller) computeReplicas(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, sc *autoscalingv1.Scale) (int32, string, []autoscalingv2.MetricStatus, error) {
	selector, err := c.targetSelector(hpa, sc.Status.Selector)
	if err != nil {
		return -1, "", nil, err
	}
	statuses := make([]autoscalingv2.MetricStatus, len(hpa.Spec.Metrics))
	var (
		replicas int32
		name     string
		failed   int
		first    *metricFailure
	)
	for i, spec := range hpa.Spec.Metrics {
		n, metricName, f := c.computeMetric(ctx, hpa, spec, sc.Spec.Replicas, sc.Status.Replicas, selector, &statuses[i])
		if f != nil {
			if first == nil {
				first = f
			}
			failed++
			continue
		}
		if replicas == 0 || n > replicas {
			replicas, name = n, metricName
		}
	}
	var invalid error
	if first != nil {
		invalid = fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %w", failed, len(hpa.Spec.Metrics), first.err)
	}
	if failed >= len(hpa.Spec.Metrics) || (failed > 0 && replicas < sc.Spec.Replicas) {
		if first != nil {
			setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, first.reason, first.message, c.clock.Now())
		}
		if invalid == nil {
			invalid = errors.New("the HPA has no metrics")
		}
		return -1, "", statuses, invalid
	}
	setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from "+name, c.clock.Now())
	return replicas, name, statuses, invalid
}

// targetSelector parses the target's selector and refuses one whose pods
// another HPA of the namespace also selects.
func (c *Controller) targetSelector(hpa *autoscalingv2.HorizontalPodAutoscaler, raw string) (labels.Selector, error) {
	now := c.clock.Now()
	if raw == "" {
		msg := "selector is required"
		c.recorder.Event(hpa, corev1.EventTypeWarning, "SelectorRequired", msg)
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector", now)
		return nil, errors.New(msg)
	}
	selector, err := labels.Parse(raw)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		c.recorder.Event(hpa, corev1.EventTypeWarning, "InvalidSelector", msg)
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", msg, now)
		return nil, errors.New(msg)
	}
	key, _ := cache.MetaNamespaceKeyFunc(hpa)
	pods, err := c.pods.Pods(hpa.Namespace).List(selector)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.selectors[key] = selector
	var others []string
	for k, s := range c.selectors {
		ns, name, _ := cache.SplitMetaNamespaceKey(k)
		if k == key || ns != hpa.Namespace {
			continue
		}
		for _, p := range pods {
			if s.Matches(labels.Set(p.Labels)) {
				others = append(others, name)
				break
			}
		}
	}
	c.mu.Unlock()
	if len(others) > 0 {
		sort.Strings(others)
		msg := fmt.Sprintf("pods by selector %v are controlled by more than one HPA (e.g. %v)", raw, append([]string{hpa.Name}, others[0]))
		c.recorder.Event(hpa, corev1.EventTypeWarning, "AmbiguousSelector", msg)
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", msg, now)
		return nil, errors.New(msg)
	}
	return selector, nil
}

// fail records the event reason of a metric that failed and returns the
// failure with its ScalingActive condition.
func (c *Controller) fail(hpa *autoscalingv2.HorizontalPodAutoscaler, reason string, cause, wrapped error) *metricFailure {
	c.recorder.Event(hpa, corev1.EventTypeWarning, reason, cause.Error())
	return &metricFailure{reason: reason, message: "the HPA was unable to compute the replica count: " + cause.Error(), err: wrapped}
}

// computeMetric is one metric's proposal; status receives its current value.
func (c *Controller) computeMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, spec autoscalingv2.MetricSpec, specReplicas, statusReplicas int32, selector labels.Selector, status *autoscalingv2.MetricStatus) (int32, string, *metricFailure) {
	tol := c.tolerances(hpa)
	ns := hpa.Namespace
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			break
		}
		cur, n, name, err := c.resourceMetric(ctx, specReplicas, spec.Resource.Target, spec.Resource.Name, "", tol, ns, selector)
		if err != nil {
			return 0, "", c.fail(hpa, "FailedGetResourceMetric", err, fmt.Errorf("failed to get %s resource metric value: %w", spec.Resource.Name, err))
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, Resource: &autoscalingv2.ResourceMetricStatus{Name: spec.Resource.Name, Current: cur}}
		return n, name, nil
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			break
		}
		cr := spec.ContainerResource
		cur, n, name, err := c.resourceMetric(ctx, specReplicas, cr.Target, cr.Name, cr.Container, tol, ns, selector)
		if err != nil {
			return 0, "", c.fail(hpa, "FailedGetContainerResourceMetric", err, fmt.Errorf("failed to get %s container metric value: %w", cr.Container, err))
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{Name: cr.Name, Container: cr.Container, Current: cur}}
		return n, name, nil
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil {
			break
		}
		ms, err := metav1.LabelSelectorAsSelector(spec.Pods.Metric.Selector)
		if err == nil && spec.Pods.Target.AverageValue == nil {
			err = errors.New("invalid pods metric source: no average value target was set")
		}
		if err != nil {
			return 0, "", c.fail(hpa, "FailedGetPodsMetric", err, fmt.Errorf("failed to get pods metric value: %w", err))
		}
		n, avg, _, err := c.calc.podsMetricReplicas(ctx, specReplicas, spec.Pods.Target.AverageValue.MilliValue(), spec.Pods.Metric.Name, tol, ns, selector, ms)
		if err != nil {
			return 0, "", c.fail(hpa, "FailedGetPodsMetric", err, fmt.Errorf("failed to get pods metric value: %w", err))
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, Pods: &autoscalingv2.PodsMetricStatus{
			Metric:  spec.Pods.Metric,
			Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(avg, resource.DecimalSI)},
		}}
		return n, "pods metric " + spec.Pods.Metric.Name, nil
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object == nil {
			break
		}
		o := spec.Object
		ms, err := metav1.LabelSelectorAsSelector(o.Metric.Selector)
		if err != nil {
			return 0, "", c.fail(hpa, "FailedGetObjectMetric", err, fmt.Errorf("failed to get object metric value: %w", err))
		}
		st := &autoscalingv2.ObjectMetricStatus{DescribedObject: o.DescribedObject, Metric: o.Metric}
		var (
			n    int32
			v    int64
			name string
		)
		switch {
		case o.Target.Type == autoscalingv2.ValueMetricType && o.Target.Value != nil:
			n, v, err = c.calc.objectValueReplicas(ctx, specReplicas, o.Target.Value.MilliValue(), o.Metric.Name, tol, ns, &o.DescribedObject, selector, ms)
			st.Current.Value = resource.NewMilliQuantity(v, resource.DecimalSI)
			name = fmt.Sprintf("%s metric %s", o.DescribedObject.Kind, o.Metric.Name)
		case o.Target.Type == autoscalingv2.AverageValueMetricType && o.Target.AverageValue != nil:
			n, v, _, err = c.calc.objectAverageReplicas(ctx, statusReplicas, o.Target.AverageValue.MilliValue(), o.Metric.Name, tol, ns, &o.DescribedObject, ms)
			st.Current.AverageValue = resource.NewMilliQuantity(v, resource.DecimalSI)
			name = fmt.Sprintf("%s metric %s", o.DescribedObject.Kind, o.Metric.Name)
		default:
			err = errors.New("invalid object metric source: neither a value target nor an average value target was set")
		}
		if err != nil {
			return 0, "", c.fail(hpa, "FailedGetObjectMetric", err, fmt.Errorf("failed to get object metric value: %w", err))
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, Object: st}
		return n, name, nil
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External == nil {
			break
		}
		e := spec.External
		st := &autoscalingv2.ExternalMetricStatus{Metric: e.Metric}
		var (
			n   int32
			v   int64
			err error
		)
		switch {
		case e.Target.AverageValue != nil:
			n, v, _, err = c.calc.externalAverageReplicas(ctx, statusReplicas, e.Target.AverageValue.MilliValue(), e.Metric.Name, tol, ns, e.Metric.Selector)
			st.Current.AverageValue = resource.NewMilliQuantity(v, resource.DecimalSI)
		case e.Target.Value != nil:
			n, v, err = c.calc.externalValueReplicas(ctx, specReplicas, e.Target.Value.MilliValue(), e.Metric.Name, tol, ns, e.Metric.Selector, selector)
			st.Current.Value = resource.NewMilliQuantity(v, resource.DecimalSI)
		default:
			err = errors.New("invalid external metric source: neither a value target nor an average value target was set")
		}
		if err != nil {
			return 0, "", c.fail(hpa, "FailedGetExternalMetric", err, fmt.Errorf("failed to get %s external metric value: %w", e.Metric.Name, err))
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, External: st}
		return n, fmt.Sprintf("external metric %s(%+v)", e.Metric.Name, e.Metric.Selector), nil
	}
	err := fmt.Errorf("unknown metric source type %q", string(spec.Type))
	return 0, "", c.fail(hpa, "InvalidMetricSourceType", err, err)
}

// resourceMetric is the proposal of a resource or container-resource
// metric and its current value.
func (c *Controller) resourceMetric(ctx context.Context, current int32, target autoscalingv2.MetricTarget, res corev1.ResourceName, container string, tol tolerances, ns string, selector labels.Selector) (autoscalingv2.MetricValueStatus, int32, string, error) {
	if target.AverageValue != nil {
		n, avg, _, err := c.calc.resourceAverageReplicas(ctx, current, target.AverageValue.MilliValue(), res, tol, ns, selector, container)
		if err != nil {
			return autoscalingv2.MetricValueStatus{}, 0, "", fmt.Errorf("failed to get %s usage: %w", res, err)
		}
		q := quantity(res, avg)
		return autoscalingv2.MetricValueStatus{AverageValue: &q}, n, fmt.Sprintf("%s resource", res), nil
	}
	if target.AverageUtilization == nil {
		return autoscalingv2.MetricValueStatus{}, 0, "", errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	n, percent, avg, _, err := c.calc.resourceUtilizationReplicas(ctx, current, *target.AverageUtilization, res, tol, ns, selector, container)
	if err != nil {
		return autoscalingv2.MetricValueStatus{}, 0, "", fmt.Errorf("failed to get %s utilization: %w", res, err)
	}
	name := fmt.Sprintf("%s resource utilization (percentage of request)", res)
	if container != "" {
		name = fmt.Sprintf("%s container resource utilization (percentage of request)", res)
	}
	q := quantity(res, avg)
	return autoscalingv2.MetricValueStatus{AverageUtilization: &percent, AverageValue: &q}, n, name, nil
}

// quantity formats a milli-value as upstream does: memory in binary units.
func quantity(res corev1.ResourceName, milli int64) resource.Quantity {
	f := resource.DecimalSI
	if res == corev1.ResourceMemory {
		f = resource.BinarySI
	}
	return *resource.NewMilliQuantity(milli, f)
}
