package ephemeral

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

func ephemeralPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "pod-uid"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
					},
				},
			}}},
			{Name: "cfg", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}},
	}
}

func TestSync(t *testing.T) {
	foreign := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "web-scratch", Namespace: "ns"}}
	cases := []struct {
		name      string
		existing  *corev1.PersistentVolumeClaim
		wantOwner bool
		wantEvent string
	}{
		{name: "creates the claim owned by the pod", wantOwner: true},
		{name: "a claim of that name the pod does not own", existing: foreign, wantEvent: "Warning FailedBinding ephemeral volume scratch: PVC ns/web-scratch was not created for pod ns/web (pod is not owner)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := ephemeralPod()
			objs := []runtime.Object{pod}
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			client := fake.NewClientset(objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			rec := record.NewFakeRecorder(10)
			c, err := New(client, f.Core().V1().Pods(), f.Core().V1().PersistentVolumeClaims(), rec, testingclock.NewFakeClock(time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			_ = f.Core().V1().Pods().Informer().GetIndexer().Add(pod)
			if tc.existing != nil {
				_ = f.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(tc.existing)
			}
			err = c.sync(context.Background(), "ns/web")
			if (err != nil) != (tc.wantEvent != "") {
				t.Fatalf("sync: %v", err)
			}
			got, gerr := client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "web-scratch", metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			owned := metav1.IsControlledBy(got, pod)
			if owned != tc.wantOwner {
				t.Errorf("owned by the pod = %v, want %v", owned, tc.wantOwner)
			}
			if tc.wantOwner {
				if got.Labels["app"] != "web" || got.Spec.Resources.Requests.Storage().String() != "1Gi" {
					t.Errorf("claim not from the template: %+v", got)
				}
			}
			if tc.wantEvent != "" {
				select {
				case e := <-rec.Events:
					if !strings.Contains(e, tc.wantEvent) {
						t.Errorf("event %q, want %q", e, tc.wantEvent)
					}
				default:
					t.Error("no event")
				}
			}
			list, _ := client.CoreV1().PersistentVolumeClaims("ns").List(context.Background(), metav1.ListOptions{})
			if len(list.Items) != 1 {
				t.Errorf("%d claims, want 1 (none for the emptyDir)", len(list.Items))
			}
		})
	}
}
