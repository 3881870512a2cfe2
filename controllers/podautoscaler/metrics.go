package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	custommetricsv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	resourcemetricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	resourcemetrics "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	custommetrics "k8s.io/metrics/pkg/client/custom_metrics"
	externalmetrics "k8s.io/metrics/pkg/client/external_metrics"
)

// defaultMetricWindow is the sample window assumed for a custom metric
// that does not report its own (metrics-server's).
const defaultMetricWindow = time.Minute

// PodMetric is one pod's sample of a metric, in milli-units.
type PodMetric struct {
	Timestamp time.Time
	Window    time.Duration
	Value     int64
}

// PodMetrics holds a sample per pod name.
type PodMetrics map[string]PodMetric

// MetricsSource gives the controller the metrics it scales on. Values
// are milli-units. A pod without a sample is left out of PodMetrics, not
// an error: the controller decides what a missing sample means. Safe for
// concurrent use.
type MetricsSource interface {
	// ResourceMetric sums resource over the containers of each pod
	// matching selector, or takes only the named container's when
	// container is not empty; the time is the samples' timestamp.
	ResourceMetric(ctx context.Context, resource corev1.ResourceName, namespace string, selector labels.Selector, container string) (PodMetrics, time.Time, error)
	// PodsMetric is the custom metric name of each pod matching selector.
	PodsMetric(ctx context.Context, name, namespace string, selector, metricSelector labels.Selector) (PodMetrics, time.Time, error)
	// ObjectMetric is the custom metric name of the object ref.
	ObjectMetric(ctx context.Context, name, namespace string, ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error)
	// ExternalMetric is every value of the external metric name that
	// metricSelector matches.
	ExternalMetric(ctx context.Context, name, namespace string, metricSelector labels.Selector) ([]int64, time.Time, error)
}

// NewAPIMetricsSource reads metrics.k8s.io (resource), custom.metrics.k8s.io
// (pods and object) and external.metrics.k8s.io (external) through the
// k8s.io/metrics clients. A metrics API the cluster does not serve shows
// as the error the client returns (e.g. NotFound), which becomes the HPA's
// ScalingActive=False message.
func NewAPIMetricsSource(resource resourcemetrics.PodMetricsesGetter, custom custommetrics.CustomMetricsClient, external externalmetrics.ExternalMetricsClient) MetricsSource {
	return &apiMetrics{resource: resource, custom: custom, external: external}
}

type apiMetrics struct {
	resource resourcemetrics.PodMetricsesGetter
	custom   custommetrics.CustomMetricsClient
	external externalmetrics.ExternalMetricsClient
}

func (m *apiMetrics) ResourceMetric(ctx context.Context, resource corev1.ResourceName, namespace string, selector labels.Selector, container string) (PodMetrics, time.Time, error) {
	list, err := m.resource.PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from resource metrics API")
	}
	logger := klog.FromContext(ctx)
	out := make(PodMetrics, len(list.Items))
	for i := range list.Items {
		pm := &list.Items[i]
		if v, ok := podResourceUsage(pm, resource, container); ok {
			out[pm.Name] = PodMetric{Timestamp: pm.Timestamp.Time, Window: pm.Window.Duration, Value: v}
		} else {
			logger.V(2).Info("Missing resource metric", "resource", resource, "container", container, "pod", klog.KRef(pm.Namespace, pm.Name))
		}
	}
	return out, list.Items[0].Timestamp.Time, nil
}

// podResourceUsage is a pod's usage of resource in milli-units: the named
// container's, or the sum of all containers' when container is empty (a
// pod one of whose containers lacks the resource has no usage).
func podResourceUsage(pm *resourcemetricsv1beta1.PodMetrics, resource corev1.ResourceName, container string) (int64, bool) {
	if container != "" {
		for _, c := range pm.Containers {
			if c.Name == container {
				q, ok := c.Usage[resource]
				return q.MilliValue(), ok
			}
		}
		return 0, false
	}
	if len(pm.Containers) == 0 {
		return 0, false
	}
	var sum int64
	for _, c := range pm.Containers {
		q, ok := c.Usage[resource]
		if !ok {
			return 0, false
		}
		sum += q.MilliValue()
	}
	return sum, true
}

func (m *apiMetrics) PodsMetric(_ context.Context, name, namespace string, selector, metricSelector labels.Selector) (PodMetrics, time.Time, error) {
	list, err := m.custom.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, selector, name, metricSelector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from custom metrics API")
	}
	out := make(PodMetrics, len(list.Items))
	for _, v := range list.Items {
		out[v.DescribedObject.Name] = PodMetric{Timestamp: v.Timestamp.Time, Window: customWindow(v), Value: v.Value.MilliValue()}
	}
	return out, list.Items[0].Timestamp.Time, nil
}

func customWindow(v custommetricsv1beta2.MetricValue) time.Duration {
	if v.WindowSeconds != nil {
		return time.Duration(*v.WindowSeconds) * time.Second
	}
	return defaultMetricWindow
}

func (m *apiMetrics) ObjectMetric(_ context.Context, name, namespace string, ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error) {
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	var (
		v   *custommetricsv1beta2.MetricValue
		err error
	)
	if gk.Group == "" && gk.Kind == "Namespace" {
		// A namespace's metric is asked of the root scope by its name.
		v, err = m.custom.RootScopedMetrics().GetForObject(gk, namespace, name, metricSelector)
	} else {
		v, err = m.custom.NamespacedMetrics(namespace).GetForObject(gk, ref.Name, name, metricSelector)
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	return v.Value.MilliValue(), v.Timestamp.Time, nil
}

func (m *apiMetrics) ExternalMetric(_ context.Context, name, namespace string, metricSelector labels.Selector) ([]int64, time.Time, error) {
	list, err := m.external.NamespacedMetrics(namespace).List(name, metricSelector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from external metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from external metrics API")
	}
	out := make([]int64, 0, len(list.Items))
	for _, v := range list.Items {
		out = append(out, v.Value.MilliValue())
	}
	return out, list.Items[0].Timestamp.Time, nil
}
