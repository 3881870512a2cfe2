package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/deployment"
	"github.com/k1s/k1s/controllers/replicaset"
	"github.com/k1s/k1s/tests/integration/framework"
)

// ensureWorkloadControllers makes sure a ReplicaSet and a Deployment
// controller run against s: it probes for the server's own (a ReplicaSet
// and a Deployment in a scratch namespace get their status observed) and
// starts, from their constructors, those the server does not run.
func depEnsureControllers(t *testing.T, s *framework.Server) {
	t.Helper()
	ctx := context.Background()
	c := s.Client(t)
	ns := depNamespace(t, c, "workload-probe")
	labels := map[string]string{"app": "probe"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "probe"}}},
	}
	if _, err := c.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe-d"}}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe-d"}}, Spec: template.Spec}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var haveRS, haveDeploy bool
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		if rs, err := c.AppsV1().ReplicaSets(ns).Get(ctx, "probe", metav1.GetOptions{}); err == nil && rs.Status.ObservedGeneration > 0 {
			haveRS = true
		}
		if d, err := c.AppsV1().Deployments(ns).Get(ctx, "probe", metav1.GetOptions{}); err == nil && d.Status.ObservedGeneration > 0 {
			haveDeploy = true
		}
		return haveRS && haveDeploy, nil
	})
	if haveRS && haveDeploy {
		t.Log("the server runs the replicaset and deployment controllers")
		return
	}
	// The informers list as the manager does (here: as admin); each
	// controller acts as its service account, so its RBAC role is tested.
	admin := kubernetes.NewForConfigOrDie(s.RESTConfig(t))
	factory := informers.NewSharedInformerFactory(admin, 0)
	asServiceAccount := func(name string) kubernetes.Interface {
		return kubernetes.NewForConfigOrDie(s.UserConfig(t, "system:serviceaccount:kube-system:"+name, "system:serviceaccounts", "system:serviceaccounts:kube-system"))
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: admin.CoreV1().Events("")})
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var runs []func(context.Context) error
	if !haveRS {
		t.Log("starting a replicaset controller in the test")
		rsc, err := replicaset.New(asServiceAccount("replicaset-controller"), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(),
			broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: replicaset.Name}), nil)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, func(ctx context.Context) error { return rsc.Run(ctx, 2) })
	}
	if !haveDeploy {
		t.Log("starting a deployment controller in the test")
		dc, err := deployment.New(asServiceAccount("deployment-controller"), factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(),
			broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: deployment.Name}), nil)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, func(ctx context.Context) error { return dc.Run(ctx, 2) })
	}
	factory.Start(runCtx.Done())
	for _, run := range runs {
		wg.Go(func() {
			if err := run(runCtx); err != nil {
				t.Errorf("controller: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
		broadcaster.Shutdown()
	})
}

func depNamespace(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pods need the namespace's default service account.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("namespace %s has no default service account", name)
	}
	return name
}

// playKubelet makes every pod of namespace Running and Ready, and removes
// pods being deleted, as a kubelet would, until the test ends.
func depPlayKubelet(t *testing.T, c kubernetes.Interface, namespace string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
			if err == nil {
				for i := range pods.Items {
					p := &pods.Items[i]
					switch {
					case p.DeletionTimestamp != nil:
						_ = c.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
					case p.Status.Phase != corev1.PodRunning:
						now := metav1.Now()
						p.Status.Phase = corev1.PodRunning
						p.Status.StartTime = &now
						p.Status.Conditions = []corev1.PodCondition{
							{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
							{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
						}
						_, _ = c.CoreV1().Pods(namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
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

// rolloutStatus is kubectl rollout status's verdict on the Deployment.
func depRolloutStatus(t *testing.T, c kubernetes.Interface, namespace, name string) (string, bool) {
	t.Helper()
	d, err := c.AppsV1().Deployments(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		t.Fatal(err)
	}
	viewer, err := polymorphichelpers.StatusViewerFor(appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind())
	if err != nil {
		t.Fatal(err)
	}
	msg, done, err := viewer.Status(&unstructured.Unstructured{Object: u}, 0)
	if err != nil {
		t.Fatalf("rollout status: %v", err)
	}
	return msg, done
}

// waitRolledOut waits until kubectl rollout status says done and the
// Deployment's pods are exactly want, all of the new ReplicaSet.
func depWaitRolledOut(t *testing.T, c kubernetes.Interface, namespace, name string, want int) *appsv1.ReplicaSet {
	t.Helper()
	ctx := context.Background()
	var last string
	var newRS *appsv1.ReplicaSet
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		msg, done := depRolloutStatus(t, c, namespace, name)
		last = msg
		if !done {
			return false, nil
		}
		d, err := c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rss := depOwnedReplicaSets(t, c, d)
		newRS = nil
		for _, rs := range rss {
			if rs.Annotations[deployment.RevisionAnnotation] == d.Annotations[deployment.RevisionAnnotation] {
				newRS = rs
			} else if *rs.Spec.Replicas != 0 {
				last = fmt.Sprintf("old replica set %s still has %d replicas", rs.Name, *rs.Spec.Replicas)
				return false, nil
			}
		}
		if newRS == nil || *newRS.Spec.Replicas != int32(want) {
			last = "no new replica set of the right size"
			return false, nil
		}
		pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(pods.Items) != want {
			last = fmt.Sprintf("%d pods", len(pods.Items))
			return false, nil
		}
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != newRS.UID {
				last = fmt.Sprintf("pod %s is not the new replica set's", p.Name)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("deployment %s not rolled out with %d pods: %s", name, want, last)
	}
	return newRS
}

func depOwnedReplicaSets(t *testing.T, c kubernetes.Interface, d *appsv1.Deployment) []*appsv1.ReplicaSet {
	t.Helper()
	list, err := c.AppsV1().ReplicaSets(d.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*appsv1.ReplicaSet
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], d) {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

// watchRollout checks, from a watch of the namespace's ReplicaSets and
// pods, that the ReplicaSets never ask for more than maxTotal pods together
// and that, once minReady pods were ready, fewer are never ready.
func depWatchRollout(t *testing.T, c kubernetes.Interface, namespace string, maxTotal, minReady int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rsw, err := c.AppsV1().ReplicaSets(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pw, err := c.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var problems []string
	sizes := map[string]int32{}
	ready := map[types.UID]bool{}
	reached := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev, ok := <-rsw.ResultChan():
				if !ok {
					return
				}
				rs, ok := ev.Object.(*appsv1.ReplicaSet)
				if !ok {
					continue
				}
				if ev.Type == watch.Deleted {
					delete(sizes, rs.Name)
				} else {
					sizes[rs.Name] = *rs.Spec.Replicas
				}
				var total int32
				for _, n := range sizes {
					total += n
				}
				if total > int32(maxTotal) {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("replica sets ask for %d pods (%v), more than %d", total, sizes, maxTotal))
					mu.Unlock()
				}
			case ev, ok := <-pw.ResultChan():
				if !ok {
					return
				}
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				isReady := ev.Type != watch.Deleted && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning
				if isReady {
					ready[p.UID] = true
				} else {
					delete(ready, p.UID)
				}
				if len(ready) >= minReady {
					reached = true
				} else if reached {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("only %d pods ready, fewer than %d", len(ready), minReady))
					mu.Unlock()
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		cancel()
		rsw.Stop()
		pw.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// TestDeploymentRollout creates a Deployment of three replicas, rolls a new
// image out within maxSurge 1 and maxUnavailable 0, rolls back the way
// kubectl rollout undo does, pauses, resumes, restarts and scales it.
func TestDeploymentRollout(t *testing.T) {
	s := framework.Start(t)
	depEnsureControllers(t, s)
	ctx := context.Background()
	c := s.Client(t)
	ns := depNamespace(t, c, "rollout")
	depPlayKubelet(t, c, ns)

	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"kubernetes.io/change-cause": "first"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))},
			},
		},
	}
	d, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := depWaitRolledOut(t, c, ns, "web", 3)
	hash := first.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if hash == "" || first.Name != "web-"+hash || first.Annotations[deployment.RevisionAnnotation] != "1" || first.Annotations["kubernetes.io/change-cause"] != "first" {
		t.Fatalf("first replica set %s: labels %v annotations %v", first.Name, first.Labels, first.Annotations)
	}
	pods, _ := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || !strings.HasPrefix(p.Name, first.Name+"-") {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
	}
	d, _ = c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if cond := depAvailable(d); cond == nil || cond.Reason != deployment.MinimumReplicasAvailable {
		t.Errorf("Available condition %+v", cond)
	}

	// A new image rolls over within maxSurge 1 and maxUnavailable 0.
	stop := depWatchRollout(t, c, ns, 4, 3)
	depPatch(t, c, ns, `{"metadata":{"annotations":{"kubernetes.io/change-cause":"second"}},"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}`)
	second := depWaitRolledOut(t, c, ns, "web", 3)
	stop()
	if second.Name == first.Name || second.Annotations[deployment.RevisionAnnotation] != "2" {
		t.Fatalf("second replica set %s revision %q", second.Name, second.Annotations[deployment.RevisionAnnotation])
	}

	// kubectl rollout undo: back to revision 1's ReplicaSet, now revision 3.
	rollbacker, err := polymorphichelpers.RollbackerFor(appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind(), c)
	if err != nil {
		t.Fatal(err)
	}
	d, _ = c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if msg, err := rollbacker.Rollback(d, nil, 0, util.DryRunNone); err != nil || msg != "rolled back" {
		t.Fatalf("rollout undo: %q, %v", msg, err)
	}
	back := depWaitRolledOut(t, c, ns, "web", 3)
	if back.UID != first.UID || back.Annotations[deployment.RevisionAnnotation] != "3" || back.Annotations[deployment.RevisionHistoryAnnotation] != "1" {
		t.Fatalf("after undo the new replica set is %s (revision %q, history %q), want %s again",
			back.Name, back.Annotations[deployment.RevisionAnnotation], back.Annotations[deployment.RevisionHistoryAnnotation], first.Name)
	}
	d, _ = c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if n := len(depOwnedReplicaSets(t, c, d)); n != 2 {
		t.Errorf("%d replica sets after undo, want 2", n)
	}
	if d.Annotations[deployment.RevisionAnnotation] != "3" || d.Annotations["kubernetes.io/change-cause"] != "first" {
		t.Errorf("deployment annotations after undo %v", d.Annotations)
	}
	historyViewer, err := polymorphichelpers.HistoryViewerFor(appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind(), c)
	if err != nil {
		t.Fatal(err)
	}
	history, err := historyViewer.ViewHistory(ns, "web", 0)
	if err != nil {
		t.Fatal(err)
	}
	if fields := strings.Fields(history); strings.Join(fields, " ") != "REVISION CHANGE-CAUSE 2 second 3 first" {
		t.Errorf("rollout history:\n%s", history)
	}

	// Paused: a template change waits, scaling does not.
	depPatch(t, c, ns, `{"spec":{"paused":true}}`)
	depPatch(t, c, ns, `{"spec":{"replicas":4,"template":{"spec":{"containers":[{"name":"web","image":"nginx:3"}]}}}}`)
	d = depWaitObserved(t, c, ns, "web")
	rss := depOwnedReplicaSets(t, c, d)
	if len(rss) != 2 {
		t.Fatalf("%d replica sets while paused, want 2", len(rss))
	}
	if n := *depGetRS(t, c, ns, first.Name).Spec.Replicas; n != 4 {
		t.Errorf("paused scaling: current replica set has %d replicas, want 4", n)
	}
	if cond := depProgressing(d); cond == nil || cond.Reason != deployment.PausedDeployReason {
		t.Errorf("Progressing while paused %+v", cond)
	}
	depPatch(t, c, ns, `{"spec":{"paused":false}}`)
	third := depWaitRolledOut(t, c, ns, "web", 4)
	if third.Annotations[deployment.RevisionAnnotation] != "4" || third.Spec.Template.Spec.Containers[0].Image != "nginx:3" {
		t.Fatalf("after resume: %s revision %q", third.Name, third.Annotations[deployment.RevisionAnnotation])
	}

	// kubectl rollout restart: a template annotation, a new revision.
	depPatch(t, c, ns, fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339)))
	restarted := depWaitRolledOut(t, c, ns, "web", 4)
	if restarted.UID == third.UID || restarted.Annotations[deployment.RevisionAnnotation] != "5" {
		t.Fatalf("restart: %s revision %q", restarted.Name, restarted.Annotations[deployment.RevisionAnnotation])
	}

	// Scale to 5 and to 0.
	depPatch(t, c, ns, `{"spec":{"replicas":5}}`)
	if rs := depWaitRolledOut(t, c, ns, "web", 5); rs.UID != restarted.UID {
		t.Errorf("scaling made a new replica set %s", rs.Name)
	}
	depPatch(t, c, ns, `{"spec":{"replicas":0}}`)
	depWaitRolledOut(t, c, ns, "web", 0)
	// The pods are gone; the counts follow once the replica set's status
	// has caught up with that.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err = c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.Replicas == 0 && d.Status.AvailableReplicas == 0 && d.Status.UpdatedReplicas == 0, nil
	}); err != nil {
		t.Errorf("status at 0: %+v (%v)", d.Status, err)
	}
}

// TestDeploymentRecreate checks that a Recreate rollout removes every old
// pod before the first new one exists.
func TestDeploymentRecreate(t *testing.T) {
	s := framework.Start(t)
	depEnsureControllers(t, s)
	ctx := context.Background()
	c := s.Client(t)
	ns := depNamespace(t, c, "recreate")
	depPlayKubelet(t, c, ns)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
		},
	}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := depWaitRolledOut(t, c, ns, "web", 2)

	// Watch from before the change: no pod with another hash may be added
	// while a pod of the first ReplicaSet exists.
	oldHash := first.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var problem string
	done := make(chan struct{})
	go func() {
		defer close(done)
		old := map[string]bool{}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch {
			case p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == oldHash && ev.Type == watch.Deleted:
				delete(old, p.Name)
			case p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == oldHash:
				old[p.Name] = true
			case ev.Type == watch.Added && len(old) > 0 && problem == "":
				problem = fmt.Sprintf("new pod %s created while old pods %v remained", p.Name, old)
			}
		}
	}()
	depPatch(t, c, ns, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}`)
	second := depWaitRolledOut(t, c, ns, "web", 2)
	w.Stop()
	<-done
	if second.UID == first.UID {
		t.Fatal("no new replica set")
	}
	if problem != "" {
		t.Fatal(problem)
	}
}

func depPatch(t *testing.T, c kubernetes.Interface, namespace, patch string) {
	t.Helper()
	if _, err := c.AppsV1().Deployments(namespace).Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
}

// waitObserved waits until the controller has seen the Deployment's
// current generation.
func depWaitObserved(t *testing.T, c kubernetes.Interface, namespace, name string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		d, err = c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, err
		}
		return err == nil && d.Status.ObservedGeneration >= d.Generation, nil
	}); err != nil {
		t.Fatalf("deployment %s generation not observed: %v", name, err)
	}
	return d
}

func depGetRS(t *testing.T, c kubernetes.Interface, namespace, name string) *appsv1.ReplicaSet {
	t.Helper()
	rs, err := c.AppsV1().ReplicaSets(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func depAvailable(d *appsv1.Deployment) *appsv1.DeploymentCondition {
	return depCondition(d, appsv1.DeploymentAvailable)
}

func depProgressing(d *appsv1.Deployment) *appsv1.DeploymentCondition {
	return depCondition(d, appsv1.DeploymentProgressing)
}

func depCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}
