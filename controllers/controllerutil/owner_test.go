package controllerutil

import (
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func TestFilterPodsByOwner(t *testing.T) {
	owner := testRS("web")
	other := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", UID: "other-uid"}}
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().Pods().Informer()
	if err := AddPodControllerIndexer(inf); err != nil {
		t.Fatal(err)
	}
	if err := AddPodControllerIndexer(inf); err != nil {
		t.Fatalf("second AddPodControllerIndexer: %v", err)
	}
	for _, p := range []*corev1.Pod{
		claimPod("mine", "ns", nil, NewControllerRef(owner, rsKind)),
		claimPod("theirs", "ns", nil, NewControllerRef(other, rsKind)),
		claimPod("orphan", "ns", nil, nil),
		claimPod("orphan-elsewhere", "other", nil, nil),
	} {
		if err := inf.GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		sort.Strings(out)
		return out
	}
	got, err := FilterPodsByOwner(inf.GetIndexer(), owner, "ReplicaSet", false)
	if err != nil || len(got) != 1 || got[0].Name != "mine" {
		t.Errorf("owned only: %v, %v", names(got), err)
	}
	got, err = FilterPodsByOwner(inf.GetIndexer(), owner, "ReplicaSet", true)
	if n := names(got); err != nil || len(n) != 2 || n[0] != "mine" || n[1] != "orphan" {
		t.Errorf("with orphans: %v, %v", n, err)
	}
	if _, err := FilterPodsByOwner(inf.GetIndexer(), &appsv1.ReplicaSet{}, "ReplicaSet", true); err == nil {
		t.Error("no error for an owner without identity")
	}
}

func TestControllerRefMatches(t *testing.T) {
	kind := appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	tests := []struct {
		ref  *metav1.OwnerReference
		want bool
	}{
		{ref: nil},
		{ref: &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet"}, want: true},
		{ref: &metav1.OwnerReference{APIVersion: "apps/v1beta2", Kind: "ReplicaSet"}, want: true},
		{ref: &metav1.OwnerReference{APIVersion: "extensions/v1beta1", Kind: "ReplicaSet"}},
		{ref: &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment"}},
		{ref: &metav1.OwnerReference{APIVersion: "a/b/c", Kind: "ReplicaSet"}},
	}
	for i, tc := range tests {
		if got := ControllerRefMatches(tc.ref, kind); got != tc.want {
			t.Errorf("%d: %+v = %v, want %v", i, tc.ref, got, tc.want)
		}
	}
}
