package pvcresize

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestValidate(t *testing.T) {
	classes := []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "grows"}, AllowVolumeExpansion: ptr.To(true)},
		{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}, AllowVolumeExpansion: ptr.To(false)},
		{ObjectMeta: metav1.ObjectMeta{Name: "unset"}},
	}
	claim := func(class *string, size string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase},
		}
	}
	cases := []struct {
		name     string
		old, new *corev1.PersistentVolumeClaim
		sub      string
		want     string // "" = allowed, else part of the refusal
	}{
		{name: "growth with an expandable class", old: claim(ptr.To("grows"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("grows"), "2Gi", corev1.ClaimBound)},
		{name: "same size always allowed", old: claim(ptr.To("fixed"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("fixed"), "1Gi", corev1.ClaimBound)},
		{name: "shrink left to validation", old: claim(ptr.To("fixed"), "2Gi", corev1.ClaimBound), new: claim(ptr.To("fixed"), "1Gi", corev1.ClaimBound)},
		{name: "class forbids expansion", old: claim(ptr.To("fixed"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("fixed"), "2Gi", corev1.ClaimBound), want: "must support resize"},
		{name: "class says nothing", old: claim(ptr.To("unset"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("unset"), "2Gi", corev1.ClaimBound), want: "must support resize"},
		{name: "missing class", old: claim(ptr.To("gone"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("gone"), "2Gi", corev1.ClaimBound), want: "must support resize"},
		{name: "no class", old: claim(nil, "1Gi", corev1.ClaimBound), new: claim(nil, "2Gi", corev1.ClaimBound), want: "must support resize"},
		{name: "unbound claim", old: claim(ptr.To("grows"), "1Gi", corev1.ClaimPending), new: claim(ptr.To("grows"), "2Gi", corev1.ClaimPending), want: "Only bound"},
		{name: "status subresource ignored", old: claim(ptr.To("fixed"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("fixed"), "2Gi", corev1.ClaimBound), sub: "status"},
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	p, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range classes {
		_ = f.Storage().V1().StorageClasses().Informer().GetIndexer().Add(sc)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := admission.NewAttributesRecord(tc.new, tc.old, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), "ns", "c",
				corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), tc.sub, admission.Update, &metav1.UpdateOptions{}, false, nil)
			err := p.Validate(context.Background(), a, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want a refusal with %q", err, tc.want)
			}
		})
	}
}
