package pvprotection

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/k1s/k1s/controllers/volume/storageutil"
)

func TestSync(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		name          string
		pv            *corev1.PersistentVolume
		wantFinalizer bool
	}{
		{name: "added", pv: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}}, wantFinalizer: true},
		{name: "kept while bound", pv: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", DeletionTimestamp: &now, Finalizers: []string{storageutil.PVProtectionFinalizer}},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}, wantFinalizer: true},
		{name: "removed once released", pv: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", DeletionTimestamp: &now, Finalizers: []string{storageutil.PVProtectionFinalizer}},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased}}, wantFinalizer: false},
		{name: "removed when available", pv: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", DeletionTimestamp: &now, Finalizers: []string{storageutil.PVProtectionFinalizer}},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}}, wantFinalizer: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.pv)
			f := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, f.Core().V1().PersistentVolumes(), testingclock.NewFakeClock(time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(tc.pv); err != nil {
				t.Fatal(err)
			}
			if err := c.sync(context.Background(), "pv"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().PersistentVolumes().Get(context.Background(), "pv", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if has := slices.Contains(got.Finalizers, storageutil.PVProtectionFinalizer); has != tc.wantFinalizer {
				t.Errorf("finalizer present = %v, want %v", has, tc.wantFinalizer)
			}
		})
	}
}
