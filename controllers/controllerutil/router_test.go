package controllerutil

import (
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func rs(name string, uid types.UID, match map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: match}},
	}
}

func child(rv string, lbls map[string]string, owner *appsv1.ReplicaSet, kind string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: rv, Labels: lbls}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
	}
	return p
}

func TestOwnerRouter(t *testing.T) {
	a := rs("a", "uid-a", map[string]string{"app": "x"})
	b := rs("b", "uid-b", map[string]string{"app": "y"})
	stale := rs("a", "uid-old", nil) // a's name, another UID
	web := map[string]string{"app": "x"}
	terminating := child("2", web, a, "ReplicaSet")
	terminating.DeletionTimestamp = &metav1.Time{}

	for _, tc := range []struct {
		name       string
		terminates bool // TerminatingIsDeleted
		event      func(r *OwnerRouter[*appsv1.ReplicaSet])
		want       []string // hooks and enqueues, in order
	}{
		{name: "a controlled object is created",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) { r.Add(child("1", web, a, "ReplicaSet")) },
			want:  []string{"create a", "enqueue a"}},
		{name: "its controller was replaced (another UID)",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) { r.Add(child("1", web, stale, "ReplicaSet")) }},
		{name: "a reference of another kind",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) { r.Add(child("1", web, a, "StatefulSet")) }},
		{name: "an orphan wakes the owners that match it",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) { r.Add(child("1", web, nil, "")) },
			want:  []string{"enqueue a"}},
		{name: "an orphan without labels wakes none",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) { r.Add(child("1", nil, nil, "")) }},
		{name: "first seen while being deleted: a deletion",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) { r.Add(terminating) },
			want:  []string{"delete a", "enqueue a"}},
		{name: "a resync changes nothing",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) {
				r.Update(child("1", web, a, "ReplicaSet"), child("1", web, a, "ReplicaSet"))
			}},
		{name: "a change wakes the controller",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) {
				r.Update(child("1", web, a, "ReplicaSet"), child("2", web, a, "ReplicaSet"))
			},
			want: []string{"enqueue a", "update a"}},
		{name: "a new controller: both old and new wake",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) {
				r.Update(child("1", web, a, "ReplicaSet"), child("2", web, b, "ReplicaSet"))
			},
			want: []string{"enqueue a", "enqueue b", "update b"}},
		{name: "released: the old controller and the matching owners wake",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) {
				r.Update(child("1", web, b, "ReplicaSet"), child("2", web, nil, ""))
			},
			want: []string{"enqueue b", "enqueue a"}},
		{name: "an orphan's labels change: the owners matching the new ones wake",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) {
				r.Update(child("1", web, nil, ""), child("2", map[string]string{"app": "y"}, nil, ""))
			},
			want: []string{"enqueue b"}},
		{name: "an orphan changes otherwise: nobody wakes",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) {
				r.Update(child("1", web, nil, ""), child("2", web, nil, ""))
			}},
		{name: "terminating, as a deletion",
			terminates: true,
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) {
				r.Update(child("1", web, a, "ReplicaSet"), terminating)
			},
			want: []string{"delete a", "enqueue a"}},
		{name: "terminating, as a change",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) {
				r.Update(child("1", web, a, "ReplicaSet"), terminating)
			},
			want: []string{"enqueue a", "update a"}},
		{name: "deleted",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) { r.Delete(child("1", web, a, "ReplicaSet")) },
			want:  []string{"delete a", "enqueue a"}},
		{name: "deleted, the watch missed it",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) {
				r.Delete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: child("1", web, a, "ReplicaSet")})
			},
			want: []string{"delete a", "enqueue a"}},
		{name: "a deleted orphan wakes nobody",
			event: func(r *OwnerRouter[*appsv1.ReplicaSet]) { r.Delete(child("1", web, nil, "")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owners := map[string]*appsv1.ReplicaSet{"a": a, "b": b}
			var got []string
			r := &OwnerRouter[*appsv1.ReplicaSet]{
				Kind: "ReplicaSet",
				Get: func(namespace, name string) (*appsv1.ReplicaSet, error) {
					if o, ok := owners[name]; ok && namespace == "ns" {
						return o, nil
					}
					return nil, errors.New("not found")
				},
				Matching: SelectorMatching(func(string) ([]*appsv1.ReplicaSet, error) {
					return []*appsv1.ReplicaSet{a, b}, nil
				}, func(o *appsv1.ReplicaSet) *metav1.LabelSelector { return o.Spec.Selector }),
				Enqueue:              func(o *appsv1.ReplicaSet) { got = append(got, "enqueue "+o.Name) },
				OnCreate:             func(o *appsv1.ReplicaSet, _ metav1.Object) { got = append(got, "create "+o.Name) },
				OnDelete:             func(o *appsv1.ReplicaSet, _ metav1.Object) { got = append(got, "delete "+o.Name) },
				OnUpdate:             func(o *appsv1.ReplicaSet, _, _ metav1.Object) { got = append(got, "update "+o.Name) },
				TerminatingIsDeleted: tc.terminates,
			}
			tc.event(r)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
