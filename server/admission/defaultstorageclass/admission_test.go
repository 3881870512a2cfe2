package defaultstorageclass

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestAdmit(t *testing.T) {
	older := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "older", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}}
	newer := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "newer", CreationTimestamp: metav1.NewTime(time.Now()),
		Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}}
	plain := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	cases := []struct {
		name    string
		classes []*storagev1.StorageClass
		class   *string
		beta    bool
		want    *string
	}{
		{name: "default assigned", classes: []*storagev1.StorageClass{older, plain}, want: ptr.To("older")},
		{name: "newest default wins", classes: []*storagev1.StorageClass{older, newer}, want: ptr.To("newer")},
		{name: "no default", classes: []*storagev1.StorageClass{plain}},
		{name: "explicit class kept", classes: []*storagev1.StorageClass{older}, class: ptr.To("plain"), want: ptr.To("plain")},
		{name: "empty class kept", classes: []*storagev1.StorageClass{older}, class: ptr.To(""), want: ptr.To("")},
		{name: "beta annotation counts as a class", classes: []*storagev1.StorageClass{older}, beta: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
			p, err := New(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, sc := range tc.classes {
				_ = f.Storage().V1().StorageClasses().Informer().GetIndexer().Add(sc)
			}
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: tc.class}}
			if tc.beta {
				pvc.Annotations = map[string]string{"volume.beta.kubernetes.io/storage-class": "x"}
			}
			a := admission.NewAttributesRecord(pvc, nil, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), "ns", "c",
				corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
			if err := p.Admit(context.Background(), a, nil); err != nil {
				t.Fatal(err)
			}
			if got := pvc.Spec.StorageClassName; (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("class %v, want %v", ptr.Deref(got, "<nil>"), ptr.Deref(tc.want, "<nil>"))
			}
		})
	}
}
