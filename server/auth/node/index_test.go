package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func secretPod(name, node string, secrets ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	for _, s := range secrets {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: s, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}})
	}
	return p
}

func TestIndexCountsReferences(t *testing.T) {
	x := newIndex()
	h := x.podHandler()
	secret := func(node, name string) bool { return x.secretUsedBy(node, "ns", name) }

	// Two pods on node-a share a secret; removing one keeps access.
	h.OnAdd(secretPod("p1", "node-a", "shared", "only-p1", "only-p1"), false)
	h.OnAdd(secretPod("p2", "node-a", "shared"), false)
	h.OnDelete(secretPod("p1", "node-a"))
	if !secret("node-a", "shared") {
		t.Error("shared secret lost while p2 still uses it")
	}
	if secret("node-a", "only-p1") {
		t.Error("only-p1 still granted after p1 was deleted")
	}

	// Deletion through a tombstone.
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/p2", Obj: secretPod("p2", "node-a")})
	if secret("node-a", "shared") {
		t.Error("shared still granted after every user was deleted")
	}
	if len(x.users) != 0 || len(x.pods) != 0 {
		t.Errorf("index not empty after deletes: users=%v pods=%v", x.users, x.pods)
	}

	// Binding a pending pod (update with a node name) grants; an update that
	// adds a reference grants it; an unrelated update changes nothing.
	pending := secretPod("p3", "", "s3")
	h.OnAdd(pending, false)
	if secret("node-b", "s3") {
		t.Error("unscheduled pod granted its secret")
	}
	bound := secretPod("p3", "node-b", "s3")
	h.OnUpdate(pending, bound)
	if !secret("node-b", "s3") {
		t.Error("secret not granted once the pod was bound")
	}
	withEphemeral := bound.DeepCopy()
	withEphemeral.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "dbg", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dbg"}}}},
	}}}
	h.OnUpdate(bound, withEphemeral)
	if !secret("node-b", "dbg") || !secret("node-b", "s3") {
		t.Error("ephemeral container's secret not granted after update")
	}
	if got := x.users[ref{kindSecret, "ns", "s3"}]["node-b"]; got != 1 {
		t.Errorf("s3 count on node-b = %d after updates, want 1", got)
	}
}

func TestIndexPVs(t *testing.T) {
	x := newIndex()
	x.podHandler().OnAdd(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{NodeName: "n", Volumes: []corev1.Volume{
			{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		}},
	}, false)
	ph := x.pvHandler()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv"},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "c"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{ISCSI: &corev1.ISCSIPersistentVolumeSource{
				TargetPortal: "t", IQN: "i", SecretRef: &corev1.SecretReference{Name: "chap"},
			}},
		},
	}
	// The PV may arrive before or after the pod; here after.
	ph.OnAdd(pv, false)
	if !x.pvUsedBy("n", "pv") || !x.secretUsedBy("n", "ns", "chap") {
		t.Fatal("pv or its secret not granted through the claim")
	}
	if x.pvUsedBy("other", "pv") {
		t.Error("pv granted to a node without the claim")
	}
	ph.OnDelete(pv)
	if x.pvUsedBy("n", "pv") || x.secretUsedBy("n", "ns", "chap") {
		t.Error("pv or its secret still granted after the PV was deleted")
	}
	if len(x.pvsBySecret) != 0 {
		t.Errorf("pvsBySecret not cleaned: %v", x.pvsBySecret)
	}
}
