package controllerutil

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

// patchRecorder is a PodControl that only records patches.
type patchRecorder struct {
	PodControl
	patches map[string][]byte
	err     error
}

func (p *patchRecorder) PatchPod(_ context.Context, _, name string, data []byte) error {
	if p.patches == nil {
		p.patches = map[string][]byte{}
	}
	p.patches[name] = data
	return p.err
}

func claimPod(name, ns string, lbls map[string]string, controller *metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), Labels: lbls}}
	if controller != nil {
		p.OwnerReferences = []metav1.OwnerReference{*controller}
	}
	return p
}

func TestClaimPods(t *testing.T) {
	owner := testRS("web")
	ours := NewControllerRef(owner, rsKind)
	theirs := NewControllerRef(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "other-uid"}}, rsKind)
	match := map[string]string{"app": "web"}
	nomatch := map[string]string{"app": "db"}
	now := metav1.Now()

	tests := []struct {
		name         string
		pods         []*corev1.Pod
		ownerDeleted bool
		canAdoptErr  error
		patchErr     error
		filter       func(*corev1.Pod) bool
		wantClaimed  []string
		wantAdopted  []string
		wantReleased []string
		wantErr      bool
	}{
		{name: "owned and matching", pods: []*corev1.Pod{claimPod("a", "ns", match, ours)}, wantClaimed: []string{"a"}},
		{name: "orphan matching is adopted", pods: []*corev1.Pod{claimPod("a", "ns", match, nil)}, wantClaimed: []string{"a"}, wantAdopted: []string{"a"}},
		{name: "orphan not matching is ignored", pods: []*corev1.Pod{claimPod("a", "ns", nomatch, nil)}},
		{name: "owned not matching is released", pods: []*corev1.Pod{claimPod("a", "ns", nomatch, ours)}, wantReleased: []string{"a"}},
		{name: "controlled by another", pods: []*corev1.Pod{claimPod("a", "ns", match, theirs)}},
		{
			name: "orphan being deleted is not adopted",
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := claimPod("a", "ns", match, nil)
				p.DeletionTimestamp = &now
				return p
			}()},
		},
		{name: "orphan in another namespace", pods: []*corev1.Pod{claimPod("a", "other", match, nil)}},
		{
			name:         "owner being deleted: owned kept, nothing adopted or released",
			ownerDeleted: true,
			pods:         []*corev1.Pod{claimPod("a", "ns", match, ours), claimPod("b", "ns", match, nil), claimPod("c", "ns", nomatch, ours)},
			wantClaimed:  []string{"a"},
		},
		{
			name:        "recheck refuses adoption",
			canAdoptErr: errors.New("owner deleted"),
			pods:        []*corev1.Pod{claimPod("a", "ns", match, ours), claimPod("b", "ns", match, nil)},
			wantClaimed: []string{"a"},
			wantErr:     true,
		},
		{
			name:        "adopt patch fails",
			patchErr:    apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "b", errors.New("x")),
			pods:        []*corev1.Pod{claimPod("b", "ns", match, nil)},
			wantAdopted: []string{"b"},
			wantErr:     true,
		},
		{
			name:        "adopted pod vanished",
			patchErr:    apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "b"),
			pods:        []*corev1.Pod{claimPod("b", "ns", match, nil)},
			wantAdopted: []string{"b"},
		},
		{
			name:         "released pod recreated (invalid uid precondition)",
			patchErr:     apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "b", nil),
			pods:         []*corev1.Pod{claimPod("b", "ns", nomatch, ours)},
			wantReleased: []string{"b"},
		},
		{
			name:         "filter rejects",
			filter:       func(p *corev1.Pod) bool { return p.Name != "b" },
			pods:         []*corev1.Pod{claimPod("a", "ns", match, ours), claimPod("b", "ns", match, ours)},
			wantClaimed:  []string{"a"},
			wantReleased: []string{"b"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := owner.DeepCopy()
			if tc.ownerDeleted {
				o.DeletionTimestamp = &now
			}
			rechecks := 0
			canAdopt := func(context.Context) error { rechecks++; return tc.canAdoptErr }
			pc := &patchRecorder{err: tc.patchErr}
			m := NewPodRefManager(pc, o, labels.SelectorFromSet(match), rsKind, canAdopt)
			var filters []func(*corev1.Pod) bool
			if tc.filter != nil {
				filters = append(filters, tc.filter)
			}
			claimed, err := m.ClaimPods(context.Background(), tc.pods, filters...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			var names []string
			for _, p := range claimed {
				names = append(names, p.Name)
			}
			if !reflect.DeepEqual(names, tc.wantClaimed) {
				t.Errorf("claimed %v, want %v", names, tc.wantClaimed)
			}
			var adopted, released []string
			for name, data := range pc.patches {
				var p struct {
					Metadata struct {
						UID             types.UID        `json:"uid"`
						OwnerReferences []map[string]any `json:"ownerReferences"`
					} `json:"metadata"`
				}
				if err := json.Unmarshal(data, &p); err != nil {
					t.Fatal(err)
				}
				if p.Metadata.UID != types.UID(name+"-uid") || len(p.Metadata.OwnerReferences) != 1 {
					t.Errorf("patch of %s: %s", name, data)
					continue
				}
				ref := p.Metadata.OwnerReferences[0]
				if ref["$patch"] == "delete" && ref["uid"] == "rs-uid" {
					released = append(released, name)
				} else if ref["uid"] == "rs-uid" && ref["controller"] == true && ref["blockOwnerDeletion"] == true && ref["kind"] == "ReplicaSet" && ref["apiVersion"] == "apps/v1" && ref["name"] == "web" {
					adopted = append(adopted, name)
				} else {
					t.Errorf("unexpected patch of %s: %s", name, data)
				}
			}
			sort.Strings(adopted)
			sort.Strings(released)
			if !reflect.DeepEqual(adopted, tc.wantAdopted) || !reflect.DeepEqual(released, tc.wantReleased) {
				t.Errorf("adopted %v released %v, want %v and %v", adopted, released, tc.wantAdopted, tc.wantReleased)
			}
			if rechecks > 1 {
				t.Errorf("adoption rechecked %d times, want at most once", rechecks)
			}
		})
	}
}

// TestAdoptAndReleaseAgainstClientset applies the patches through the fake
// clientset's strategic merge and checks the resulting owner references.
func TestAdoptAndReleaseAgainstClientset(t *testing.T) {
	owner := testRS("web")
	keep := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}
	orphan := claimPod("a", "ns", map[string]string{"app": "web"}, nil)
	orphan.OwnerReferences = []metav1.OwnerReference{keep}
	owned := claimPod("b", "ns", map[string]string{"app": "db"}, NewControllerRef(owner, rsKind))
	owned.OwnerReferences = append(owned.OwnerReferences, keep)
	owned.Finalizers = []string{"example.com/keep", "example.com/job"}
	client := fake.NewClientset(orphan, owned)
	pc := NewPodControl(client, record.NewFakeRecorder(10))
	m := NewPodRefManager(pc, owner, labels.SelectorFromSet(map[string]string{"app": "web"}), rsKind, nil, "example.com/job")
	claimed, err := m.ClaimPods(context.Background(), []*corev1.Pod{orphan, owned})
	if err != nil || len(claimed) != 1 || claimed[0].Name != "a" {
		t.Fatalf("ClaimPods = %v, %v", claimed, err)
	}
	a, _ := client.CoreV1().Pods("ns").Get(context.Background(), "a", metav1.GetOptions{})
	if ref := metav1.GetControllerOf(a); ref == nil || ref.UID != "rs-uid" || len(a.OwnerReferences) != 2 {
		t.Errorf("adopted pod owner references: %+v", a.OwnerReferences)
	}
	if len(a.Finalizers) != 1 || a.Finalizers[0] != "example.com/job" {
		t.Errorf("adopted pod finalizers: %v", a.Finalizers)
	}
	b, _ := client.CoreV1().Pods("ns").Get(context.Background(), "b", metav1.GetOptions{})
	if !reflect.DeepEqual(b.OwnerReferences, []metav1.OwnerReference{keep}) {
		t.Errorf("released pod owner references: %+v", b.OwnerReferences)
	}
	if !reflect.DeepEqual(b.Finalizers, []string{"example.com/keep"}) {
		t.Errorf("released pod finalizers: %v", b.Finalizers)
	}
}

func TestClaimReplicaSets(t *testing.T) {
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d-uid"}}
	dKind := appsv1.SchemeGroupVersion.WithKind("Deployment")
	orphan := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "rs1", Labels: map[string]string{"app": "web"}}}
	stale := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-2", UID: "rs2", Labels: map[string]string{"app": "db"},
		OwnerReferences: []metav1.OwnerReference{*NewControllerRef(deploy, dKind)}}}
	client := fake.NewClientset(orphan, stale)
	m := NewReplicaSetRefManager(ReplicaSetPatcher(client), deploy, labels.SelectorFromSet(map[string]string{"app": "web"}), dKind,
		RecheckDeletionTimestamp(func(context.Context) (metav1.Object, error) { return deploy, nil }))
	claimed, err := m.Claim(context.Background(), []*appsv1.ReplicaSet{orphan, stale})
	if err != nil || len(claimed) != 1 || claimed[0].Name != "web-1" {
		t.Fatalf("Claim = %v, %v", claimed, err)
	}
	got1, _ := client.AppsV1().ReplicaSets("ns").Get(context.Background(), "web-1", metav1.GetOptions{})
	if ref := metav1.GetControllerOf(got1); ref == nil || ref.UID != "d-uid" || ref.Kind != "Deployment" {
		t.Errorf("adopted: %+v", got1.OwnerReferences)
	}
	got2, _ := client.AppsV1().ReplicaSets("ns").Get(context.Background(), "web-2", metav1.GetOptions{})
	if len(got2.OwnerReferences) != 0 {
		t.Errorf("released: %+v", got2.OwnerReferences)
	}
}

func TestRecheckDeletionTimestamp(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name    string
		obj     metav1.Object
		getErr  error
		wantErr bool
	}{
		{name: "live", obj: testRS("web")},
		{name: "deleted", obj: &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", DeletionTimestamp: &now}}, wantErr: true},
		{name: "get fails", getErr: errors.New("down"), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := RecheckDeletionTimestamp(func(context.Context) (metav1.Object, error) { return tc.obj, tc.getErr })(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
