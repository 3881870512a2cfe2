package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	autoscalinginformers "k8s.io/client-go/informers/autoscaling/v2"
	coreinformers "k8s.io/client-go/informers/core/v1"
	autoscalingclient "k8s.io/client-go/kubernetes/typed/autoscaling/v2"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	autoscalingapi "github.com/k1s/k1s/internal/apis/autoscaling"
)

// Clients are what the controller writes through.
type Clients struct {
	// HPAs reads and writes HPA status.
	HPAs autoscalingclient.HorizontalPodAutoscalersGetter
	// Scales reads and updates the targets' scale subresource.
	Scales scale.ScalesGetter
	// Mapper resolves a target's kind to its resources; when it also has
	// Reset() (a discovery-backed mapper), it is reset after a failed
	// lookup so kinds added later are found.
	Mapper meta.RESTMapper
}

// Informers are the caches the controller reads.
type Informers struct {
	HPAs autoscalinginformers.HorizontalPodAutoscalerInformer
	Pods coreinformers.PodInformer
}

// Controller is the HPA controller. Run may be called once.
type Controller struct {
	cfg      Config
	clients  Clients
	calc     *calculator
	recorder record.EventRecorder
	clock    clock.WithTicker

	hpas       autoscalinglisters.HorizontalPodAutoscalerLister
	pods       corelisters.PodLister
	hpasSynced cache.InformerSynced
	podsSynced cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// state is each HPA's recommendations and scale events, by key.
	state map[string]*hpaState
	// selectors is the last selector of each HPA's target, by key, to find
	// pods that several HPAs select.
	selectors map[string]labels.Selector
}

// New builds the controller; metrics is where it reads metrics from
// (NewAPIMetricsSource in a cluster).
func New(cfg Config, clients Clients, inf Informers, metrics MetricsSource, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clients.HPAs == nil || clients.Scales == nil || clients.Mapper == nil || metrics == nil || recorder == nil {
		return nil, errors.New("horizontal pod autoscaler: HPA client, scale client, REST mapper, metrics source and event recorder are required")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{
		cfg:        cfg,
		clients:    clients,
		recorder:   recorder,
		clock:      clk,
		hpas:       inf.HPAs.Lister(),
		pods:       inf.Pods.Lister(),
		hpasSynced: inf.HPAs.Informer().HasSynced,
		podsSynced: inf.Pods.Informer().HasSynced,
		// Every HPA comes back once per sync period (upstream's fixed
		// interval limiter), however its sync ended.
		queue: workqueue.NewTypedRateLimitingQueueWithConfig[string](fixedInterval(cfg.SyncPeriod),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "horizontalpodautoscaler", Clock: clk}),
		state:     map[string]*hpaState{},
		selectors: map[string]labels.Selector{},
	}
	c.calc = &calculator{metrics: metrics, pods: c.pods, cpuInit: cfg.CPUInitializationPeriod, readinessDelay: cfg.InitialReadinessDelay, clock: clk}
	_, err := inf.HPAs.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc: c.add,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*autoscalingv2.HorizontalPodAutoscaler)
			n, ok2 := cur.(*autoscalingv2.HorizontalPodAutoscaler)
			if ok1 && ok2 && o.Generation != n.Generation {
				// A spec change is acted on at once (HPAGeneration).
				c.add(cur)
				return
			}
			if key, err := cache.MetaNamespaceKeyFunc(cur); err == nil {
				c.queue.AddRateLimited(key)
			}
		},
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.queue.Forget(key)
				c.queue.Add(key) // sync forgets its state
			}
		},
	}, cfg.SyncPeriod)
	if err != nil {
		return nil, fmt.Errorf("horizontal pod autoscaler: add event handler: %w", err)
	}
	return c, nil
}

func (c *Controller) add(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// fixedInterval is a rate limiter that always waits interval.
type fixedInterval time.Duration

func (f fixedInterval) When(string) time.Duration { return time.Duration(f) }
func (f fixedInterval) NumRequeues(string) int    { return 1 }
func (f fixedInterval) Forget(string)             {}

// Run reconciles with cfg.ConcurrentSyncs workers until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	logger.Info("Starting HPA controller")
	defer logger.Info("Shutting down HPA controller")
	var wg sync.WaitGroup
	defer func() {
		c.queue.ShutDown()
		wg.Wait()
	}()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.hpasSynced, c.podsSynced) {
		return nil
	}
	for range c.cfg.ConcurrentSyncs {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	deleted, err := c.sync(ctx, key)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing HorizontalPodAutoscaler", "key", key)
	}
	if !deleted {
		c.queue.AddRateLimited(key)
	}
	return true
}

// sync reconciles the HPA key; deleted reports that it no longer exists.
func (c *Controller) sync(ctx context.Context, key string) (deleted bool, err error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return true, err
	}
	hpa, err := c.hpas.HorizontalPodAutoscalers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("HorizontalPodAutoscaler has been deleted", "hpa", klog.KRef(ns, name))
		c.mu.Lock()
		delete(c.state, key)
		delete(c.selectors, key)
		c.mu.Unlock()
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, c.reconcile(ctx, key, hpa)
}

// hpaStateFor returns key's state, creating it; callers hold c.mu.
func (c *Controller) hpaStateFor(key string) *hpaState {
	s := c.state[key]
	if s == nil {
		s = &hpaState{}
		c.state[key] = s
	}
	return s
}

func (c *Controller) reconcile(ctx context.Context, key string, shared *autoscalingv2.HorizontalPodAutoscaler) error {
	logger := klog.FromContext(ctx)
	hpa := shared.DeepCopy()
	// The apiserver defaults behavior; an object written another way gets
	// the same defaults here, so the rules below see full policies.
	autoscalingapi.DefaultHorizontalPodAutoscaler(hpa)
	orig := shared.Status.DeepCopy()
	ref := hpa.Spec.ScaleTargetRef
	reference := fmt.Sprintf("%s/%s/%s", ref.Kind, hpa.Namespace, ref.Name)

	sc, gr, err := c.targetScale(ctx, hpa)
	if err != nil {
		c.recorder.Event(hpa, corev1.EventTypeWarning, "FailedGetScale", err.Error())
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", "the HPA controller was unable to get the target's current scale: "+err.Error(), c.clock.Now())
		c.writeStatus(ctx, orig, hpa)
		return fmt.Errorf("failed to query scale subresource for %s: %w", reference, err)
	}
	setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale", c.clock.Now())
	current := sc.Spec.Replicas
	now := c.clock.Now()
	c.mu.Lock()
	if st := c.hpaStateFor(key); st.recommendations == nil {
		st.recommendations = []recommendation{{current, now}}
	}
	c.mu.Unlock()

	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	hasObjectOrExternal := false
	for _, m := range hpa.Spec.Metrics {
		if m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType {
			hasObjectOrExternal = true
		}
	}
	scaledToZero := conditionTrue(hpa, autoscalingv2.ScaledToZero)

	var (
		statuses  []autoscalingv2.MetricStatus
		desired   int32
		reason    string
		rescale   = true
		computing = true
		retErr    error
	)
	switch {
	case current == 0:
		// A target at zero is left alone unless the HPA scaled it there
		// (HPAScaleToZero) and can tell from object or external metrics
		// when to come back, or its minimum is above zero again.
		if !scaledToZero || (minReplicas == 0 && !hasObjectOrExternal) {
			computing, rescale = false, false
			setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero", c.clock.Now())
		}
	case current > hpa.Spec.MaxReplicas:
		reason, desired, computing = "Current number of replicas above Spec.MaxReplicas", hpa.Spec.MaxReplicas, false
	case current < minReplicas:
		reason, desired, computing = "Current number of replicas below Spec.MinReplicas", minReplicas, false
	}

	if computing {
		proposed, metricName, sts, err := c.computeReplicas(ctx, hpa, sc)
		statuses = sts
		if err != nil && proposed == -1 {
			c.setStatus(hpa, current, hpa.Status.DesiredReplicas, statuses, false)
			c.writeStatus(ctx, orig, hpa)
			c.recorder.Event(hpa, corev1.EventTypeWarning, "FailedComputeMetricsReplicas", err.Error())
			return fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", reference, err)
		}
		retErr = err
		logger.V(4).Info("Proposing desired replicas", "hpa", klog.KObj(hpa), "desiredReplicas", proposed, "metric", metricName, "tolerances", c.tolerances(hpa), "scaleTarget", reference)
		metricReason := ""
		if proposed > desired {
			desired, metricReason = proposed, metricName
		}
		switch {
		case desired > current:
			reason = metricReason + " above target"
		case desired < current:
			reason = "All metrics below target"
		}
		desired = c.normalize(hpa, key, current, desired, minReplicas)
		if current == 0 && minReplicas != 0 && scaledToZero && desired < minReplicas {
			desired = minReplicas
			if reason == "" {
				reason = "Current number of replicas below Spec.MinReplicas"
			}
		}
		rescale = desired != current
	}

	if rescale {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			sc.Spec.Replicas = desired
			_, err := c.clients.Scales.Scales(hpa.Namespace).Update(ctx, gr, sc, metav1.UpdateOptions{})
			if err == nil {
				return nil
			}
			if latest, gerr := c.clients.Scales.Scales(hpa.Namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{}); gerr == nil {
				sc = latest
			}
			return err
		})
		if err != nil {
			c.recorder.Eventf(hpa, corev1.EventTypeWarning, "FailedRescale", "New size: %d; reason: %s; error: %v", desired, reason, err)
			setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", "the HPA controller was unable to update the target scale: "+err.Error(), c.clock.Now())
			c.setStatus(hpa, current, hpa.Status.DesiredReplicas, statuses, false)
			c.writeStatus(ctx, orig, hpa)
			return fmt.Errorf("failed to rescale %s: %w", reference, err)
		}
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", fmt.Sprintf("the HPA controller was able to update the target scale to %d", desired), c.clock.Now())
		c.recorder.Eventf(hpa, corev1.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s", desired, reason)
		c.mu.Lock()
		c.hpaStateFor(key).recordScale(hpa.Spec.Behavior, current, desired, c.clock.Now())
		c.mu.Unlock()
		logger.Info("Successfully rescaled", "hpa", klog.KObj(hpa), "currentReplicas", current, "desiredReplicas", desired, "reason", reason)
		if current > 0 && desired == 0 && minReplicas == 0 && hasObjectOrExternal {
			setCondition(hpa, autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero", "the HPA controller scaled the workload to zero", c.clock.Now())
		} else {
			setCondition(hpa, autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero", "the HPA controller did not scale the workload to zero", c.clock.Now())
		}
	} else {
		logger.V(4).Info("Decided not to scale", "scaleTarget", reference, "desiredReplicas", desired, "lastScaleTime", hpa.Status.LastScaleTime)
		desired = current
	}
	c.setStatus(hpa, current, desired, statuses, rescale)
	if err := c.writeStatus(ctx, orig, hpa); err != nil {
		return err
	}
	return retErr
}

// targetScale reads the scale of the HPA's target, trying each resource
// its kind maps to.
func (c *Controller) targetScale(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.Scale, schema.GroupResource, error) {
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, err
	}
	mappings, err := c.clients.Mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		if r, ok := c.clients.Mapper.(interface{ Reset() }); ok {
			r.Reset()
		}
		return nil, schema.GroupResource{}, err
	}
	var first error
	for _, m := range mappings {
		gr := m.Resource.GroupResource()
		sc, err := c.clients.Scales.Scales(hpa.Namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return sc, gr, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = errors.New("unrecognized resource")
	}
	return nil, schema.GroupResource{}, first
}

// normalize bounds the metrics' proposal by stabilization, policies and
// min/maxReplicas, setting AbleToScale and ScalingLimited.
func (c *Controller) normalize(hpa *autoscalingv2.HorizontalPodAutoscaler, key string, current, proposed, minReplicas int32) int32 {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.hpaStateFor(key)
	var (
		stabilized          int32
		ableReason, ableMsg string
		out                 int32
		limReason, limMsg   string
	)
	if b := hpa.Spec.Behavior; b == nil {
		stabilized = st.stabilizeDown(proposed, c.cfg.DownscaleStabilizationWindow, now)
		ableReason, ableMsg = "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
		out, limReason, limMsg = limitWithoutBehavior(current, stabilized, minReplicas, hpa.Spec.MaxReplicas)
	} else {
		down := c.cfg.DownscaleStabilizationWindow
		if b.ScaleDown != nil && b.ScaleDown.StabilizationWindowSeconds != nil {
			down = time.Duration(*b.ScaleDown.StabilizationWindowSeconds) * time.Second
		}
		var up time.Duration
		if b.ScaleUp != nil && b.ScaleUp.StabilizationWindowSeconds != nil {
			up = time.Duration(*b.ScaleUp.StabilizationWindowSeconds) * time.Second
		}
		stabilized, ableReason, ableMsg = st.stabilize(current, proposed, up, down, now)
		out, limReason, limMsg = st.limitWithBehavior(b, current, stabilized, minReplicas, hpa.Spec.MaxReplicas, now)
	}
	if stabilized != proposed {
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, ableReason, ableMsg, now)
	} else {
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size", now)
	}
	status := corev1.ConditionFalse
	if out != stabilized {
		status = corev1.ConditionTrue
	}
	setCondition(hpa, autoscalingv2.ScalingLimited, status, limReason, limMsg, now)
	return out
}

func (c *Controller) tolerances(hpa *autoscalingv2.HorizontalPodAutoscaler) tolerances {
	t := tolerances{c.cfg.Tolerance, c.cfg.Tolerance}
	if b := hpa.Spec.Behavior; b != nil {
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			t.down = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			t.up = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
	}
	return t
}

func (c *Controller) setStatus(hpa *autoscalingv2.HorizontalPodAutoscaler, current, desired int32, metrics []autoscalingv2.MetricStatus, rescaled bool) {
	gen := hpa.Generation
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: &gen,
		CurrentReplicas:    current,
		DesiredReplicas:    desired,
		LastScaleTime:      hpa.Status.LastScaleTime,
		CurrentMetrics:     metrics,
		Conditions:         hpa.Status.Conditions,
	}
	if rescaled {
		t := metav1.NewTime(c.clock.Now())
		hpa.Status.LastScaleTime = &t
	}
}

// writeStatus writes hpa's status when it differs from orig.
func (c *Controller) writeStatus(ctx context.Context, orig *autoscalingv2.HorizontalPodAutoscalerStatus, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	if apiequality.Semantic.DeepEqual(orig, &hpa.Status) {
		return nil
	}
	// Write the object as read, with only the new status: the defaults
	// applied above belong to the apiserver.
	out, err := c.hpas.HorizontalPodAutoscalers(hpa.Namespace).Get(hpa.Name)
	if err != nil {
		return fmt.Errorf("failed to update status for %s: %w", hpa.Name, err)
	}
	out = out.DeepCopy()
	out.Status = hpa.Status
	if _, err := c.clients.HPAs.HorizontalPodAutoscalers(hpa.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		c.recorder.Event(hpa, corev1.EventTypeWarning, "FailedUpdateStatus", err.Error())
		return fmt.Errorf("failed to update status for %s: %w", hpa.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Successfully updated status", "hpa", klog.KObj(hpa))
	return nil
}

func conditionTrue(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) bool {
	for _, c := range hpa.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setCondition sets the condition t, moving its transition time only when
// its status changes.
func setCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) {
	conds := hpa.Status.Conditions
	i := 0
	for ; i < len(conds); i++ {
		if conds[i].Type == t {
			break
		}
	}
	if i == len(conds) {
		conds = append(conds, autoscalingv2.HorizontalPodAutoscalerCondition{Type: t})
	}
	if conds[i].Status != status {
		conds[i].LastTransitionTime = metav1.NewTime(now)
	}
	conds[i].Status, conds[i].Reason, conds[i].Message = status, reason, message
	hpa.Status.Conditions = conds
}
