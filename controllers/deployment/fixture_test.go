package deployment

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/controllerutil"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *Controller
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	rec := record.NewFakeRecorder(1000)
	c, err := New(client, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), rec, clk)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, client: client, factory: factory, c: c, clock: clk, recorder: rec}
	// The apiserver's part: UIDs, creation times and generations.
	client.PrependReactor("create", "replicasets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		rs := a.(clienttesting.CreateAction).GetObject().(*appsv1.ReplicaSet)
		rs.UID = types.UID(rs.Name + "-uid")
		rs.CreationTimestamp = metav1.NewTime(clk.Now())
		rs.Generation = 1
		return false, nil, nil
	})
	client.PrependReactor("update", "replicasets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		rs := a.(clienttesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
		old, err := client.Tracker().Get(a.GetResource(), rs.Namespace, rs.Name)
		if err == nil && !equalSpec(old.(*appsv1.ReplicaSet), rs) {
			rs.Generation = old.(*appsv1.ReplicaSet).Generation + 1
		}
		return false, nil, nil
	})
	f.refresh()
	return f
}

func equalSpec(a, b *appsv1.ReplicaSet) bool {
	return fmt.Sprint(a.Spec) == fmt.Sprint(b.Spec)
}

// refresh copies the clientset's objects into the informer caches.
func (f *fixture) refresh() {
	f.t.Helper()
	ctx := context.Background()
	ds, err := f.client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var dObjs []any
	for i := range ds.Items {
		dObjs = append(dObjs, &ds.Items[i])
	}
	rss, err := f.client.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var rsObjs []any
	for i := range rss.Items {
		rsObjs = append(rsObjs, &rss.Items[i])
	}
	pods, err := f.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var podObjs []any
	for i := range pods.Items {
		podObjs = append(podObjs, &pods.Items[i])
	}
	for _, r := range []struct {
		store interface{ Replace([]any, string) error }
		objs  []any
	}{
		{f.factory.Apps().V1().Deployments().Informer().GetIndexer(), dObjs},
		{f.factory.Apps().V1().ReplicaSets().Informer().GetIndexer(), rsObjs},
		{f.factory.Core().V1().Pods().Informer().GetIndexer(), podObjs},
	} {
		if err := r.store.Replace(r.objs, ""); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) sync() error {
	f.t.Helper()
	f.client.ClearActions()
	err := f.c.sync(context.Background(), "ns/web")
	f.refresh()
	return err
}

func (f *fixture) mustSync() {
	f.t.Helper()
	if err := f.sync(); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

func (f *fixture) deployment() *appsv1.Deployment {
	f.t.Helper()
	d, err := f.client.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// replicaSets returns the ReplicaSets oldest first.
func (f *fixture) replicaSets() []*appsv1.ReplicaSet {
	f.t.Helper()
	list, err := f.client.AppsV1().ReplicaSets("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []*appsv1.ReplicaSet
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	sort.Sort(byCreation(out))
	return out
}

func (f *fixture) rs(name string) *appsv1.ReplicaSet {
	f.t.Helper()
	rs, err := f.client.AppsV1().ReplicaSets("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("replica set %s: %v", name, err)
	}
	return rs
}

// setRSStatus writes a ReplicaSet's status as its controller would.
func (f *fixture) setRSStatus(name string, replicas, available int32) {
	f.t.Helper()
	rs := f.rs(name)
	rs.Status = appsv1.ReplicaSetStatus{
		Replicas: replicas, FullyLabeledReplicas: replicas, ReadyReplicas: available, AvailableReplicas: available,
		ObservedGeneration: rs.Generation, TerminatingReplicas: ptr.To[int32](0),
	}
	if _, err := f.client.AppsV1().ReplicaSets("ns").UpdateStatus(context.Background(), rs, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

func (f *fixture) updateDeployment(mutate func(d *appsv1.Deployment)) {
	f.t.Helper()
	d := f.deployment()
	mutate(d)
	d.Generation++
	if _, err := f.client.AppsV1().Deployments("ns").Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

func newDeployment(replicas int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "web-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%")),
				},
			},
			RevisionHistoryLimit:    ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}
}

func recreate(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return d
}

func rolling(surge, unavailable intstr.IntOrString) func(*appsv1.Deployment) *appsv1.Deployment {
	return func(d *appsv1.Deployment) *appsv1.Deployment {
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}
		return d
	}
}

// ownedRS is a ReplicaSet of d for its current template, as the
// controller would have made it, with the given revision, size and
// available pods.
func ownedRS(d *appsv1.Deployment, revision string, replicas, available int32, created time.Time) *appsv1.ReplicaSet {
	template := *d.Spec.Template.DeepCopy()
	hash := controllerutil.ComputeHash(&template, nil)
	template.Labels = withLabel(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	name := "web-" + hash
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), Generation: 1,
			CreationTimestamp: metav1.NewTime(created),
			Labels:            template.Labels,
			Annotations: map[string]string{
				RevisionAnnotation:        revision,
				DesiredReplicasAnnotation: fmt.Sprint(*d.Spec.Replicas),
				MaxReplicasAnnotation:     fmt.Sprint(*d.Spec.Replicas + maxSurge(d)),
			},
			OwnerReferences: []metav1.OwnerReference{*controllerutil.NewControllerRef(d, controllerKind)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: template.Labels},
			Template: template,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas: replicas, FullyLabeledReplicas: replicas, ReadyReplicas: available, AvailableReplicas: available,
			ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0),
		},
	}
}

func sizes(rss []*appsv1.ReplicaSet) string {
	var parts []string
	for _, rs := range rss {
		parts = append(parts, fmt.Sprintf("%s=%d", rs.Annotations[RevisionAnnotation], *rs.Spec.Replicas))
	}
	return strings.Join(parts, ",")
}
