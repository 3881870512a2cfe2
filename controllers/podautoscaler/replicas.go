package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"
)

// tolerances is how far below (down) and above (up) 1 a usage ratio may
// be without causing scaling.
type tolerances struct{ down, up float64 }

func (t tolerances) within(ratio float64) bool {
	return ratio >= 1-t.down && ratio <= 1+t.up
}

func (t tolerances) String() string {
	return fmt.Sprintf("[down:%.1f%%, up:%.1f%%]", t.down*100, t.up*100)
}

// calculator turns metrics into replica counts. Safe for concurrent use.
type calculator struct {
	metrics        MetricsSource
	pods           corelisters.PodLister
	cpuInit        time.Duration
	readinessDelay time.Duration
	clock          clock.PassiveClock
}

// podGroups sorts the target's pods for one metric.
type podGroups struct {
	ready   int
	unready map[string]bool // pending, or (cpu) not yet ready
	missing map[string]bool // running but without a sample
}

// group sorts pods and drops from m the samples that must not count:
// those of deleted or failed pods and of unready ones. It fails when no
// sample is left.
func (c *calculator) group(pods []*corev1.Pod, m PodMetrics, resource corev1.ResourceName) (podGroups, error) {
	g := podGroups{unready: map[string]bool{}, missing: map[string]bool{}}
	now := c.clock.Now()
	ignored := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed {
			ignored[p.Name] = true
			continue
		}
		if p.Status.Phase == corev1.PodPending {
			g.unready[p.Name] = true
			continue
		}
		sample, ok := m[p.Name]
		if !ok {
			g.missing[p.Name] = true
			continue
		}
		if resource == corev1.ResourceCPU && !cpuSampleUsable(p, sample, now, c.cpuInit, c.readinessDelay) {
			g.unready[p.Name] = true
			continue
		}
		g.ready++
	}
	for name := range m {
		if ignored[name] || g.unready[name] {
			delete(m, name)
		}
	}
	if len(m) == 0 {
		return g, errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	return g, nil
}

// cpuSampleUsable tells whether a pod's CPU sample may count. Within the
// CPU initialization period after the pod started, only a ready pod whose
// sample was taken wholly after it became ready counts (start-up CPU is not
// load). Later, a pod counts unless it is not ready and has never been
// ready since its initial readiness delay.
func cpuSampleUsable(p *corev1.Pod, sample PodMetric, now time.Time, cpuInit, readinessDelay time.Duration) bool {
	ready := podCondition(p, corev1.PodReady)
	if ready == nil || p.Status.StartTime == nil {
		return false
	}
	start := p.Status.StartTime.Time
	if start.Add(cpuInit).After(now) {
		return ready.Status != corev1.ConditionFalse && !sample.Timestamp.Before(ready.LastTransitionTime.Add(sample.Window))
	}
	return ready.Status != corev1.ConditionFalse || !start.Add(readinessDelay).After(ready.LastTransitionTime.Time)
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// correct applies upstream's rules for pods without a usable sample to a
// usage ratio computed from the usable ones. When a pod's sample is
// missing, it is assumed to be at the target (fill returns that value) if
// the others are below it and at zero if they are above; unready pods are
// assumed at zero when the others are above. The ratio is then computed
// again (ratioOf) and scaling is skipped if it is now within tolerance
// or points the other way, or if the new count would move the wrong way.
func correct(current int32, ratio float64, m PodMetrics, g podGroups, tol tolerances, fill func(pod string) int64, ratioOf func(PodMetrics) (float64, error)) (int32, error) {
	upWithUnready := len(g.unready) > 0 && ratio > 1
	if !upWithUnready && len(g.missing) == 0 {
		if tol.within(ratio) {
			return current, nil
		}
		return int32(math.Ceil(ratio * float64(g.ready))), nil
	}
	for name := range g.missing {
		switch {
		case ratio < 1:
			m[name] = PodMetric{Value: fill(name)}
		case ratio > 1:
			m[name] = PodMetric{}
		}
	}
	if upWithUnready {
		for name := range g.unready {
			m[name] = PodMetric{}
		}
	}
	newRatio, err := ratioOf(m)
	if err != nil {
		return 0, err
	}
	if tol.within(newRatio) || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1) {
		return current, nil
	}
	n := int32(math.Ceil(newRatio * float64(len(m))))
	if (newRatio < 1 && n > current) || (newRatio > 1 && n < current) {
		return current, nil
	}
	return n, nil
}

// utilization is the usage of the pods with samples and requests as a
// percentage of their requests, its ratio to target, and the average raw
// usage.
func utilization(m PodMetrics, requests map[string]int64, target int32) (ratio float64, percent int32, average int64, err error) {
	var used, requested int64
	n := 0
	for name, s := range m {
		r, ok := requests[name]
		if !ok {
			continue
		}
		used += s.Value
		requested += r
		n++
	}
	if requested == 0 {
		return 0, 0, 0, errors.New("no metrics returned matched known pods")
	}
	percent = int32(used * 100 / requested)
	return float64(percent) / float64(target), percent, used / int64(n), nil
}

// averageUsage is the average sample and its ratio to target.
func averageUsage(m PodMetrics, target int64) (float64, int64) {
	var sum int64
	for _, s := range m {
		sum += s.Value
	}
	avg := sum / int64(len(m))
	return float64(avg) / float64(target), avg
}

func (c *calculator) listPods(namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	pods, err := c.pods.Pods(namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("unable to get pods while calculating replica count: %w", err)
	}
	if len(pods) == 0 {
		return nil, errors.New("no pods returned by selector while calculating replica count")
	}
	return pods, nil
}

// resourceUtilizationReplicas is the count for a Utilization target of a
// resource (of one container when container is set).
func (c *calculator) resourceUtilizationReplicas(ctx context.Context, current, target int32, resource corev1.ResourceName, tol tolerances, namespace string, selector labels.Selector, container string) (replicas, percent int32, average int64, ts time.Time, err error) {
	m, ts, err := c.metrics.ResourceMetric(ctx, resource, namespace, selector, container)
	if err != nil {
		return 0, 0, 0, time.Time{}, fmt.Errorf("unable to get metrics for resource %s: %w", resource, err)
	}
	pods, err := c.listPods(namespace, selector)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	g, err := c.group(pods, m, resource)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	requests, err := podRequests(pods, container, resource)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	ratio, percent, average, err := utilization(m, requests, target)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	fallback := int64(max(100, target))
	replicas, err = correct(current, ratio, m, g, tol,
		func(pod string) int64 { return requests[pod] * fallback / 100 },
		func(m PodMetrics) (float64, error) { r, _, _, err := utilization(m, requests, target); return r, err })
	if err != nil {
		return 0, percent, average, time.Time{}, err
	}
	return replicas, percent, average, ts, nil
}

// resourceAverageReplicas is the count for an AverageValue target of a
// resource.
func (c *calculator) resourceAverageReplicas(ctx context.Context, current int32, target int64, resource corev1.ResourceName, tol tolerances, namespace string, selector labels.Selector, container string) (int32, int64, time.Time, error) {
	m, ts, err := c.metrics.ResourceMetric(ctx, resource, namespace, selector, container)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metrics for resource %s: %w", resource, err)
	}
	n, avg, err := c.averageReplicas(m, current, target, tol, namespace, selector, resource)
	return n, avg, ts, err
}

// podsMetricReplicas is the count for a Pods metric (AverageValue).
func (c *calculator) podsMetricReplicas(ctx context.Context, current int32, target int64, name string, tol tolerances, namespace string, selector, metricSelector labels.Selector) (int32, int64, time.Time, error) {
	m, ts, err := c.metrics.PodsMetric(ctx, name, namespace, selector, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s: %w", name, err)
	}
	n, avg, err := c.averageReplicas(m, current, target, tol, namespace, selector, "")
	return n, avg, ts, err
}

func (c *calculator) averageReplicas(m PodMetrics, current int32, target int64, tol tolerances, namespace string, selector labels.Selector, resource corev1.ResourceName) (int32, int64, error) {
	pods, err := c.listPods(namespace, selector)
	if err != nil {
		return 0, 0, err
	}
	g, err := c.group(pods, m, resource)
	if err != nil {
		return 0, 0, err
	}
	ratio, avg := averageUsage(m, target)
	n, err := correct(current, ratio, m, g, tol,
		func(string) int64 { return target },
		func(m PodMetrics) (float64, error) { r, _ := averageUsage(m, target); return r, nil })
	return n, avg, err
}

// objectValueReplicas is the count for an Object metric with a Value target.
func (c *calculator) objectValueReplicas(ctx context.Context, current int32, target int64, name string, tol tolerances, namespace string, ref *autoscalingv2.CrossVersionObjectReference, selector, metricSelector labels.Selector) (int32, int64, error) {
	v, _, err := c.metrics.ObjectMetric(ctx, name, namespace, ref, metricSelector)
	if err != nil {
		return 0, 0, fmt.Errorf("unable to get metric %s on %s %s/%s: %w", name, ref.Kind, namespace, ref.Name, err)
	}
	n, err := c.ratioReplicas(current, float64(v)/float64(target), tol, namespace, selector)
	return n, v, err
}

// objectAverageReplicas is the count for an Object metric with an
// AverageValue target: the metric divided among statusReplicas pods.
func (c *calculator) objectAverageReplicas(ctx context.Context, statusReplicas int32, target int64, name string, tol tolerances, namespace string, ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int32, int64, time.Time, error) {
	v, ts, err := c.metrics.ObjectMetric(ctx, name, namespace, ref, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s on %s %s/%s: %w", name, ref.Kind, namespace, ref.Name, err)
	}
	n, avg := perPodReplicas(statusReplicas, v, target, tol)
	return n, avg, ts, nil
}

// externalValueReplicas is the count for an External metric with a Value
// target: the sum of the matching series against the target.
func (c *calculator) externalValueReplicas(ctx context.Context, current int32, target int64, name string, tol tolerances, namespace string, metricSelector *metav1.LabelSelector, podSelector labels.Selector) (int32, int64, error) {
	sum, _, err := c.externalSum(ctx, name, namespace, metricSelector)
	if err != nil {
		return 0, 0, err
	}
	n, err := c.ratioReplicas(current, float64(sum)/float64(target), tol, namespace, podSelector)
	return n, sum, err
}

// externalAverageReplicas is the count for an External metric with an
// AverageValue target.
func (c *calculator) externalAverageReplicas(ctx context.Context, statusReplicas int32, target int64, name string, tol tolerances, namespace string, metricSelector *metav1.LabelSelector) (int32, int64, time.Time, error) {
	sum, ts, err := c.externalSum(ctx, name, namespace, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	n, avg := perPodReplicas(statusReplicas, sum, target, tol)
	return n, avg, ts, nil
}

func (c *calculator) externalSum(ctx context.Context, name, namespace string, sel *metav1.LabelSelector) (int64, time.Time, error) {
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return 0, time.Time{}, err
	}
	values, ts, err := c.metrics.ExternalMetric(ctx, name, namespace, selector)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("unable to get external metric %s/%s/%+v: %w", namespace, name, sel, err)
	}
	var sum int64
	for _, v := range values {
		if v > 0 && sum > math.MaxInt64-v {
			return math.MaxInt64, ts, nil
		}
		sum += v
	}
	return sum, ts, nil
}

// perPodReplicas divides total among statusReplicas pods: the count is
// total/target unless the ratio is within tolerance; avg is per pod.
func perPodReplicas(statusReplicas int32, total, target int64, tol tolerances) (int32, int64) {
	n := statusReplicas
	if !tol.within(float64(total) / (float64(target) * float64(statusReplicas))) {
		n = clampInt32(math.Ceil(float64(total) / float64(target)))
	}
	if statusReplicas == 0 {
		return n, total
	}
	return n, int64(math.Ceil(float64(total) / float64(statusReplicas)))
}

// ratioReplicas scales the ready pods by ratio; from zero replicas the
// ratio alone is the count.
func (c *calculator) ratioReplicas(current int32, ratio float64, tol tolerances, namespace string, selector labels.Selector) (int32, error) {
	if current == 0 {
		return clampInt32(math.Ceil(ratio)), nil
	}
	if tol.within(ratio) {
		return current, nil
	}
	pods, err := c.listPods(namespace, selector)
	if err != nil {
		return 0, fmt.Errorf("unable to calculate ready pods: %w", err)
	}
	ready := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && isPodReady(p) {
			ready++
		}
	}
	return clampInt32(math.Ceil(ratio * float64(ready))), nil
}

func isPodReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func clampInt32(f float64) int32 {
	if f > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(f)
}

// podRequests is each pod's request of resource in milli-units: the
// pod-level request when the pod sets one (and no container is named),
// else the sum over its containers and restartable init (sidecar)
// containers, or the named container's. A container without the request
// is an error, as upstream.
func podRequests(pods []*corev1.Pod, container string, resource corev1.ResourceName) (map[string]int64, error) {
	out := make(map[string]int64, len(pods))
	for _, p := range pods {
		if container == "" && p.Spec.Resources != nil {
			if q, ok := p.Spec.Resources.Requests[resource]; ok {
				out[p.Name] = q.MilliValue()
				continue
			}
		}
		cs := append([]corev1.Container{}, p.Spec.Containers...)
		for _, ic := range p.Spec.InitContainers {
			if ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				cs = append(cs, ic)
			}
		}
		var sum int64
		found := false
		for _, ctr := range cs {
			if container != "" && ctr.Name != container {
				continue
			}
			q, ok := ctr.Resources.Requests[resource]
			if !ok {
				return nil, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, ctr.Name, p.Name)
			}
			sum += q.MilliValue()
			found = true
			if container != "" {
				break
			}
		}
		if container != "" && !found {
			return nil, fmt.Errorf("container %s not found in Pod %s", container, p.Name)
		}
		out[p.Name] = sum
	}
	return out, nil
}
