package status

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mt(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }

func mtp(s int) *metav1.Time { t := mt(s); return &t }

func cond(t corev1.PodConditionType, s corev1.ConditionStatus, at *metav1.Time) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: s}
	if at != nil {
		c.LastTransitionTime = *at
	}
	return c
}

func TestMerge(t *testing.T) {
	now := t0.Add(time.Hour)
	nowT := metav1.NewTime(now)
	tests := []struct {
		name     string
		old, new corev1.PodStatus
		want     corev1.PodStatus
	}{
		{
			name: "first status gets a start time",
			new:  corev1.PodStatus{Phase: corev1.PodPending},
			want: corev1.PodStatus{Phase: corev1.PodPending, StartTime: &nowT},
		},
		{
			name: "a given start time is used when there was none",
			new:  corev1.PodStatus{StartTime: mtp(5)},
			want: corev1.PodStatus{StartTime: mtp(5)},
		},
		{
			name: "the old start time is kept",
			old:  corev1.PodStatus{StartTime: mtp(1)},
			new:  corev1.PodStatus{StartTime: mtp(5)},
			want: corev1.PodStatus{StartTime: mtp(1)},
		},
		{
			name: "transition times kept while the status is unchanged, set when it changes",
			old: corev1.PodStatus{StartTime: mtp(1), Conditions: []corev1.PodCondition{
				cond(corev1.PodReady, corev1.ConditionFalse, mtp(2)),
				cond(corev1.PodInitialized, corev1.ConditionTrue, mtp(3)),
			}},
			new: corev1.PodStatus{Conditions: []corev1.PodCondition{
				cond(corev1.PodReady, corev1.ConditionTrue, nil),
				cond(corev1.PodInitialized, corev1.ConditionTrue, nil),
				cond(corev1.ContainersReady, corev1.ConditionTrue, nil),
				cond(corev1.PodScheduled, corev1.ConditionTrue, mtp(0)), // carried with its own time
			}},
			want: corev1.PodStatus{StartTime: mtp(1), Conditions: []corev1.PodCondition{
				cond(corev1.PodReady, corev1.ConditionTrue, &nowT),
				cond(corev1.PodInitialized, corev1.ConditionTrue, mtp(3)),
				cond(corev1.ContainersReady, corev1.ConditionTrue, &nowT),
				cond(corev1.PodScheduled, corev1.ConditionTrue, mtp(0)),
			}},
		},
		{
			name: "Succeeded is sticky",
			old:  corev1.PodStatus{StartTime: mtp(1), Phase: corev1.PodSucceeded},
			new:  corev1.PodStatus{Phase: corev1.PodRunning},
			want: corev1.PodStatus{StartTime: mtp(1), Phase: corev1.PodSucceeded},
		},
		{
			name: "Failed is sticky",
			old:  corev1.PodStatus{StartTime: mtp(1), Phase: corev1.PodFailed},
			new:  corev1.PodStatus{Phase: corev1.PodPending},
			want: corev1.PodStatus{StartTime: mtp(1), Phase: corev1.PodFailed},
		},
		{
			name: "the reason a pod failed for stays",
			old:  corev1.PodStatus{StartTime: mtp(1), Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "too long"},
			new:  corev1.PodStatus{Phase: corev1.PodFailed},
			want: corev1.PodStatus{StartTime: mtp(1), Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "too long"},
		},
		{
			name: "a running pod may finish",
			old:  corev1.PodStatus{StartTime: mtp(1), Phase: corev1.PodRunning},
			new:  corev1.PodStatus{Phase: corev1.PodSucceeded},
			want: corev1.PodStatus{StartTime: mtp(1), Phase: corev1.PodSucceeded},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := merge(tt.old, tt.new, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("merge (-want +got):\n%s", diff)
			}
		})
	}
}

func testPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
}

func running(ready corev1.ConditionStatus) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.42.0.5", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}
}

func (m *Manager) versionOf(uid types.UID) (uint64, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[uid]; ok {
		return e.version, e.synced
	}
	return 0, 0
}

func TestSetPodStatusDedupe(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	m := New(fake.NewClientset(), nil, clk)
	pod := testPod()

	m.SetPodStatus(pod, running(corev1.ConditionFalse))
	if v, _ := m.versionOf(pod.UID); v != 1 {
		t.Fatalf("version = %d, want 1", v)
	}
	select {
	case <-m.kick:
	default:
		t.Fatal("a new status did not wake the writer")
	}
	clk.Step(time.Minute)
	m.SetPodStatus(pod, running(corev1.ConditionFalse))
	if v, _ := m.versionOf(pod.UID); v != 1 {
		t.Errorf("an unchanged status bumped the version to %d", v)
	}
	select {
	case <-m.kick:
		t.Error("an unchanged status woke the writer")
	default:
	}
	st, ok := m.GetPodStatus(pod.UID)
	if !ok || !st.StartTime.Equal(&metav1.Time{Time: t0}) || !st.Conditions[0].LastTransitionTime.Equal(&metav1.Time{Time: t0}) {
		t.Errorf("cached status = %+v, want the first times", st)
	}
	clk.Step(time.Minute)
	m.SetPodStatus(pod, running(corev1.ConditionTrue))
	if v, _ := m.versionOf(pod.UID); v != 2 {
		t.Errorf("a changed status left the version at %d", v)
	}
	st, _ = m.GetPodStatus(pod.UID)
	if want := metav1.NewTime(t0.Add(2 * time.Minute)); !st.Conditions[0].LastTransitionTime.Equal(&want) {
		t.Errorf("Ready transition = %v, want %v", st.Conditions[0].LastTransitionTime, want)
	}
	// GetPodStatus hands out a copy.
	st.Conditions[0].Status = "mutated"
	if again, _ := m.GetPodStatus(pod.UID); again.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("the cache shares memory with callers")
	}
	if _, ok := m.GetPodStatus("other"); ok {
		t.Errorf("status of an unknown pod")
	}
	m.Forget(pod.UID)
	if _, ok := m.GetPodStatus(pod.UID); ok {
		t.Errorf("status kept after Forget")
	}
}

type patchCall struct {
	Name, Subresource string
	UID               types.UID
	Phase             corev1.PodPhase
}

func patches(t *testing.T, c *fake.Clientset) []patchCall {
	t.Helper()
	var out []patchCall
	for _, a := range c.Actions() {
		p, ok := a.(k8stesting.PatchAction)
		if !ok {
			continue
		}
		if p.GetPatchType() != types.StrategicMergePatchType {
			t.Errorf("patch type %s", p.GetPatchType())
		}
		var body struct {
			Metadata struct {
				UID types.UID `json:"uid"`
			} `json:"metadata"`
			Status corev1.PodStatus `json:"status"`
		}
		if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, patchCall{p.GetName(), p.GetSubresource(), body.Metadata.UID, body.Status.Phase})
	}
	return out
}

type deleteCall struct {
	Name  string
	UID   types.UID
	Grace int64
}

func deletes(c *fake.Clientset) []deleteCall {
	var out []deleteCall
	for _, a := range c.Actions() {
		d, ok := a.(k8stesting.DeleteAction)
		if !ok {
			continue
		}
		o := d.GetDeleteOptions()
		call := deleteCall{Name: d.GetName(), Grace: -1}
		if o.Preconditions != nil && o.Preconditions.UID != nil {
			call.UID = *o.Preconditions.UID
		}
		if o.GracePeriodSeconds != nil {
			call.Grace = *o.GracePeriodSeconds
		}
		out = append(out, call)
	}
	return out
}

func TestSyncPatchesStatusWithUIDGuard(t *testing.T) {
	pod := testPod()
	client := fake.NewClientset(pod.DeepCopy())
	m := New(client, nil, testingclock.NewFakeClock(t0))
	ctx := context.Background()

	m.SetPodStatus(pod, running(corev1.ConditionTrue))
	m.syncAll(ctx)
	want := []patchCall{{Name: "web", Subresource: "status", UID: "uid-1", Phase: corev1.PodRunning}}
	if diff := cmp.Diff(want, patches(t, client)); diff != "" {
		t.Fatalf("patches (-want +got):\n%s", diff)
	}
	got, err := client.CoreV1().Pods("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodRunning || got.Status.PodIP != "10.42.0.5" || got.Status.StartTime == nil {
		t.Errorf("stored status = %+v", got.Status)
	}
	if v, s := m.versionOf(pod.UID); v != s {
		t.Errorf("version %d synced %d after a good patch", v, s)
	}
	// Nothing new: nothing written.
	client.ClearActions()
	m.syncAll(ctx)
	if n := len(patches(t, client)); n != 0 {
		t.Errorf("%d patches without a change", n)
	}
}

func TestSyncErrors(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantForget bool
	}{
		{name: "pod gone", err: apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web"), wantForget: true},
		{name: "UID mismatch (replaced pod)", err: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", errors.New("uid")), wantForget: true},
		{name: "apiserver down", err: apierrors.NewServiceUnavailable("later"), wantForget: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(testPod())
			failing := true
			client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				if failing {
					return true, nil, tt.err
				}
				return false, nil, nil
			})
			m := New(client, nil, testingclock.NewFakeClock(t0))
			pod := testPod()
			m.SetPodStatus(pod, running(corev1.ConditionTrue))
			m.syncAll(context.Background())
			_, kept := m.GetPodStatus(pod.UID)
			if kept == tt.wantForget {
				t.Fatalf("entry kept = %v, want %v", kept, !tt.wantForget)
			}
			if kept {
				if v, s := m.versionOf(pod.UID); v == s {
					t.Fatalf("a failed write was marked synced")
				}
				failing = false
				client.ClearActions()
				m.syncAll(context.Background())
				if n := len(patches(t, client)); n != 1 {
					t.Errorf("retry wrote %d patches, want 1", n)
				}
				if v, s := m.versionOf(pod.UID); v != s {
					t.Errorf("not synced after the retry")
				}
			}
		})
	}
}

func TestMarkDeletable(t *testing.T) {
	now := metav1.NewTime(t0)
	tests := []struct {
		name        string
		deleting    bool
		wantDeletes []deleteCall
	}{
		{name: "deleted pod is removed with grace 0 and its UID", deleting: true, wantDeletes: []deleteCall{{Name: "web", UID: "uid-1", Grace: 0}}},
		{name: "pod without a deletion timestamp stays", deleting: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod()
			if tt.deleting {
				pod.DeletionTimestamp = &now
				pod.DeletionGracePeriodSeconds = func() *int64 { g := int64(30); return &g }()
			}
			client := fake.NewClientset(pod.DeepCopy())
			m := New(client, nil, testingclock.NewFakeClock(t0))
			m.SetPodStatus(pod, corev1.PodStatus{Phase: corev1.PodSucceeded})
			m.MarkDeletable(pod)
			m.syncAll(context.Background())
			if diff := cmp.Diff(tt.wantDeletes, deletes(client)); diff != "" {
				t.Errorf("deletes (-want +got):\n%s", diff)
			}
			// The final status is written before the delete.
			if ps := patches(t, client); len(ps) != 1 || ps[0].Phase != corev1.PodSucceeded {
				t.Errorf("patches = %+v", ps)
			}
			_, kept := m.GetPodStatus(pod.UID)
			if kept == tt.deleting {
				t.Errorf("entry kept = %v", kept)
			}
			if tt.deleting {
				if _, err := client.CoreV1().Pods("shop").Get(context.Background(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("pod still in the API: %v", err)
				}
			}
		})
	}
}

func TestMarkDeletableWithoutStatus(t *testing.T) {
	now := metav1.NewTime(t0)
	pod := testPod()
	pod.DeletionTimestamp = &now
	client := fake.NewClientset(pod.DeepCopy())
	m := New(client, nil, testingclock.NewFakeClock(t0))
	m.MarkDeletable(pod)
	m.syncAll(context.Background())
	if diff := cmp.Diff([]deleteCall{{Name: "web", UID: "uid-1", Grace: 0}}, deletes(client)); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
}

func TestStaticPodsWriteToTheMirror(t *testing.T) {
	now := metav1.NewTime(t0)
	static := testPod()
	static.UID = "static-uid"
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	static.DeletionTimestamp = &now // never deletes the mirror
	mirror := testPod()
	mirror.UID = "mirror-uid"
	client := fake.NewClientset(mirror)

	mirrorUID := types.UID("")
	resolve := func(p *corev1.Pod) (types.UID, bool) {
		if p.Annotations["kubernetes.io/config.source"] != "file" {
			return "", false
		}
		return mirrorUID, true
	}
	m := New(client, resolve, testingclock.NewFakeClock(t0))
	m.SetPodStatus(static, running(corev1.ConditionTrue))
	m.MarkDeletable(static)

	// No mirror yet: nothing is written, the status waits.
	m.syncAll(context.Background())
	if len(client.Actions()) != 0 {
		t.Fatalf("wrote without a mirror: %v", client.Actions())
	}
	if v, s := m.versionOf(static.UID); v == s {
		t.Fatalf("marked synced without a mirror")
	}

	// The mirror appears: Reconcile wakes the writer at once.
	mirrorUID = "mirror-uid"
	for len(m.kick) > 0 {
		<-m.kick
	}
	m.Reconcile(static)
	select {
	case <-m.kick:
	default:
		t.Fatal("a pending status did not wake the writer when the mirror appeared")
	}
	m.syncAll(context.Background())
	want := []patchCall{{Name: "web", Subresource: "status", UID: "mirror-uid", Phase: corev1.PodRunning}}
	if diff := cmp.Diff(want, patches(t, client)); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
	if d := deletes(client); len(d) != 0 {
		t.Errorf("a mirror pod was deleted by the status manager: %v", d)
	}
}

func TestRunWritesOnChange(t *testing.T) {
	pod := testPod()
	client := fake.NewClientset(pod.DeepCopy())
	clk := testingclock.NewFakeClock(t0)
	m := New(client, nil, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	m.SetPodStatus(pod, running(corev1.ConditionTrue))
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := client.CoreV1().Pods("shop").Get(ctx, "web", metav1.GetOptions{})
		if err == nil && got.Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("status not written after SetPodStatus")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop")
	}
}

// Someone else changes the status in the apiserver (the node-lifecycle
// controller marking the pod NotReady): Reconcile posts the agent's again;
// the agent's own post coming back, with times to the second, does not.
func TestReconcile(t *testing.T) {
	pod := testPod()
	client := fake.NewClientset(pod.DeepCopy())
	clk := testingclock.NewFakeClock(t0.Add(300 * time.Millisecond))
	m := New(client, nil, clk)
	ctx := context.Background()

	m.Reconcile(pod) // unknown pod: nothing
	if n := len(m.entries); n != 0 {
		t.Fatalf("Reconcile of an unknown pod made %d entries", n)
	}
	m.SetPodStatus(pod, running(corev1.ConditionTrue))
	m.syncAll(ctx)
	stored := func() *corev1.Pod {
		got, err := client.CoreV1().Pods("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// What a watch delivers: times kept to the second.
		b, _ := json.Marshal(got)
		out := &corev1.Pod{}
		_ = json.Unmarshal(b, out)
		return out
	}

	client.ClearActions()
	m.Reconcile(stored())
	m.syncAll(ctx)
	if n := len(patches(t, client)); n != 0 {
		t.Errorf("the agent's own status coming back was posted again (%d patches)", n)
	}

	notReady := stored()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := client.CoreV1().Pods("shop").UpdateStatus(ctx, notReady, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	m.Reconcile(notReady)
	m.syncAll(ctx)
	if n := len(patches(t, client)); n != 1 {
		t.Fatalf("%d patches after someone else marked the pod NotReady, want 1", n)
	}
	if got := stored(); got.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("Ready = %s after the reconcile, want True", got.Status.Conditions[0].Status)
	}
}

// A pod whose sandbox came back with a new address (a node restarted
// while cut off) gets exactly the new one: the lists keyed by IP are
// replaced, not merged.
func TestSyncReplacesAddresses(t *testing.T) {
	pod := testPod()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.42.1.4", PodIPs: []corev1.PodIP{{IP: "10.42.1.4"}},
		HostIP: "10.99.0.2", HostIPs: []corev1.HostIP{{IP: "10.99.0.2"}}}
	client := fake.NewClientset(pod.DeepCopy())
	m := New(client, nil, testingclock.NewFakeClock(t0))
	ctx := context.Background()
	st := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.42.1.9", PodIPs: []corev1.PodIP{{IP: "10.42.1.9"}},
		HostIP: "10.99.0.2", HostIPs: []corev1.HostIP{{IP: "10.99.0.2"}}}
	m.SetPodStatus(pod, st)
	m.syncAll(ctx)
	got, err := client.CoreV1().Pods("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]corev1.PodIP{{IP: "10.42.1.9"}}, got.Status.PodIPs); diff != "" || got.Status.PodIP != "10.42.1.9" {
		t.Errorf("podIP %s, podIPs (-want +got):\n%s", got.Status.PodIP, diff)
	}
	if len(got.Status.HostIPs) != 1 {
		t.Errorf("hostIPs = %v", got.Status.HostIPs)
	}
}

// TestTerminatedStaysTerminated: a container that cannot run again keeps
// its terminated state when a later status (its runtime containers
// removed) would report it waiting, as kubelet's status manager does and
// the apiserver's validation requires; one that may restart does not.
func TestTerminatedStaysTerminated(t *testing.T) {
	done := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "c", ContainerID: "containerd://1",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Completed"}}}
	}
	waiting := corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name     string
		policy   corev1.RestartPolicy
		init     bool
		sidecar  bool
		exit     int32
		wantKept bool
	}{
		{name: "Never", policy: corev1.RestartPolicyNever, exit: 0, wantKept: true},
		{name: "Never, failed", policy: corev1.RestartPolicyNever, exit: 1, wantKept: true},
		{name: "OnFailure, succeeded", policy: corev1.RestartPolicyOnFailure, exit: 0, wantKept: true},
		{name: "OnFailure, failed: restarts", policy: corev1.RestartPolicyOnFailure, exit: 1, wantKept: false},
		{name: "Always: restarts", policy: corev1.RestartPolicyAlways, exit: 0, wantKept: false},
		{name: "init container done", policy: corev1.RestartPolicyAlways, init: true, exit: 0, wantKept: true},
		{name: "init container failed, Always: runs again", policy: corev1.RestartPolicyAlways, init: true, exit: 1, wantKept: false},
		{name: "sidecar: restarts", policy: corev1.RestartPolicyNever, init: true, sidecar: true, exit: 0, wantKept: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.RestartPolicy = tt.policy
			c := corev1.Container{Name: "c"}
			if tt.sidecar {
				c.RestartPolicy = &always
			}
			old, next := corev1.PodStatus{Phase: corev1.PodRunning}, corev1.PodStatus{Phase: corev1.PodRunning}
			if tt.init {
				pod.Spec.InitContainers = []corev1.Container{c}
				old.InitContainerStatuses = []corev1.ContainerStatus{done(tt.exit)}
				next.InitContainerStatuses = []corev1.ContainerStatus{waiting}
			} else {
				pod.Spec.Containers = []corev1.Container{c}
				old.ContainerStatuses = []corev1.ContainerStatus{done(tt.exit)}
				next.ContainerStatuses = []corev1.ContainerStatus{waiting}
			}
			m := New(fake.NewClientset(pod.DeepCopy()), nil, testingclock.NewFakeClock(t0))
			m.SetPodStatus(pod, old)
			m.SetPodStatus(pod, next)
			got, _ := m.GetPodStatus(pod.UID)
			statuses := got.ContainerStatuses
			if tt.init {
				statuses = got.InitContainerStatuses
			}
			if kept := statuses[0].State.Terminated != nil; kept != tt.wantKept {
				t.Errorf("terminated state kept = %v, want %v (%+v)", kept, tt.wantKept, statuses[0].State)
			}
		})
	}
}

// TestDeletedPodRemovedDespiteARefusedStatus: a deleted pod whose
// resources are gone is removed even when the apiserver refuses its last
// status (422), which no retry would change.
func TestDeletedPodRemovedDespiteARefusedStatus(t *testing.T) {
	now := metav1.NewTime(t0)
	pod := testPod()
	pod.DeletionTimestamp = &now
	client := fake.NewClientset(pod.DeepCopy())
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web", nil)
	})
	m := New(client, nil, testingclock.NewFakeClock(t0))
	m.SetPodStatus(pod, corev1.PodStatus{Phase: corev1.PodSucceeded})
	m.syncAll(context.Background())
	if d := deletes(client); len(d) != 0 {
		t.Fatalf("deleted before its resources were gone: %+v", d)
	}
	m.MarkDeletable(pod)
	m.syncAll(context.Background())
	if diff := cmp.Diff([]deleteCall{{Name: "web", UID: "uid-1", Grace: 0}}, deletes(client)); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
}
