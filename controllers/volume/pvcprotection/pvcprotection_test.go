package pvcprotection

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/volume/storageutil"
)

func podWith(name, node string, vol corev1.VolumeSource) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid-" + "pod"},
		Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "v", VolumeSource: vol}}}}
}

func claimSource(name string) corev1.VolumeSource {
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}

func TestSync(t *testing.T) {
	now := metav1.Now()
	deleting := func(name string, owner *metav1.OwnerReference) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", DeletionTimestamp: &now, Finalizers: []string{storageutil.PVCProtectionFinalizer}}}
		if owner != nil {
			pvc.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return pvc
	}
	podOwner := &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "uid-pod", Controller: ptr.To(true)}
	shutDownPod := podWith("p", "n1", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}})
	shutDownPod.DeletionTimestamp = &now
	shutDownPod.DeletionGracePeriodSeconds = ptr.To[int64](0)
	succeeded := podWith("p", "n1", claimSource("c"))
	succeeded.Status.Phase = corev1.PodSucceeded
	cases := []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		pods []*corev1.Pod
		// inLiveListOnly: the pod is in the apiserver but not the informer.
		inLiveListOnly bool
		wantFinalizer  bool
	}{
		{name: "added", pvc: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}, wantFinalizer: true},
		{name: "removed when unused", pvc: deleting("c", nil), wantFinalizer: false},
		{name: "kept while a scheduled pod uses it", pvc: deleting("c", nil), pods: []*corev1.Pod{podWith("p", "n1", claimSource("c"))}, wantFinalizer: true},
		{name: "kept for a finished pod not yet deleted", pvc: deleting("c", nil), pods: []*corev1.Pod{succeeded}, wantFinalizer: true},
		{name: "kept for a pod only the apiserver knows", pvc: deleting("c", nil), pods: []*corev1.Pod{podWith("p", "n1", claimSource("c"))}, inLiveListOnly: true, wantFinalizer: true},
		{name: "an unscheduled pod does not hold it", pvc: deleting("c", nil), pods: []*corev1.Pod{podWith("p", "", claimSource("c"))}, wantFinalizer: false},
		{name: "another claim's pod does not hold it", pvc: deleting("c", nil), pods: []*corev1.Pod{podWith("p", "n1", claimSource("d"))}, wantFinalizer: false},
		{name: "ephemeral claim of a running pod", pvc: deleting("p-v", podOwner), pods: []*corev1.Pod{podWith("p", "n1", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}})}, wantFinalizer: true},
		{name: "ephemeral claim of a shut-down pod", pvc: deleting("p-v", podOwner), pods: []*corev1.Pod{shutDownPod}, wantFinalizer: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{tc.pvc}
			for _, p := range tc.pods {
				objs = append(objs, p)
			}
			client := fake.NewClientset(objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, f.Core().V1().PersistentVolumeClaims(), f.Core().V1().Pods(), testingclock.NewFakeClock(time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(tc.pvc); err != nil {
				t.Fatal(err)
			}
			if !tc.inLiveListOnly {
				for _, p := range tc.pods {
					if err := f.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := c.sync(context.Background(), "ns/"+tc.pvc.Name); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), tc.pvc.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if has := slices.Contains(got.Finalizers, storageutil.PVCProtectionFinalizer); has != tc.wantFinalizer {
				t.Errorf("finalizer present = %v, want %v", has, tc.wantFinalizer)
			}
		})
	}
}
