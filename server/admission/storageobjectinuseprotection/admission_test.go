package storageobjectinuseprotection

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

func TestAdmit(t *testing.T) {
	cases := []struct {
		name     string
		obj      runtime.Object
		resource string
		want     string
	}{
		{name: "volume", obj: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}}, resource: "persistentvolumes", want: "kubernetes.io/pv-protection"},
		{name: "claim", obj: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, resource: "persistentvolumeclaims", want: "kubernetes.io/pvc-protection"},
		{name: "claim that has it", obj: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Finalizers: []string{"kubernetes.io/pvc-protection"}}}, resource: "persistentvolumeclaims", want: "kubernetes.io/pvc-protection"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := admission.NewAttributesRecord(tc.obj, nil, corev1.SchemeGroupVersion.WithKind("X"), "", "x",
				corev1.SchemeGroupVersion.WithResource(tc.resource), "", admission.Create, &metav1.CreateOptions{}, false, nil)
			if err := New().Admit(context.Background(), a, nil); err != nil {
				t.Fatal(err)
			}
			fins := tc.obj.(metav1.Object).GetFinalizers()
			if !slices.Equal(fins, []string{tc.want}) {
				t.Errorf("finalizers %v, want exactly [%s]", fins, tc.want)
			}
		})
	}
}
