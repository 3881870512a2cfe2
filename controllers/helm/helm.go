// Package helm is k1s's helm-controller (k3s's, same API): a
// helm.cattle.io/v1 HelmChart is installed as a Helm release of its name
// in spec.targetNamespace (default: its own namespace), upgraded when the
// chart or its values change (a HelmChartConfig of the same name and
// namespace adds its values over the chart's), and uninstalled when the
// HelmChart is deleted (a finalizer holds it until then). k3s runs a helm
// Job per change; k1s runs the Helm SDK in the controller manager, with
// the controller's own credentials, so no helm image is needed.
//
// Charts come from spec.chartContent (base64 of a .tgz), a file or
// directory relative to the manifests folder, k3s's
// https://%{KUBERNETES_API}%/static/charts/NAME.tgz (read from
// <data-dir>/server/static/charts), or a repository (spec.repo, a chart
// URL) fetched with the SDK. Status: the Failed condition (True with the
// error, or False once installed) and an event per install, upgrade,
// failure and uninstall.
package helm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
)

// Config configures the controller.
type Config struct {
	// ManifestsDir is where relative spec.chart paths are found
	// (<data-dir>/server/manifests).
	ManifestsDir string
	// StaticDir serves k3s's /static/charts/ URLs
	// (<data-dir>/server/static/charts).
	StaticDir string
	// CacheDir holds charts downloaded from repositories
	// (<data-dir>/server/helm).
	CacheDir string
	// Workers is how many charts are handled at once. Default 2.
	Workers int
}

// defaultTimeout is helm's --timeout default, helm-controller's too.
const defaultTimeout = 300 * time.Second

// Controller reconciles HelmCharts. Create it with New; Run once.
type Controller struct {
	cfg      Config
	dyn      dynamic.Interface
	charts   cache.GenericLister
	configs  cache.GenericLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	releaser Releaser
	recorder record.EventRecorder
}

// New watches HelmCharts and HelmChartConfigs through factory (started by
// the caller).
func New(cfg Config, dyn dynamic.Interface, factory dynamicinformer.DynamicSharedInformerFactory, releaser Releaser, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	charts := factory.ForResource(HelmChartGVR)
	configs := factory.ForResource(HelmChartConfigGVR)
	c := &Controller{
		cfg: cfg, dyn: dyn, charts: charts.Lister(), configs: configs.Lister(), releaser: releaser, recorder: recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "helm", Clock: clk}),
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: enqueue}
	r1, err := charts.Informer().AddEventHandler(handler)
	if err != nil {
		return nil, fmt.Errorf("helm: watch HelmCharts: %w", err)
	}
	r2, err := configs.Informer().AddEventHandler(handler)
	if err != nil {
		return nil, fmt.Errorf("helm: watch HelmChartConfigs: %w", err)
	}
	c.synced = []cache.InformerSynced{r1.HasSynced, r2.HasSynced}
	return c, nil
}

// Descriptor registers the controller with the controller manager as
// "helm-controller" (k3s's name), acting as kube-system/helm-controller,
// which the default policy binds to cluster-admin (a chart may hold any
// object, as k3s's helm Job's account may).
func Descriptor(cfg Config) manager.Controller {
	return manager.Controller{
		Name:           "helm-controller",
		Aliases:        []string{"helm"},
		ServiceAccount: "helm-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			restCfg, err := cc.ClientConfig()
			if err != nil {
				return err
			}
			dyn, err := cc.DynamicClient()
			if err != nil {
				return err
			}
			factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, cc.ResyncPeriod())
			c, err := New(cfg, dyn, factory, NewReleaser(restCfg, cfg.CacheDir), cc.EventRecorder("helm-controller"), cc.Clock)
			if err != nil {
				return err
			}
			disc, err := cc.DiscoveryClient()
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error {
				// The deploy controller installs the CRDs once the apiserver
				// serves; watch only once they are served.
				err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
					_, err := disc.ServerResourcesForGroupVersion(HelmChartGVR.GroupVersion().String())
					return err == nil, nil
				})
				if err != nil {
					return nil // cancelled
				}
				factory.Start(ctx.Done())
				defer factory.Shutdown()
				return c.Run(ctx)
			})
			return nil
		},
	}
}

// Run waits for the caches (the CRDs may appear later: k1s's deploy
// controller installs them) and runs the workers until ctx is cancelled.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithName("helm")
	ctx = klog.NewContext(ctx, logger)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return nil
	}
	for range c.cfg.Workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		err := c.sync(ctx, key)
		if err == nil {
			c.queue.Forget(key)
		} else {
			klog.FromContext(ctx).Info("HelmChart not reconciled; retrying", "key", key, "err", err)
			c.queue.AddRateLimited(key)
		}
		c.queue.Done(key)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	obj, err := c.charts.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	hc := &HelmChart{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hc); err != nil {
		return fmt.Errorf("decode HelmChart %s: %w", key, err)
	}
	ref := releaseRef(hc)
	if hc.DeletionTimestamp != nil {
		if !slices.Contains(hc.Finalizers, Finalizer) {
			return nil
		}
		if err := c.releaser.Uninstall(ctx, ref); err != nil {
			c.recorder.Eventf(u, corev1.EventTypeWarning, "UninstallFailed", "Uninstalling release %s/%s failed: %v", ref.Namespace, ref.Name, err)
			return err
		}
		c.recorder.Eventf(u, corev1.EventTypeNormal, "Uninstalled", "Uninstalled release %s/%s", ref.Namespace, ref.Name)
		return c.setFinalizer(ctx, u, false)
	}
	if !slices.Contains(hc.Finalizers, Finalizer) {
		// The update comes back through the informer and syncs again.
		return c.setFinalizer(ctx, u, true)
	}

	var hcc *HelmChartConfigSpec
	if cobj, err := c.configs.ByNamespace(ns).Get(name); err == nil {
		if cu, ok := cobj.(*unstructured.Unstructured); ok {
			conf := &HelmChartConfig{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cu.Object, conf); err == nil {
				hcc = &conf.Spec
			}
		}
	}
	policy := hc.Spec.FailurePolicy
	if hcc != nil && hcc.FailurePolicy != "" {
		policy = hcc.FailurePolicy
	}

	src, err := locate(&hc.Spec, c.cfg.ManifestsDir, c.cfg.StaticDir)
	if err != nil {
		return c.failed(ctx, u, hc, "", "ChartNotFound", err, false)
	}
	vals, err := values(&hc.Spec, hcc)
	if err != nil {
		return c.failed(ctx, u, hc, "", "InvalidValues", err, false)
	}
	hash := configHash(src, &hc.Spec, vals, ref.Namespace)
	current, err := c.releaser.Current(ctx, ref)
	if err != nil {
		return fmt.Errorf("read release %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if hc.Annotations[AnnotationConfigHash] == hash {
		if current != nil && current.Info != nil && current.Info.Status == release.StatusDeployed {
			return nil // installed as asked
		}
		if policy == failurePolicyAbort && isFailed(hc) {
			return nil // left for the operator; a change tries again
		}
	}

	var ch *chart.Chart
	if src.repo != "" {
		ch, err = c.releaser.Fetch(ctx, src.repo, hc.Spec.Repo, hc.Spec.Version, &hc.Spec)
	} else {
		ch, err = src.load()
	}
	if err != nil {
		return c.failed(ctx, u, hc, hash, "ChartLoadFailed", err, policy == failurePolicyAbort)
	}

	verb, reason := "Installed", "Installed"
	var rel *release.Release
	switch {
	case current == nil:
		rel, err = c.releaser.Install(ctx, ref, ch, vals)
	case current.Info != nil && current.Info.Status == release.StatusFailed && current.Version == 1 && policy != failurePolicyAbort && policy != failurePolicyRetry:
		// The first install failed: reinstall it cleanly (helm-controller's
		// "reinstall" policy).
		if err = c.releaser.Uninstall(ctx, ref); err == nil {
			rel, err = c.releaser.Install(ctx, ref, ch, vals)
		}
	default:
		verb, reason = "Upgraded", "Upgraded"
		rel, err = c.releaser.Upgrade(ctx, ref, ch, vals)
	}
	if err != nil {
		fail := "InstallFailed"
		if verb == "Upgraded" {
			fail = "UpgradeFailed"
		}
		return c.failed(ctx, u, hc, hash, fail, err, policy == failurePolicyAbort)
	}
	revision := 0
	if rel != nil {
		revision = rel.Version
	}
	msg := fmt.Sprintf("%s release %s/%s, revision %d, chart %s", verb, ref.Namespace, ref.Name, revision, chartID(ch))
	c.recorder.Event(u, corev1.EventTypeNormal, reason, msg)
	klog.FromContext(ctx).V(2).Info("HelmChart reconciled", "helmchart", key, "revision", revision, "action", verb)
	return c.record(ctx, u, hash, HelmChartCondition{Type: ConditionFailed, Status: corev1.ConditionFalse, Reason: reason, Message: msg})
}

func chartID(ch *chart.Chart) string {
	if ch == nil || ch.Metadata == nil {
		return "?"
	}
	return ch.Metadata.Name + "-" + ch.Metadata.Version
}

func releaseRef(hc *HelmChart) ReleaseRef {
	r := ReleaseRef{Name: hc.Name, Namespace: hc.Spec.TargetNamespace, Driver: hc.Spec.Driver,
		CreateNamespace: hc.Spec.CreateNamespace, TakeOwnership: hc.Spec.TakeOwnership, Timeout: defaultTimeout}
	if r.Namespace == "" {
		r.Namespace = hc.Namespace
	}
	if hc.Spec.Timeout != nil && hc.Spec.Timeout.Duration > 0 {
		r.Timeout = hc.Spec.Timeout.Duration
	}
	return r
}

func isFailed(hc *HelmChart) bool {
	for _, c := range hc.Status.Conditions {
		if c.Type == ConditionFailed {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// failed reports err: a Warning event, the Failed condition True. With
// final (the abort policy) the hash is recorded and nothing is retried
// until the HelmChart changes; otherwise the error is returned to retry.
func (c *Controller) failed(ctx context.Context, u *unstructured.Unstructured, hc *HelmChart, hash, reason string, err error, final bool) error {
	c.recorder.Eventf(u, corev1.EventTypeWarning, reason, "HelmChart %s/%s: %v", hc.Namespace, hc.Name, err)
	record := hc.Annotations[AnnotationConfigHash]
	if final {
		record = hash
	}
	if rerr := c.record(ctx, u, record, HelmChartCondition{Type: ConditionFailed, Status: corev1.ConditionTrue, Reason: reason, Message: err.Error()}); rerr != nil {
		return errors.Join(err, rerr)
	}
	if final {
		return nil
	}
	return err
}

// record writes the hash annotation (when it changed) and the condition
// through the status subresource.
func (c *Controller) record(ctx context.Context, u *unstructured.Unstructured, hash string, cond HelmChartCondition) error {
	client := c.dyn.Resource(HelmChartGVR).Namespace(u.GetNamespace())
	cur := u.DeepCopy()
	if hash != "" && cur.GetAnnotations()[AnnotationConfigHash] != hash {
		ann := cur.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationConfigHash] = hash
		cur.SetAnnotations(ann)
		updated, err := client.Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("record the config hash: %w", err)
		}
		cur = updated
	}
	conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
	want := map[string]any{"type": cond.Type, "status": string(cond.Status), "reason": cond.Reason, "message": cond.Message}
	out := make([]any, 0, len(conds)+1)
	found, same := false, false
	for _, x := range conds {
		m, _ := x.(map[string]any)
		if m != nil && m["type"] == cond.Type {
			found = true
			same = m["status"] == want["status"] && m["reason"] == want["reason"] && m["message"] == want["message"]
			out = append(out, want)
			continue
		}
		out = append(out, x)
	}
	if !found {
		out = append(out, want)
	}
	if found && same {
		return nil
	}
	if err := unstructured.SetNestedSlice(cur.Object, out, "status", "conditions"); err != nil {
		return err
	}
	if _, err := client.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update HelmChart status: %w", err)
	}
	return nil
}

// setFinalizer adds or removes the controller's finalizer.
func (c *Controller) setFinalizer(ctx context.Context, u *unstructured.Unstructured, add bool) error {
	cur := u.DeepCopy()
	fs := cur.GetFinalizers()
	if add {
		fs = append(fs, Finalizer)
	} else {
		fs = slices.DeleteFunc(fs, func(f string) bool { return f == Finalizer })
	}
	cur.SetFinalizers(fs)
	_, err := c.dyn.Resource(HelmChartGVR).Namespace(cur.GetNamespace()).Update(ctx, cur, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update the finalizers of HelmChart %s/%s: %w", cur.GetNamespace(), cur.GetName(), err)
	}
	return nil
}
