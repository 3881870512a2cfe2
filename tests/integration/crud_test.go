package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/k1s/k1s/tests/integration/framework"
)

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatalf("kind of %T: %v", obj, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return u
}

// TestCRUD creates, reads, lists, watches, updates, patches (merge,
// strategic, apply) and deletes an object of every served resource.
func TestCRUD(t *testing.T) {
	// The other controllers would write to the sample objects (node
	// taints, quota status, a replica set's pods) between the test's read
	// and its update.
	s := framework.StartAPI(t)
	ctx := context.Background()
	client := s.Client(t)
	dyn := s.Dynamic(t)
	const ns = "crud"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sm := range samples(t) {
		t.Run(sm.gvr.Resource+"."+sm.gvr.Group, func(t *testing.T) {
			var ri dynamic.ResourceInterface = dyn.Resource(sm.gvr)
			if sm.namespaced {
				ri = dyn.Resource(sm.gvr).Namespace(ns)
			}
			obj := toUnstructured(t, sm.obj)
			name := obj.GetName()

			created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if ts := created.GetCreationTimestamp(); created.GetUID() == "" || created.GetResourceVersion() == "" || ts.IsZero() {
				t.Fatalf("create did not fill system metadata: %v", created.Object["metadata"])
			}

			got, err := ri.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if got.GetUID() != created.GetUID() {
				t.Fatalf("get returned uid %s, created %s", got.GetUID(), created.GetUID())
			}

			list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: "test=crud", FieldSelector: "metadata.name=" + name})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(list.Items) != 1 || list.Items[0].GetName() != name {
				t.Fatalf("list by label and name returned %d items", len(list.Items))
			}

			w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), FieldSelector: "metadata.name=" + name})
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer w.Stop()

			got.SetLabels(map[string]string{"test": "crud", "updated": "yes"})
			updated, err := ri.Update(ctx, got, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if updated.GetLabels()["updated"] != "yes" || updated.GetResourceVersion() == got.GetResourceVersion() {
				t.Fatalf("update not applied: labels %v", updated.GetLabels())
			}
			expectEvent(t, w, watch.Modified, name)

			merged, err := ri.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"merge":"yes"}}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("merge patch: %v", err)
			}
			if merged.GetLabels()["merge"] != "yes" || merged.GetLabels()["updated"] != "yes" {
				t.Fatalf("merge patch result labels %v", merged.GetLabels())
			}

			smp, err := ri.Patch(ctx, name, types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"strategic":"yes"}}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("strategic merge patch: %v", err)
			}
			if smp.GetLabels()["strategic"] != "yes" || smp.GetLabels()["merge"] != "yes" {
				t.Fatalf("strategic patch result labels %v", smp.GetLabels())
			}

			apply := map[string]any{
				"apiVersion": obj.GetAPIVersion(),
				"kind":       obj.GetKind(),
				"metadata":   map[string]any{"name": name, "annotations": map[string]any{"applied": "yes"}},
			}
			if sm.namespaced {
				apply["metadata"].(map[string]any)["namespace"] = ns
			}
			body, _ := json.Marshal(apply)
			applied, err := ri.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "crud-test"})
			if err != nil {
				t.Fatalf("server-side apply: %v", err)
			}
			if applied.GetAnnotations()["applied"] != "yes" || applied.GetLabels()["strategic"] != "yes" {
				t.Fatalf("apply result: annotations %v labels %v", applied.GetAnnotations(), applied.GetLabels())
			}
			managers := map[string]bool{}
			for _, mf := range applied.GetManagedFields() {
				managers[mf.Manager] = true
			}
			if !managers["crud-test"] {
				t.Fatalf("managedFields lack the applying manager: %v", managers)
			}

			if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if sm.gvr.Resource == "namespaces" {
				// Namespaces go Terminating; the namespace controller removes them.
				cur, err := ri.Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return
				}
				if err != nil {
					t.Fatalf("get terminating namespace: %v", err)
				}
				if phase, _, _ := unstructured.NestedString(cur.Object, "status", "phase"); phase != "Terminating" {
					t.Fatalf("deleted namespace phase %q, want Terminating", phase)
				}
				return
			}
			if sm.gvr.Resource == "persistentvolumes" || sm.gvr.Resource == "persistentvolumeclaims" {
				// The pv-/pvc-protection finalizers (StorageObjectInUseProtection
				// admission) hold them until their controllers, which do not
				// run here, see them unused: as upstream's, they are marked
				// for deletion.
				cur, err := ri.Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return
				}
				if err != nil {
					t.Fatalf("get after delete: %v", err)
				}
				if cur.GetDeletionTimestamp() == nil || len(cur.GetFinalizers()) == 0 {
					t.Fatalf("%s after delete: deletionTimestamp %v, finalizers %v; want it being deleted behind its protection finalizer", sm.gvr.Resource, cur.GetDeletionTimestamp(), cur.GetFinalizers())
				}
				return
			}
			if _, err := ri.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get after delete: want NotFound, got %v", err)
			}
		})
	}
}

func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed before %s event", typ)
			}
			u, isObj := ev.Object.(*unstructured.Unstructured)
			if ev.Type == typ && isObj && u.GetName() == name {
				return
			}
		case <-timeout:
			t.Fatalf("no %s event for %s within 10s", typ, name)
		}
	}
}
