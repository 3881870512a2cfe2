package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/endpoints"
	"github.com/k1s/k1s/controllers/endpointslice"
	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/tests/integration/framework"
)

// TestHousekeepingControllers runs the endpoints, endpointslice, garbage
// collector, disruption, resource quota and clusterrole aggregation
// controllers (with their own service accounts' credentials, so their RBAC
// roles are exercised) against one control plane.
func TestHousekeepingControllers(t *testing.T) {
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers("serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller",
		"endpoints-controller", "endpointslice-controller", "garbage-collector-controller", "disruption-controller",
		"resourcequota-controller", "clusterrole-aggregation-controller")
	settings := server.DefaultControllerSettings()
	// Rediscovery (a custom resource owner appearing) within seconds.
	settings.GarbageCollector.SyncPeriod = 2 * time.Second
	cfg.Controllers = &settings
	s := framework.StartWith(t, cfg)
	c := s.Client(t)
	t.Run("endpoints", func(t *testing.T) { gcTestEndpoints(t, c) })
	t.Run("garbage collector", func(t *testing.T) { gcTestGarbageCollector(t, s, c) })
	t.Run("disruption budget", func(t *testing.T) { gcTestDisruption(t, c) })
	t.Run("resource quota", func(t *testing.T) { gcTestResourceQuota(t, c) })
	t.Run("clusterrole aggregation", func(t *testing.T) { gcTestAggregation(t, c) })
}

func gcPoll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 45*time.Second, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func gcNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gcPoll(t, "default service account in "+name, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// gcPod creates a pod bound to node-1 and, playing the kubelet, reports it
// Running with ip, Ready or not.
func gcPod(t *testing.T, c kubernetes.Interface, ns, name, app, ip string, ready bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	spec := podSpec()
	spec.NodeName = "node-1"
	spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	p, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
		Spec:       spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return gcSetReady(t, c, p, ip, ready)
}

func gcSetReady(t *testing.T, c kubernetes.Interface, p *corev1.Pod, ip string, ready bool) *corev1.Pod {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p, err := c.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP = "127.0.0.1"
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: now}}
	out, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("pod %s status: %v", p.Name, err)
	}
	return out
}

func gcTestEndpoints(t *testing.T, c kubernetes.Interface) {
	ctx := context.Background()
	gcNamespace(t, c, "gc-ep")
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "node-1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"},
	}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Services("gc-ep").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("web")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gcPod(t, c, "gc-ep", "a", "web", "10.42.0.10", true)
	gcPod(t, c, "gc-ep", "b", "web", "10.42.0.11", true)
	notReady := gcPod(t, c, "gc-ep", "c", "web", "10.42.0.12", false)
	gcPod(t, c, "gc-ep", "other", "db", "10.42.0.13", true)

	addrNames := func(addrs []corev1.EndpointAddress) []string {
		var out []string
		for _, a := range addrs {
			out = append(out, a.TargetRef.Name)
		}
		slices.Sort(out)
		return out
	}
	var ep *corev1.Endpoints
	gcPoll(t, "endpoints with ready and not-ready addresses", func(ctx context.Context) (bool, error) {
		var err error
		ep, err = c.CoreV1().Endpoints("gc-ep").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) != 1 {
			return false, nil
		}
		s := ep.Subsets[0]
		return slices.Equal(addrNames(s.Addresses), []string{"a", "b"}) && slices.Equal(addrNames(s.NotReadyAddresses), []string{"c"}), nil
	})
	if got := ep.Subsets[0].Ports; len(got) != 1 || got[0].Name != "http" || got[0].Port != 8080 {
		t.Errorf("endpoint ports %+v, want http 8080 (the named target port)", got)
	}
	if ep.Labels[endpoints.LabelManagedBy] != endpoints.ControllerName || ep.Labels["tier"] != "front" {
		t.Errorf("endpoints labels %v", ep.Labels)
	}
	if a := ep.Subsets[0].Addresses[0]; a.NodeName == nil || *a.NodeName != "node-1" || a.TargetRef.Kind != "Pod" {
		t.Errorf("address %+v lacks node name or target", a)
	}

	type epState struct{ ready, serving, terminating bool }
	var slice discoveryv1.EndpointSlice
	gcPoll(t, "endpoint slice with ready and not-ready endpoints", func(ctx context.Context) (bool, error) {
		list, err := c.DiscoveryV1().EndpointSlices("gc-ep").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil || len(list.Items) != 1 || len(list.Items[0].Endpoints) != 3 {
			return false, nil
		}
		slice = list.Items[0]
		return true, nil
	})
	states := map[string]epState{}
	for _, e := range slice.Endpoints {
		states[e.TargetRef.Name] = epState{*e.Conditions.Ready, *e.Conditions.Serving, *e.Conditions.Terminating}
		if e.Zone == nil || *e.Zone != "zone-a" {
			t.Errorf("endpoint %s zone %v, want zone-a", e.TargetRef.Name, e.Zone)
		}
	}
	want := map[string]epState{"a": {true, true, false}, "b": {true, true, false}, "c": {false, false, false}}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("slice endpoints %v, want %v", states, want)
	}
	if slice.AddressType != discoveryv1.AddressTypeIPv4 || len(slice.Ports) != 1 || *slice.Ports[0].Port != 8080 || *slice.Ports[0].Name != "http" {
		t.Errorf("slice address type %s ports %+v", slice.AddressType, slice.Ports)
	}
	if slice.Labels[discoveryv1.LabelManagedBy] != endpointslice.ControllerName {
		t.Errorf("slice labels %v", slice.Labels)
	}
	if ref := metav1.GetControllerOf(&slice); ref == nil || ref.Kind != "Service" || ref.Name != "web" {
		t.Errorf("slice controller %+v", ref)
	}

	// c turns ready: both follow.
	gcSetReady(t, c, notReady, "10.42.0.12", true)
	gcPoll(t, "endpoints after c became ready", func(ctx context.Context) (bool, error) {
		ep, err := c.CoreV1().Endpoints("gc-ep").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(ep.Subsets) == 1 && len(ep.Subsets[0].NotReadyAddresses) == 0 &&
			slices.Equal(addrNames(ep.Subsets[0].Addresses), []string{"a", "b", "c"}), nil
	})
	gcPoll(t, "slice after c became ready", func(ctx context.Context) (bool, error) {
		list, err := c.DiscoveryV1().EndpointSlices("gc-ep").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil || len(list.Items) != 1 {
			return false, nil
		}
		for _, e := range list.Items[0].Endpoints {
			if !*e.Conditions.Ready {
				return false, nil
			}
		}
		return len(list.Items[0].Endpoints) == 3, nil
	})

	// A pod going away leaves both.
	if err := c.CoreV1().Pods("gc-ep").Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	gcPoll(t, "endpoints after a was deleted", func(ctx context.Context) (bool, error) {
		ep, err := c.CoreV1().Endpoints("gc-ep").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(ep.Subsets) == 1 && slices.Equal(addrNames(ep.Subsets[0].Addresses), []string{"b", "c"}), nil
	})

	// Deleting the Service removes its Endpoints (controller) and slices
	// (garbage collector, through the owner reference).
	if err := c.CoreV1().Services("gc-ep").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gcPoll(t, "endpoints and slices gone with the service", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Endpoints("gc-ep").Get(ctx, "web", metav1.GetOptions{})
		list, lerr := c.DiscoveryV1().EndpointSlices("gc-ep").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		return apierrors.IsNotFound(err) && lerr == nil && len(list.Items) == 0, nil
	})
}

func gcConfigMap(t *testing.T, c kubernetes.Interface, ns, name string, owner *corev1.ConfigMap, block bool, finalizers ...string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}
	if owner != nil {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(block)}}
	}
	out, err := c.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gcGone(c kubernetes.Interface, ns, name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}
}

func gcTestGarbageCollector(t *testing.T, s *framework.Server, c kubernetes.Interface) {
	ctx := context.Background()
	const ns = "gc-gc"
	gcNamespace(t, c, ns)

	t.Run("background", func(t *testing.T) {
		owner := gcConfigMap(t, c, ns, "bg-owner", nil, false)
		gcConfigMap(t, c, ns, "bg-dep-1", owner, false)
		gcConfigMap(t, c, ns, "bg-dep-2", owner, true)
		if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, "bg-owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		gcPoll(t, "first dependent collected", gcGone(c, ns, "bg-dep-1"))
		gcPoll(t, "second dependent collected", gcGone(c, ns, "bg-dep-2"))
	})

	t.Run("dependent of an owner that never existed", func(t *testing.T) {
		gcConfigMap(t, c, ns, "lost-dep", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "never", UID: "00000000-0000-0000-0000-00000000dead"}}, false)
		gcPoll(t, "dependent of a missing owner collected", gcGone(c, ns, "lost-dep"))
	})

	t.Run("foreground", func(t *testing.T) {
		owner := gcConfigMap(t, c, ns, "fg-owner", nil, false)
		gcConfigMap(t, c, ns, "fg-held", owner, true, "k1s.test/hold")
		gcConfigMap(t, c, ns, "fg-plain", owner, true)
		if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, "fg-owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
			t.Fatal(err)
		}
		gcPoll(t, "unheld dependent collected", gcGone(c, ns, "fg-plain"))
		gcPoll(t, "held dependent being deleted", func(ctx context.Context) (bool, error) {
			cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "fg-held", metav1.GetOptions{})
			return err == nil && cm.DeletionTimestamp != nil, nil
		})
		// The owner waits for its blocking dependent.
		time.Sleep(2 * time.Second)
		o, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "fg-owner", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("owner gone while a blocking dependent remains: %v", err)
		}
		if o.DeletionTimestamp == nil || !slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("owner %v finalizers %v, want being deleted with foregroundDeletion", o.DeletionTimestamp, o.Finalizers)
		}
		held, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "fg-held", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		held.Finalizers = nil
		if _, err := c.CoreV1().ConfigMaps(ns).Update(ctx, held, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		gcPoll(t, "held dependent gone", gcGone(c, ns, "fg-held"))
		gcPoll(t, "owner gone after its dependents", gcGone(c, ns, "fg-owner"))
	})

	// upstream's "should not be blocked by dependency circle": a owned
	// by c, b by a, c by b, every reference blocking; a foreground delete
	// of a takes all three.
	t.Run("dependency circle", func(t *testing.T) {
		cms := map[string]*corev1.ConfigMap{}
		for _, n := range []string{"circle-a", "circle-b", "circle-c"} {
			cms[n] = gcConfigMap(t, c, ns, n, nil, false)
		}
		for dep, owner := range map[string]string{"circle-a": "circle-c", "circle-b": "circle-a", "circle-c": "circle-b"} {
			patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`, owner, cms[owner].UID)
			if _, err := c.CoreV1().ConfigMaps(ns).Patch(ctx, dep, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, "circle-a", metav1.DeleteOptions{
			PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
			Preconditions:     metav1.NewUIDPreconditions(string(cms["circle-a"].UID)),
		}); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"circle-a", "circle-b", "circle-c"} {
			gcPoll(t, n+" collected", gcGone(c, ns, n))
		}
	})

	t.Run("orphan", func(t *testing.T) {
		owner := gcConfigMap(t, c, ns, "or-owner", nil, false)
		gcConfigMap(t, c, ns, "or-dep", owner, true)
		if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, "or-owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
			t.Fatal(err)
		}
		gcPoll(t, "owner gone", gcGone(c, ns, "or-owner"))
		dep, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "or-dep", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("orphaned dependent: %v", err)
		}
		if len(dep.OwnerReferences) != 0 {
			t.Errorf("orphaned dependent keeps owner references %v", dep.OwnerReferences)
		}
	})

	t.Run("custom resource owner found by rediscovery", func(t *testing.T) {
		ext := apiextensionsclient.NewForConfigOrDie(s.RESTConfig(t))
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "widgets.gc.k1s.test"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "gc.k1s.test",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true),
					}},
				}},
			},
		}
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: "gc.k1s.test", Version: "v1", Resource: "widgets"}
		dyn := s.Dynamic(t)
		var widget *unstructured.Unstructured
		gcPoll(t, "widget created", func(ctx context.Context) (bool, error) {
			var err error
			widget, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "gc.k1s.test/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
			}}, metav1.CreateOptions{})
			return err == nil, nil
		})
		dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "widget-dep", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "gc.k1s.test/v1", Kind: "Widget", Name: "w", UID: types.UID(widget.GetUID()),
		}}}}
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The dependent stays while its custom owner exists.
		time.Sleep(3 * time.Second)
		if _, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "widget-dep", metav1.GetOptions{}); err != nil {
			t.Fatalf("dependent of a live custom resource: %v", err)
		}
		if err := dyn.Resource(gvr).Namespace(ns).Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gcPoll(t, "dependent of the deleted widget collected", gcGone(c, ns, "widget-dep"))
	})
}

func gcTestDisruption(t *testing.T, c kubernetes.Interface) {
	ctx := context.Background()
	const ns = "gc-pdb"
	gcNamespace(t, c, ns)
	pods := []*corev1.Pod{
		gcPod(t, c, ns, "db-0", "db", "10.42.1.10", true),
		gcPod(t, c, ns, "db-1", "db", "10.42.1.11", true),
		gcPod(t, c, ns, "db-2", "db", "10.42.1.12", true),
	}
	if _, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(2)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	allowed := func(n int32) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			p, err := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "db", metav1.GetOptions{})
			return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.DisruptionsAllowed == n, nil
		}
	}
	gcPoll(t, "one disruption allowed with three healthy pods", allowed(1))
	p, err := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.CurrentHealthy != 3 || p.Status.DesiredHealthy != 2 || p.Status.ExpectedPods != 3 {
		t.Errorf("status %+v", p.Status)
	}
	if cond := findCondition(p.Status.Conditions, policyv1.DisruptionAllowedCondition); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("DisruptionAllowed condition %+v", cond)
	}

	// One pod turns unready: no disruption allowed, eviction refused.
	gcSetReady(t, c, pods[2], "10.42.1.12", false)
	gcPoll(t, "no disruption allowed with two healthy pods", allowed(0))
	// The 429 carries Retry-After, which client-go would honour ten times
	// over; the test wants the answer.
	evict := func(name string) error {
		return c.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(name).SubResource("eviction").
			MaxRetries(0).Body(&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}).Do(ctx).Error()
	}
	if err := evict("db-0"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction against the budget: want 429, got %v", err)
	}
	if _, err := c.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{}); err != nil {
		t.Fatalf("refused eviction removed the pod: %v", err)
	}

	// Ready again: one eviction goes through, the next is refused.
	gcSetReady(t, c, pods[2], "10.42.1.12", true)
	gcPoll(t, "one disruption allowed again", allowed(1))
	if err := evict("db-0"); err != nil {
		t.Fatalf("eviction within the budget: %v", err)
	}
	gcPoll(t, "budget spent by the eviction", allowed(0))
	if err := evict("db-1"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second eviction: want 429, got %v", err)
	}
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func gcTestResourceQuota(t *testing.T, c kubernetes.Interface) {
	ctx := context.Background()
	const ns = "gc-quota"
	gcNamespace(t, c, ns)
	// Pods that exist before the quota are counted by the controller (the
	// registry starts the usage at zero).
	gcPod(t, c, ns, "early-0", "q", "10.42.2.10", true)
	gcPod(t, c, ns, "early-1", "q", "10.42.2.11", true)
	if _, err := c.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceConfigMaps: resource.MustParse("20")}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	used := func(pods int64) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			q, err := c.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			u, ok := q.Status.Used[corev1.ResourcePods]
			return ok && u.Value() == pods, nil
		}
	}
	gcPoll(t, "existing pods counted", used(2))
	gcPoll(t, "configmaps counted (kube-root-ca.crt)", func(ctx context.Context) (bool, error) {
		q, err := c.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		u, ok := q.Status.Used[corev1.ResourceConfigMaps]
		return ok && u.Value() == 1, nil
	})
	gcPod(t, c, ns, "late", "q", "10.42.2.12", true)
	gcPoll(t, "created pod counted", used(3))
	for _, name := range []string{"early-0", "late"} {
		if err := c.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
	gcPoll(t, "deleted pods released", used(1))
}

func gcTestAggregation(t *testing.T, c kubernetes.Interface) {
	ctx := context.Background()
	rule := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{"gc.k1s.test"}, Resources: []string{"gadgets"}}
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "gc-gadget-viewer", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		Rules:      []rbacv1.PolicyRule{rule},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	has := func(role string, want bool) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			r, err := c.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			found := slices.ContainsFunc(r.Rules, func(x rbacv1.PolicyRule) bool {
				return slices.Equal(x.Resources, rule.Resources) && slices.Equal(x.APIGroups, rule.APIGroups)
			})
			return found == want && len(r.Rules) > 0, nil
		}
	}
	gcPoll(t, "view aggregates the new role", has("view", true))
	// edit and admin aggregate view.
	gcPoll(t, "edit aggregates it through view", has("edit", true))
	gcPoll(t, "admin aggregates it through edit", has("admin", true))
	if err := c.RbacV1().ClusterRoles().Delete(ctx, "gc-gadget-viewer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gcPoll(t, "view drops the deleted role's rules", has("view", false))
}
