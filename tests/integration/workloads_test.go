package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/daemonset"
	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/controllers/statefulset"
	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/tests/integration/framework"
)

// workloadControllerNames are the controllers the workload tests exercise.
var workloadControllerNames = []string{daemonset.Name, statefulset.Name}

// startWorkloads starts a control plane running the DaemonSet and
// StatefulSet controllers: the server's own once it registers them,
// otherwise a controller manager of this test running their Descriptors
// with their service accounts' credentials (so their RBAC roles are
// exercised).
func startWorkloads(t *testing.T) (*framework.Server, kubernetes.Interface) {
	t.Helper()
	dir := t.TempDir()
	_, err := server.New(server.Config{
		DataDir:           filepath.Join(dir, "data"),
		NodeIP:            "127.0.0.1",
		AdvertiseAddress:  "127.0.0.1",
		DisableAgent:      true,
		ControllerManager: framework.Controllers(workloadControllerNames...),
	})
	if err != nil && !strings.Contains(err.Error(), "unknown controller") {
		t.Fatalf("server config: %v", err)
	}
	s := framework.Start(t)
	if err == nil {
		t.Log("the server runs the daemonset and statefulset controllers")
		return s, s.Client(t)
	}
	t.Log("starting the daemonset and statefulset controllers in the test")
	cfg := manager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.KubeAPIQPS, cfg.KubeAPIBurst = 200, 400
	m, err := manager.New(cfg, s.RESTConfig(t), daemonset.Descriptor(), statefulset.Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	})
	return s, s.Client(t)
}

func wlNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wlPoll(t, "default service account", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

func wlPoll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wlNode(t *testing.T, c kubernetes.Interface, name string, labels map[string]string, taints ...corev1.Taint) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	if _, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// affinityNode is the node a pod's required node affinity names through
// metadata.name, as DaemonSet pods carry it.
func affinityNode(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchFields {
			if r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// wlKubelet plays scheduler and kubelet for namespace until the test ends:
// it binds unbound pods through pods/binding (to the node their affinity
// names, else to node), makes bound pods Running and Ready, and finishes
// graceful deletions.
func wlKubelet(t *testing.T, c kubernetes.Interface, namespace, node string) {
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
					case p.Spec.NodeName == "":
						target := affinityNode(p)
						if target == "" {
							target = node
						}
						// A scheduler of the server may have been faster: ignore.
						_ = c.CoreV1().Pods(namespace).Bind(ctx, &corev1.Binding{
							ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: p.UID},
							Target:     corev1.ObjectReference{Kind: "Node", Name: target},
						}, metav1.CreateOptions{})
					case p.Status.Phase != corev1.PodRunning:
						now := metav1.Now()
						p.Status.Phase = corev1.PodRunning
						p.Status.StartTime = &now
						p.Status.Conditions = []corev1.PodCondition{
							{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
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

func wlReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podLog follows the pods of a namespace through a watch, keeping the
// latest state of each and the order of notable events. Safe for
// concurrent use.
type podLog struct {
	mu      sync.Mutex
	pods    map[string]*corev1.Pod
	events  []string // "create web-0", "delete web-2" (deletion began)
	errs    []string // ordering violations seen
	onEvent func(l *podLog, typ watch.EventType, p *corev1.Pod)
}

func watchPods(t *testing.T, c kubernetes.Interface, namespace string, onEvent func(l *podLog, typ watch.EventType, p *corev1.Pod)) *podLog {
	t.Helper()
	w, err := c.CoreV1().Pods(namespace).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := &podLog{pods: map[string]*corev1.Pod{}, onEvent: onEvent}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			l.mu.Lock()
			old := l.pods[p.Name]
			switch {
			case ev.Type == watch.Added:
				l.events = append(l.events, "create "+p.Name)
			case ev.Type == watch.Modified && p.DeletionTimestamp != nil && (old == nil || old.DeletionTimestamp == nil):
				l.events = append(l.events, "delete "+p.Name)
			case ev.Type == watch.Deleted && (old == nil || old.DeletionTimestamp == nil):
				l.events = append(l.events, "delete "+p.Name)
			}
			if l.onEvent != nil {
				l.onEvent(l, ev.Type, p)
			}
			if ev.Type == watch.Deleted {
				delete(l.pods, p.Name)
			} else {
				l.pods[p.Name] = p
			}
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return l
}

func (l *podLog) snapshot() (events, errs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events), slices.Clone(l.errs)
}

// TestDaemonSet: a DaemonSet gets one pod on each eligible node, placed
// through node affinity; nodes joining or leaving eligibility gain or lose
// theirs; a template change rolls out to every node.
func TestDaemonSet(t *testing.T) {
	_, c := startWorkloads(t)
	ctx := context.Background()
	const ns = "daemons"
	wlNamespace(t, c, ns)
	worker := map[string]string{"role": "worker"}
	wlNode(t, c, "ds-n1", worker)
	wlNode(t, c, "ds-n2", worker, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	wlNode(t, c, "ds-n3", nil)
	wlNode(t, c, "ds-n4", worker, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule})
	wlKubelet(t, c, ns, "")

	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: worker,
					Containers:   []corev1.Container{{Name: "agent", Image: "agent:1"}},
				},
			},
		},
	}
	if _, err := c.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// podsByNode is the live pods' nodes and images.
	podsByNode := func(ctx context.Context) (map[string]string, error) {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if prev, dup := out[p.Spec.NodeName]; dup {
				out[p.Spec.NodeName] = prev + "," + p.Spec.Containers[0].Image
				continue
			}
			out[p.Spec.NodeName] = p.Spec.Containers[0].Image
		}
		return out, nil
	}
	waitState := func(what string, wantPods map[string]string, wantDesired, wantUpdated int32) {
		t.Helper()
		var got map[string]string
		var st appsv1.DaemonSetStatus
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			if got, err = podsByNode(ctx); err != nil {
				return false, err
			}
			d, err := c.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st = d.Status
			return fmt.Sprint(got) == fmt.Sprint(wantPods) && st.ObservedGeneration == d.Generation &&
				st.DesiredNumberScheduled == wantDesired && st.CurrentNumberScheduled == wantDesired &&
				st.NumberReady == wantDesired && st.NumberAvailable == wantDesired &&
				st.UpdatedNumberScheduled == wantUpdated && st.NumberMisscheduled == 0, nil
		}); err != nil {
			t.Fatalf("%s: pods %v (want %v), status %+v", what, got, wantPods, st)
		}
	}
	// ds-n2's unschedulable taint is tolerated; ds-n3 is no worker; ds-n4's
	// taint is not tolerated.
	waitState("initial rollout", map[string]string{"ds-n1": "agent:1", "ds-n2": "agent:1"}, 2, 2)

	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if affinityNode(&p) != p.Spec.NodeName {
			t.Errorf("pod %s on %s requires node %q", p.Name, p.Spec.NodeName, affinityNode(&p))
		}
		if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == "" {
			t.Errorf("pod %s has no %s label", p.Name, appsv1.DefaultDaemonSetUniqueLabelKey)
		}
		var tolerated []string
		for _, tol := range p.Spec.Tolerations {
			tolerated = append(tolerated, tol.Key+":"+string(tol.Effect))
		}
		for _, want := range []string{"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unschedulable:NoSchedule"} {
			if !slices.Contains(tolerated, want) {
				t.Errorf("pod %s tolerations %v lack %s", p.Name, tolerated, want)
			}
		}
	}
	revs, err := c.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(revs.Items) != 1 || revs.Items[0].Revision != 1 {
		t.Fatalf("controller revisions %v (%v), want one at revision 1", revs, err)
	}

	// A node becoming a worker gets a pod.
	n3, err := c.CoreV1().Nodes().Get(ctx, "ds-n3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n3.Labels = worker
	if _, err := c.CoreV1().Nodes().Update(ctx, n3, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState("node labelled", map[string]string{"ds-n1": "agent:1", "ds-n2": "agent:1", "ds-n3": "agent:1"}, 3, 3)

	// A NoExecute taint the pods do not tolerate drives its pod away.
	n1, err := c.CoreV1().Nodes().Get(ctx, "ds-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n1.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}
	if _, err := c.CoreV1().Nodes().Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState("node tainted", map[string]string{"ds-n2": "agent:1", "ds-n3": "agent:1"}, 2, 2)

	// A new template rolls out to every node (maxUnavailable 1).
	d, err := c.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "agent:2"
	if _, err := c.AppsV1().DaemonSets(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState("rolling update", map[string]string{"ds-n2": "agent:2", "ds-n3": "agent:2"}, 2, 2)
	revs, err = c.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(revs.Items) != 2 {
		t.Fatalf("controller revisions %v (%v), want two", revs, err)
	}
}

// TestStatefulSet: a StatefulSet of 3 comes up one pod at a time, each
// after the previous is Running and Ready, with a claim per pod from its
// template and stable names and hostnames; a template change rolls from
// the highest ordinal down, one pod at a time.
func TestStatefulSet(t *testing.T) {
	_, c := startWorkloads(t)
	ctx := context.Background()
	const ns = "stateful"
	wlNamespace(t, c, ns)
	wlNode(t, c, "ss-n1", nil)

	// Record, for each pod creation and deletion, whether the ordering
	// rules held at that moment of the watch stream.
	var phase string // "create" or "update", under podLog.mu
	log := watchPods(t, c, ns, func(l *podLog, typ watch.EventType, p *corev1.Pod) {
		_, ord, _ := strings.Cut(p.Name, "web-")
		n, _ := strconv.Atoi(ord)
		switch {
		case typ == watch.Added && phase == "create" && n > 0:
			prev := l.pods[fmt.Sprintf("web-%d", n-1)]
			if prev == nil || !wlReady(prev) {
				l.errs = append(l.errs, fmt.Sprintf("%s created before web-%d was Running and Ready", p.Name, n-1))
			}
		case typ == watch.Modified && phase == "update" && p.DeletionTimestamp != nil && l.pods[p.Name] != nil && l.pods[p.Name].DeletionTimestamp == nil:
			for other, op := range l.pods {
				if other != p.Name && !wlReady(op) {
					l.errs = append(l.errs, fmt.Sprintf("%s deleted while %s was not ready", p.Name, other))
				}
			}
		}
	})
	log.mu.Lock()
	phase = "create"
	log.mu.Unlock()
	wlKubelet(t, c, ns, "ss-n1")

	labels := map[string]string{"app": "web"}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](3),
			ServiceName: "web-hl",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
		},
	}
	if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSet := func(what string, cond func(*appsv1.StatefulSet) bool) *appsv1.StatefulSet {
		t.Helper()
		var got *appsv1.StatefulSet
		wlPoll(t, what, func(ctx context.Context) (bool, error) {
			var err error
			got, err = c.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			return err == nil && got.Status.ObservedGeneration == got.Generation && cond(got), err
		})
		return got
	}
	got := waitSet("3 ready replicas", func(s *appsv1.StatefulSet) bool {
		return s.Status.ReadyReplicas == 3 && s.Status.AvailableReplicas == 3 && s.Status.CurrentReplicas == 3 && s.Status.UpdatedReplicas == 3
	})
	if got.Status.CurrentRevision == "" || got.Status.CurrentRevision != got.Status.UpdateRevision {
		t.Errorf("revisions: current %q, update %q", got.Status.CurrentRevision, got.Status.UpdateRevision)
	}
	rev1 := got.Status.CurrentRevision
	events, errs := log.snapshot()
	if want := []string{"create web-0", "create web-1", "create web-2"}; !slices.Equal(events, want) {
		t.Errorf("pod events %v, want %v", events, want)
	}
	for _, e := range errs {
		t.Error(e)
	}
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.Hostname != name || p.Spec.Subdomain != "web-hl" || p.Labels[appsv1.StatefulSetPodNameLabel] != name ||
			p.Labels[appsv1.PodIndexLabel] != strconv.Itoa(i) || p.Labels[appsv1.StatefulSetRevisionLabel] != rev1 {
			t.Errorf("pod %s: hostname %q subdomain %q labels %v", name, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
		}
		claim := fmt.Sprintf("data-web-%d", i)
		if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Name == "data" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim
		}) {
			t.Errorf("pod %s does not mount %s: %+v", name, claim, p.Spec.Volumes)
		}
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			t.Errorf("claim %s: %v", claim, err)
			continue
		}
		if pvc.Labels["app"] != "web" || pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
			t.Errorf("claim %s labels %v, request %v", claim, pvc.Labels, pvc.Spec.Resources.Requests)
		}
	}

	// Roll to a new image: from the highest ordinal, one at a time.
	log.mu.Lock()
	phase = "update"
	log.events = nil
	log.mu.Unlock()
	cur, err := c.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = "web:2"
	if _, err := c.AppsV1().StatefulSets(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitSet("rolled out", func(s *appsv1.StatefulSet) bool {
		return s.Status.UpdateRevision != rev1 && s.Status.CurrentRevision == s.Status.UpdateRevision &&
			s.Status.UpdatedReplicas == 3 && s.Status.ReadyReplicas == 3
	})
	events, errs = log.snapshot()
	want := []string{"delete web-2", "create web-2", "delete web-1", "create web-1", "delete web-0", "create web-0"}
	if !slices.Equal(events, want) {
		t.Errorf("pod events during the update %v, want %v", events, want)
	}
	for _, e := range errs {
		t.Error(e)
	}
	for i := range 3 {
		p, err := c.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("web-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.Containers[0].Image != "web:2" || p.Labels[appsv1.StatefulSetRevisionLabel] != got.Status.UpdateRevision {
			t.Errorf("pod %s image %s revision %s", p.Name, p.Spec.Containers[0].Image, p.Labels[appsv1.StatefulSetRevisionLabel])
		}
	}
	claims, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 3 {
		t.Errorf("claims after the update: %v (%v), want the same 3", claims, err)
	}
}
