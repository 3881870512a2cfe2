package integration

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/podautoscaler"
	"github.com/k1s/k1s/tests/integration/framework"
)

var hpaBaseControllers = []string{
	"serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller",
	"replicaset-controller", "deployment-controller",
}

// hpaFixedCPU is a metrics source whose every running pod uses the same
// CPU, set by the test.
type hpaFixedCPU struct {
	client kubernetes.Interface
	milli  atomic.Int64
}

func (f *hpaFixedCPU) ResourceMetric(ctx context.Context, res corev1.ResourceName, ns string, sel labels.Selector, _ string) (podautoscaler.PodMetrics, time.Time, error) {
	if res != corev1.ResourceCPU {
		return nil, time.Time{}, errors.New("only cpu is served")
	}
	pods, err := f.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, time.Time{}, err
	}
	now := time.Now()
	out := podautoscaler.PodMetrics{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			out[p.Name] = podautoscaler.PodMetric{Timestamp: now, Window: time.Second, Value: f.milli.Load()}
		}
	}
	return out, now, nil
}

func (f *hpaFixedCPU) PodsMetric(context.Context, string, string, labels.Selector, labels.Selector) (podautoscaler.PodMetrics, time.Time, error) {
	return nil, time.Time{}, errors.New("not served")
}

func (f *hpaFixedCPU) ObjectMetric(context.Context, string, string, *autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	return 0, time.Time{}, errors.New("not served")
}

func (f *hpaFixedCPU) ExternalMetric(context.Context, string, string, labels.Selector) ([]int64, time.Time, error) {
	return nil, time.Time{}, errors.New("not served")
}

// hpaPlayKubelet makes every pod of namespace Running and Ready and removes
// pods being deleted, as a kubelet would, until the test ends.
func hpaPlayKubelet(t *testing.T, c kubernetes.Interface, ns string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
				for i := range pods.Items {
					p := &pods.Items[i]
					switch {
					case p.DeletionTimestamp != nil:
						_ = c.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
					case p.Status.Phase != corev1.PodRunning:
						now := metav1.Now()
						p.Status.Phase = corev1.PodRunning
						p.Status.StartTime = &now
						p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
						_, _ = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

func hpaDeployment(t *testing.T, c kubernetes.Interface, ns string, replicas int32) {
	t.Helper()
	l := map[string]string{"app": "web"}
	if _, err := c.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				}}}},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func hpaCreate(t *testing.T, c kubernetes.Interface, ns string, minR, maxR int32) {
	t.Helper()
	if _, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(context.Background(), &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(minR),
			MaxReplicas:    maxR,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
			}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func hpaCondition(h *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, c := range h.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}

// TestHPAWithoutMetricsAPI: the server's own HPA controller, acting as its
// service account, reads the target's scale and reports that there is no
// resource metrics API, as upstream's does.
func TestHPAWithoutMetricsAPI(t *testing.T) {
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers(append(hpaBaseControllers, "horizontalpodautoscaling")...)
	// k1s serves the metrics API itself unless it is turned off, as here.
	cfg.Disable = []string{"metrics-server"}
	s := framework.StartWith(t, cfg)
	c := s.Client(t)
	ns := depNamespace(t, c, "hpa-nometrics")
	hpaDeployment(t, c, ns, 1)
	hpaCreate(t, c, ns, 1, 5)
	var last *autoscalingv2.HorizontalPodAutoscaler
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		h, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = h
		return hpaCondition(h, autoscalingv2.ScalingActive).Reason != "", nil
	})
	if err != nil {
		t.Fatalf("no ScalingActive condition: %v (status %+v)", err, last.Status)
	}
	active := hpaCondition(last, autoscalingv2.ScalingActive)
	want := "unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource"
	if active.Status != corev1.ConditionFalse || active.Reason != "FailedGetResourceMetric" || !strings.Contains(active.Message, want) {
		t.Errorf("ScalingActive = %+v, want False FailedGetResourceMetric containing %q", active, want)
	}
	if able := hpaCondition(last, autoscalingv2.AbleToScale); able.Status != corev1.ConditionTrue || able.Reason != "SucceededGetScale" {
		t.Errorf("AbleToScale = %+v, want True SucceededGetScale (the service account may read the scale)", able)
	}
	if last.Status.CurrentReplicas != 1 {
		t.Errorf("currentReplicas = %d, want 1", last.Status.CurrentReplicas)
	}
}

// TestHPAScalesDeployment runs the controller with a fixed CPU source and
// short windows: a Deployment at 200% of its CPU request goes from 1 to 4
// replicas (the no-behavior scale-up limit), and once usage drops to 10% it
// goes back to 1 only after the downscale stabilization window.
func TestHPAScalesDeployment(t *testing.T) {
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers(hpaBaseControllers...)
	s := framework.StartWith(t, cfg)
	admin := s.Client(t)
	ns := depNamespace(t, admin, "hpa-scale")
	hpaPlayKubelet(t, admin, ns)
	hpaDeployment(t, admin, ns, 1)

	// The controller acts as its service account, so its RBAC role is tested.
	saCfg := s.UserConfig(t, "system:serviceaccount:kube-system:horizontal-pod-autoscaler", "system:serviceaccounts", "system:serviceaccounts:kube-system")
	sa := kubernetes.NewForConfigOrDie(saCfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(sa.Discovery()))
	scales, err := scale.NewForConfig(saCfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(sa.Discovery()))
	if err != nil {
		t.Fatal(err)
	}
	src := &hpaFixedCPU{client: admin}
	src.milli.Store(200)
	factory := informers.NewSharedInformerFactory(admin, 0)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: admin.CoreV1().Events("")})
	const window = 3 * time.Second
	hc, err := podautoscaler.New(podautoscaler.Config{
		SyncPeriod:                   300 * time.Millisecond,
		DownscaleStabilizationWindow: window,
		CPUInitializationPeriod:      time.Millisecond,
		InitialReadinessDelay:        time.Millisecond,
	}, podautoscaler.Clients{HPAs: sa.AutoscalingV2(), Scales: scales, Mapper: mapper},
		podautoscaler.Informers{HPAs: factory.Autoscaling().V2().HorizontalPodAutoscalers(), Pods: factory.Core().V1().Pods()},
		src, broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "horizontal-pod-autoscaler"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	factory.Start(ctx.Done())
	wg.Go(func() {
		if err := hc.Run(ctx); err != nil {
			t.Errorf("hpa controller: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait(); factory.Shutdown(); broadcaster.Shutdown() })

	hpaCreate(t, admin, ns, 1, 6)
	waitReplicas := func(want int32, timeout time.Duration) *autoscalingv2.HorizontalPodAutoscaler {
		t.Helper()
		var h *autoscalingv2.HorizontalPodAutoscaler
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			d, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if h, err = admin.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
				return false, err
			}
			return *d.Spec.Replicas == want && h.Status.DesiredReplicas == want, nil
		})
		if err != nil {
			t.Fatalf("deployment not at %d replicas: %v (hpa status %+v)", want, err, h.Status)
		}
		return h
	}

	h := waitReplicas(4, 30*time.Second)
	if l := hpaCondition(h, autoscalingv2.ScalingActive); l.Status != corev1.ConditionTrue || l.Reason != "ValidMetricFound" {
		t.Errorf("ScalingActive = %+v", l)
	}
	if h.Status.LastScaleTime == nil || len(h.Status.CurrentMetrics) != 1 {
		t.Errorf("status %+v: want lastScaleTime and one current metric", h.Status)
	}
	// Once all 4 pods run at 200%, 8 are asked for: capped at maxReplicas 6.
	h = waitReplicas(6, 30*time.Second)
	if l := hpaCondition(h, autoscalingv2.ScalingLimited); l.Status != corev1.ConditionTrue || l.Reason != "TooManyReplicas" {
		t.Errorf("ScalingLimited = %+v, want True TooManyReplicas", l)
	}
	upAt := h.Status.LastScaleTime.Time

	src.milli.Store(10)
	dropped := time.Now()
	h = waitReplicas(1, 30*time.Second)
	// The 200% recommendations of the last window hold the count up
	// (lastScaleTime has whole seconds, so allow for that and one sync).
	if waited := h.Status.LastScaleTime.Sub(dropped); waited < window-1500*time.Millisecond {
		t.Errorf("scaled down %s after the drop, want about the %s window", waited, window)
	}
	if !h.Status.LastScaleTime.After(upAt) {
		t.Errorf("lastScaleTime %s not after the scale-up at %s", h.Status.LastScaleTime, upAt)
	}
	events, err := admin.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range events.Items {
		if e.Reason == "SuccessfulRescale" {
			msgs = append(msgs, e.Message)
		}
	}
	if !strings.Contains(strings.Join(msgs, "|"), "New size: 1; reason: All metrics below target") {
		t.Errorf("SuccessfulRescale events %q: no scale-down to 1", msgs)
	}
}
