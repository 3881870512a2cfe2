package podautoscaler

import (
	"context"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	externalmetricsv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	custommetricsfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	externalmetricsfake "k8s.io/metrics/pkg/client/external_metrics/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// podSpec describes one pod of the target: its phase and readiness, its
// CPU request and usage (usage < 0: no sample).
type podSpec struct {
	phase   corev1.PodPhase
	ready   bool
	request int64 // milli-CPU
	usage   int64 // milli-CPU; -1 = no sample
	// started is how long before the sync the pod started, and
	// readySince how long before the sync its readiness last changed.
	started, readySince time.Duration
}

func running(request, usage int64) podSpec {
	return podSpec{phase: corev1.PodRunning, ready: true, request: request, usage: usage, started: time.Hour, readySince: time.Hour}
}

// harness runs the controller's sync against fakes: the kube clientset
// (HPA status), a scale client holding one Deployment's scale, and the
// metrics API's fake clientset.
type harness struct {
	t       *testing.T
	clock   *clocktesting.FakeClock
	kube    *kubefake.Clientset
	metrics *metricsfake.Clientset
	scale   *autoscalingv1.Scale
	updates int
	rec     *record.FakeRecorder
	c       *Controller
	factory informers.SharedInformerFactory
}

func newHarness(t *testing.T, hpa *autoscalingv2.HorizontalPodAutoscaler, replicas int32, pods []podSpec) *harness {
	t.Helper()
	h := &harness{t: t, clock: clocktesting.NewFakeClock(t0), rec: record.NewFakeRecorder(100)}
	h.kube = kubefake.NewClientset(hpa)
	h.factory = informers.NewSharedInformerFactory(h.kube, 0)
	h.scale = &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
		Status:     autoscalingv1.ScaleStatus{Replicas: replicas, Selector: "app=web"},
	}
	scales := &scalefake.FakeScaleClient{}
	scales.AddReactor("get", "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, h.scale.DeepCopy(), nil
	})
	scales.AddReactor("update", "deployments", func(a core.Action) (bool, runtime.Object, error) {
		s := a.(core.UpdateAction).GetObject().(*autoscalingv1.Scale)
		h.scale.Spec.Replicas = s.Spec.Replicas
		h.updates++
		return true, h.scale.DeepCopy(), nil
	})
	h.metrics = metricsfake.NewSimpleClientset()
	h.setPods(pods)
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	cfg := DefaultConfig()
	src := NewAPIMetricsSource(h.metrics.MetricsV1beta1(), &custommetricsfake.FakeCustomMetricsClient{}, &externalmetricsfake.FakeExternalMetricsClient{})
	c, err := New(cfg, Clients{HPAs: h.kube.AutoscalingV2(), Scales: scales, Mapper: mapper},
		Informers{HPAs: h.factory.Autoscaling().V2().HorizontalPodAutoscalers(), Pods: h.factory.Core().V1().Pods()},
		src, h.rec, h.clock)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	h.refresh()
	return h
}

// setPods replaces the target's pods and their samples.
func (h *harness) setPods(pods []podSpec) {
	h.t.Helper()
	idx := h.factory.Core().V1().Pods().Informer().GetIndexer()
	for _, o := range idx.List() {
		_ = idx.Delete(o)
	}
	var samples []metricsv1beta1.PodMetrics
	now := h.clock.Now()
	for i, p := range pods {
		name := "web-" + string(rune('a'+i))
		status := corev1.ConditionFalse
		if p.ready {
			status = corev1.ConditionTrue
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(p.request, resource.DecimalSI)},
			}}}},
			Status: corev1.PodStatus{Phase: p.phase},
		}
		if p.phase != corev1.PodPending {
			pod.Status.StartTime = &metav1.Time{Time: now.Add(-p.started)}
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-p.readySince))}}
		}
		if err := idx.Add(pod); err != nil {
			h.t.Fatal(err)
		}
		if p.usage >= 0 && p.phase != corev1.PodPending {
			samples = append(samples, metricsv1beta1.PodMetrics{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: pod.Labels},
				Timestamp:  metav1.NewTime(now.Add(-10 * time.Second)),
				Window:     metav1.Duration{Duration: 30 * time.Second},
				Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{
					corev1.ResourceCPU: *resource.NewMilliQuantity(p.usage, resource.DecimalSI),
				}}},
			})
		}
	}
	h.metrics.PrependReactor("list", "pods", func(core.Action) (bool, runtime.Object, error) {
		return true, &metricsv1beta1.PodMetricsList{Items: samples}, nil
	})
}

// refresh copies the HPA as stored into the informer's cache.
func (h *harness) refresh() *autoscalingv2.HorizontalPodAutoscaler {
	h.t.Helper()
	hpa, err := h.kube.AutoscalingV2().HorizontalPodAutoscalers("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Update(hpa); err != nil {
		h.t.Fatal(err)
	}
	return hpa
}

// sync runs one reconciliation and returns the HPA as stored after it.
func (h *harness) sync() *autoscalingv2.HorizontalPodAutoscaler {
	h.t.Helper()
	if _, err := h.c.sync(context.Background(), "ns/web"); err != nil {
		h.t.Logf("sync: %v", err)
	}
	return h.refresh()
}

func cpuHPA(target int32, minR, maxR int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 1},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(minR),
			MaxReplicas:    maxR,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)},
			}}},
			Behavior: b,
		},
	}
}

func cond(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, c := range hpa.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}

func repeat(n int, p podSpec) []podSpec {
	out := make([]podSpec, n)
	for i := range out {
		out[i] = p
	}
	return out
}

// TestSyncOnce checks one reconciliation's decision: the count the
// metrics ask for, bounded by tolerance, readiness, missing samples and
// min/maxReplicas, and the conditions it reports.
func TestSyncOnce(t *testing.T) {
	for _, tc := range []struct {
		name          string
		hpa           *autoscalingv2.HorizontalPodAutoscaler
		replicas      int32
		pods          []podSpec
		want          int32
		wantLimited   string
		wantActive    string
		wantUtilPct   int32
		wantEvent     string
		wantNoScaling bool
	}{
		{name: "scale up to what the utilization asks", hpa: cpuHPA(50, 1, 10, nil), replicas: 3,
			pods: repeat(3, running(100, 80)), want: 5, wantLimited: "DesiredWithinRange", wantActive: "ValidMetricFound", wantUtilPct: 80,
			wantEvent: "SuccessfulRescale New size: 5; reason: cpu resource utilization (percentage of request) above target"},
		{name: "scale up limited to twice the replicas without behavior", hpa: cpuHPA(50, 1, 20, nil), replicas: 3,
			pods: repeat(3, running(100, 300)), want: 6, wantLimited: "ScaleUpLimit", wantActive: "ValidMetricFound", wantUtilPct: 300},
		{name: "maxReplicas bounds", hpa: cpuHPA(50, 1, 4, nil), replicas: 3,
			pods: repeat(3, running(100, 300)), want: 4, wantLimited: "TooManyReplicas", wantActive: "ValidMetricFound", wantUtilPct: 300},
		{name: "within tolerance: no change", hpa: cpuHPA(50, 1, 10, nil), replicas: 3,
			pods: repeat(3, running(100, 54)), want: 3, wantLimited: "DesiredWithinRange", wantActive: "ValidMetricFound", wantUtilPct: 54, wantNoScaling: true},
		{name: "just beyond tolerance scales", hpa: cpuHPA(50, 1, 10, nil), replicas: 3,
			pods: repeat(3, running(100, 56)), want: 4, wantLimited: "DesiredWithinRange", wantActive: "ValidMetricFound", wantUtilPct: 56},
		{name: "below minReplicas is raised without metrics", hpa: cpuHPA(50, 4, 10, nil), replicas: 2,
			pods: repeat(2, running(100, 10)), want: 4, wantEvent: "SuccessfulRescale New size: 4; reason: Current number of replicas below Spec.MinReplicas"},
		{name: "above maxReplicas is lowered", hpa: cpuHPA(50, 1, 3, nil), replicas: 5,
			pods: repeat(5, running(100, 50)), want: 3, wantEvent: "SuccessfulRescale New size: 3; reason: Current number of replicas above Spec.MaxReplicas"},
		{name: "pending pods count as zero when scaling up", hpa: cpuHPA(50, 1, 10, nil), replicas: 4,
			// 2 ready at 100% (ratio 2); with 2 pending at 0 the ratio is 1: no change.
			pods: append(repeat(2, running(100, 100)), repeat(2, podSpec{phase: corev1.PodPending, request: 100, usage: -1})...),
			want: 4, wantActive: "ValidMetricFound", wantUtilPct: 100, wantNoScaling: true},
		{name: "a pod still initializing its CPU is unready", hpa: cpuHPA(50, 1, 10, nil), replicas: 2,
			// the second pod turned ready 5s ago, after its 30s sample window began.
			pods: []podSpec{running(100, 150), {phase: corev1.PodRunning, ready: true, request: 100, usage: 900, started: time.Minute, readySince: 5 * time.Second}},
			// ratio 3 from the first pod; with the unready one at 0: 1.5 over 2 pods -> 3.
			want: 3, wantActive: "ValidMetricFound", wantUtilPct: 150},
		{name: "missing samples are taken at the target when scaling down", hpa: cpuHPA(50, 1, 10, nil), replicas: 4,
			// two pods at 10%, two without a sample: assumed at 100% -> 55% of 50: within tolerance.
			pods: append(repeat(2, running(100, 10)), repeat(2, running(100, -1))...), want: 4, wantActive: "ValidMetricFound", wantUtilPct: 10, wantNoScaling: true},
		{name: "missing samples are taken at zero when scaling up", hpa: cpuHPA(50, 1, 10, nil), replicas: 4,
			// two at 200%, two missing at 0: 100% of 50 -> ratio 2 over 4 -> 8.
			pods: append(repeat(2, running(100, 200)), repeat(2, running(100, -1))...), want: 8, wantActive: "ValidMetricFound", wantUtilPct: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.hpa, tc.replicas, tc.pods)
			hpa := h.sync()
			if h.scale.Spec.Replicas != tc.want {
				t.Errorf("replicas = %d, want %d (conditions %+v)", h.scale.Spec.Replicas, tc.want, hpa.Status.Conditions)
			}
			if tc.wantNoScaling && h.updates != 0 {
				t.Errorf("scale updated %d times, want none", h.updates)
			}
			if tc.wantLimited != "" {
				if got := cond(hpa, autoscalingv2.ScalingLimited).Reason; got != tc.wantLimited {
					t.Errorf("ScalingLimited reason = %q, want %q", got, tc.wantLimited)
				}
			}
			if tc.wantActive != "" {
				if got := cond(hpa, autoscalingv2.ScalingActive); got.Reason != tc.wantActive || got.Status != corev1.ConditionTrue {
					t.Errorf("ScalingActive = %+v, want True %s", got, tc.wantActive)
				}
			}
			if tc.wantUtilPct != 0 {
				if len(hpa.Status.CurrentMetrics) != 1 || hpa.Status.CurrentMetrics[0].Resource == nil || ptr.Deref(hpa.Status.CurrentMetrics[0].Resource.Current.AverageUtilization, -1) != tc.wantUtilPct {
					t.Errorf("currentMetrics = %+v, want utilization %d", hpa.Status.CurrentMetrics, tc.wantUtilPct)
				}
			}
			if hpa.Status.DesiredReplicas != tc.want || hpa.Status.CurrentReplicas != tc.replicas {
				t.Errorf("status replicas current %d desired %d, want %d and %d", hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas, tc.replicas, tc.want)
			}
			if (hpa.Status.LastScaleTime != nil) != (tc.want != tc.replicas) {
				t.Errorf("lastScaleTime = %v with a change from %d to %d", hpa.Status.LastScaleTime, tc.replicas, tc.want)
			}
			if tc.wantEvent != "" {
				found := false
				for len(h.rec.Events) > 0 {
					if e := <-h.rec.Events; strings.Contains(e, tc.wantEvent) {
						found = true
					}
				}
				if !found {
					t.Errorf("no event %q", tc.wantEvent)
				}
			}
		})
	}
}

// TestScaleDownStabilization: without behavior, a lower recommendation
// waits for the 5 min window to pass the earlier, higher ones.
func TestScaleDownStabilization(t *testing.T) {
	h := newHarness(t, cpuHPA(50, 1, 10, nil), 4, repeat(4, running(100, 10)))
	hpa := h.sync()
	if h.scale.Spec.Replicas != 4 {
		t.Fatalf("scaled to %d at once, want 4 kept by the stabilization window", h.scale.Spec.Replicas)
	}
	if c := cond(hpa, autoscalingv2.AbleToScale); c.Reason != "ScaleDownStabilized" {
		t.Errorf("AbleToScale = %+v, want ScaleDownStabilized", c)
	}
	h.clock.Step(4 * time.Minute)
	h.setPods(repeat(4, running(100, 10)))
	h.sync()
	if h.scale.Spec.Replicas != 4 {
		t.Fatalf("scaled to %d after 4m, want 4", h.scale.Spec.Replicas)
	}
	h.clock.Step(61 * time.Second)
	h.setPods(repeat(4, running(100, 10)))
	hpa = h.sync()
	// 10% of 50 over 4 pods: ceil(0.2*4) = 1.
	if h.scale.Spec.Replicas != 1 {
		t.Fatalf("scaled to %d after the window, want 1", h.scale.Spec.Replicas)
	}
	if c := cond(hpa, autoscalingv2.AbleToScale); c.Reason != "SucceededRescale" {
		t.Errorf("AbleToScale = %+v, want SucceededRescale", c)
	}
}

// TestBehaviorPolicies: the behavior's policies bound each period's change.
func TestBehaviorPolicies(t *testing.T) {
	pods1 := func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscaler {
		return cpuHPA(50, 1, 100, b)
	}
	max, min, disabled := autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect
	for _, tc := range []struct {
		name     string
		b        *autoscalingv2.HorizontalPodAutoscalerBehavior
		replicas int32
		usage    int64
		want     []int32 // after each sync, 10s apart
		reason   string  // ScalingLimited after the first
	}{
		{name: "defaults: the higher of 4 pods and 100% per 15s", b: &autoscalingv2.HorizontalPodAutoscalerBehavior{}, replicas: 2, usage: 500,
			want: []int32{6, 6, 12}, reason: "ScaleUpLimit"},
		{name: "one pod per minute", b: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
			SelectPolicy: &max, Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}},
			replicas: 3, usage: 200, want: []int32{4, 4, 4}, reason: "ScaleUpLimit"},
		{name: "Min picks the smaller change", b: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
			SelectPolicy: &min, Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 5, PeriodSeconds: 15},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 15}}}},
			replicas: 4, usage: 300, want: []int32{6}, reason: "ScaleUpLimit"},
		{name: "Disabled scale-up", b: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled}},
			replicas: 3, usage: 300, want: []int32{3}, reason: "ScaleUpLimit"},
		{name: "scale down 50% per 15s with no window", b: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0), Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 15}}}},
			replicas: 8, usage: 5, want: []int32{4, 4, 2}, reason: "ScaleDownLimit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, pods1(tc.b), tc.replicas, repeat(int(tc.replicas), running(100, tc.usage)))
			for i, want := range tc.want {
				if i > 0 {
					h.clock.Step(10 * time.Second)
					h.setPods(repeat(int(h.scale.Spec.Replicas), running(100, tc.usage)))
				}
				hpa := h.sync()
				if h.scale.Spec.Replicas != want {
					t.Fatalf("sync %d: replicas %d, want %d (conditions %+v)", i, h.scale.Spec.Replicas, want, hpa.Status.Conditions)
				}
				if i == 0 {
					if got := cond(hpa, autoscalingv2.ScalingLimited); got.Reason != tc.reason || got.Status != corev1.ConditionTrue {
						t.Errorf("ScalingLimited = %+v, want True %s", got, tc.reason)
					}
				}
			}
		})
	}
}

// TestMetricsAPIMissing: with no metrics API the HPA says so, as upstream's.
func TestMetricsAPIMissing(t *testing.T) {
	h := newHarness(t, cpuHPA(50, 1, 10, nil), 2, repeat(2, running(100, 100)))
	h.metrics.PrependReactor("list", "pods", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, "")
	})
	hpa := h.sync()
	if h.updates != 0 {
		t.Errorf("scaled without metrics")
	}
	c := cond(hpa, autoscalingv2.ScalingActive)
	wantMsg := "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: pods.metrics.k8s.io"
	if c.Status != corev1.ConditionFalse || c.Reason != "FailedGetResourceMetric" || !strings.HasPrefix(c.Message, wantMsg) {
		t.Errorf("ScalingActive = %+v, want False FailedGetResourceMetric %q", c, wantMsg)
	}
	if a := cond(hpa, autoscalingv2.AbleToScale); a.Status != corev1.ConditionTrue || a.Reason != "SucceededGetScale" {
		t.Errorf("AbleToScale = %+v", a)
	}
	var reasons []string
	for len(h.rec.Events) > 0 {
		reasons = append(reasons, strings.Fields(<-h.rec.Events)[1])
	}
	if strings.Join(reasons, ",") != "FailedGetResourceMetric,FailedComputeMetricsReplicas" {
		t.Errorf("events %v, want FailedGetResourceMetric then FailedComputeMetricsReplicas", reasons)
	}
}

// TestExternalAndContainerMetrics covers the other metric sources.
func TestExternalAndContainerMetrics(t *testing.T) {
	hpa := cpuHPA(50, 1, 10, nil)
	hpa.Spec.Metrics = []autoscalingv2.MetricSpec{
		{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(10, resource.DecimalSI)},
		}},
		{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
			Name: corev1.ResourceCPU, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
		}},
	}
	h := newHarness(t, hpa, 3, repeat(3, running(100, 50)))
	ext := &externalmetricsfake.FakeExternalMetricsClient{}
	ext.AddReactor("list", "*", func(core.Action) (bool, runtime.Object, error) {
		return true, &externalmetricsv1beta1.ExternalMetricValueList{Items: []externalmetricsv1beta1.ExternalMetricValue{
			{MetricName: "queue", Value: *resource.NewQuantity(30, resource.DecimalSI), Timestamp: metav1.NewTime(t0)},
			{MetricName: "queue", Value: *resource.NewQuantity(20, resource.DecimalSI), Timestamp: metav1.NewTime(t0)},
		}}, nil
	})
	h.c.calc.metrics.(*apiMetrics).external = ext
	got := h.sync()
	// 50 queued at 10 per pod: 5; the container metric asks for 3.
	if h.scale.Spec.Replicas != 5 {
		t.Fatalf("replicas %d, want 5 (conditions %+v)", h.scale.Spec.Replicas, got.Status.Conditions)
	}
	if len(got.Status.CurrentMetrics) != 2 || got.Status.CurrentMetrics[0].External == nil || got.Status.CurrentMetrics[0].External.Current.AverageValue.Value() != 17 ||
		got.Status.CurrentMetrics[1].ContainerResource == nil || *got.Status.CurrentMetrics[1].ContainerResource.Current.AverageUtilization != 50 {
		t.Errorf("currentMetrics = %+v", got.Status.CurrentMetrics)
	}
	if c := cond(got, autoscalingv2.ScalingActive); !strings.Contains(c.Message, "external metric queue") {
		t.Errorf("ScalingActive = %+v, want the external metric named", c)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"defaults", func(*Config) {}, ""},
		{"negative tolerance", func(c *Config) { c.Tolerance = -1 }, "--horizontal-pod-autoscaler-tolerance"},
		{"negative sync", func(c *Config) { c.SyncPeriod = -time.Second }, "--horizontal-pod-autoscaler-sync-period"},
		{"negative window", func(c *Config) { c.DownscaleStabilizationWindow = -time.Second }, "--horizontal-pod-autoscaler-downscale-stabilization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	if d := DefaultConfig(); d.SyncPeriod != 15*time.Second || d.DownscaleStabilizationWindow != 5*time.Minute || d.Tolerance != 0.1 ||
		d.CPUInitializationPeriod != 5*time.Minute || d.InitialReadinessDelay != 30*time.Second || d.ConcurrentSyncs != 5 {
		t.Errorf("DefaultConfig() = %+v, want kube-controller-manager's", d)
	}
}
