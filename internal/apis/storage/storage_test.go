package storage

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestDefaultStorageClass(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	list := &storagev1.StorageClassList{Items: []storagev1.StorageClass{
		{},
		{ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain), VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)},
	}}
	s.Default(list)
	if got := *list.Items[0].ReclaimPolicy; got != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("reclaimPolicy = %v", got)
	}
	if got := *list.Items[0].VolumeBindingMode; got != storagev1.VolumeBindingImmediate {
		t.Errorf("volumeBindingMode = %v", got)
	}
	if *list.Items[1].ReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *list.Items[1].VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		t.Errorf("explicit values overwritten: %+v", list.Items[1])
	}
}

func validClass() *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "local-path", ResourceVersion: "1"},
		Provisioner: "rancher.io/local-path",
		Parameters:  map[string]string{"path": "/var/lib/k1s/storage"},
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: "kubernetes.io/hostname", Values: []string{"node-a", "node-b"}},
		}}},
	}
	DefaultStorageClass(sc)
	return sc
}

func TestValidateStorageClass(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*storagev1.StorageClass)
		want   []errKey
	}{
		{name: "valid", mutate: func(*storagev1.StorageClass) {}},
		{name: "upper-case provisioner accepted", mutate: func(sc *storagev1.StorageClass) { sc.Provisioner = "Example.COM/Disk" }},
		{
			name:   "missing provisioner",
			mutate: func(sc *storagev1.StorageClass) { sc.Provisioner = "" },
			want:   []errKey{e(field.ErrorTypeRequired, "provisioner")},
		},
		{
			name:   "invalid provisioner",
			mutate: func(sc *storagev1.StorageClass) { sc.Provisioner = "not a name" },
			want:   []errKey{e(field.ErrorTypeInvalid, "provisioner")},
		},
		{
			name:   "namespaced",
			mutate: func(sc *storagev1.StorageClass) { sc.Namespace = "default" },
			want:   []errKey{e(field.ErrorTypeForbidden, "metadata.namespace")},
		},
		{
			name:   "empty parameter key",
			mutate: func(sc *storagev1.StorageClass) { sc.Parameters[""] = "x" },
			want:   []errKey{e(field.ErrorTypeInvalid, "parameters")},
		},
		{
			name:   "oversized parameters",
			mutate: func(sc *storagev1.StorageClass) { sc.Parameters["big"] = strings.Repeat("x", 300*1024) },
			want:   []errKey{e(field.ErrorTypeTooLong, "parameters")},
		},
		{
			name:   "bad reclaim policy",
			mutate: func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRecycle) },
			want:   []errKey{e(field.ErrorTypeNotSupported, "reclaimPolicy")},
		},
		{
			name:   "missing binding mode",
			mutate: func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = nil },
			want:   []errKey{e(field.ErrorTypeRequired, "volumeBindingMode")},
		},
		{
			name:   "bad binding mode",
			mutate: func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingMode("Later")) },
			want:   []errKey{e(field.ErrorTypeNotSupported, "volumeBindingMode")},
		},
		{
			name: "topology problems",
			mutate: func(sc *storagev1.StorageClass) {
				sc.AllowedTopologies = append(sc.AllowedTopologies, sc.AllowedTopologies[0],
					corev1.TopologySelectorTerm{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
						{Key: "zone", Values: []string{"a", "a"}},
						{Key: "zone", Values: nil},
						{Key: "bad key!", Values: []string{"x"}},
					}})
			},
			want: []errKey{
				e(field.ErrorTypeDuplicate, "allowedTopologies[1].matchLabelExpressions"),
				e(field.ErrorTypeDuplicate, "allowedTopologies[2].matchLabelExpressions[0].values[1]"),
				e(field.ErrorTypeRequired, "allowedTopologies[2].matchLabelExpressions[1].values"),
				e(field.ErrorTypeDuplicate, "allowedTopologies[2].matchLabelExpressions[1].key"),
				e(field.ErrorTypeInvalid, "allowedTopologies[2].matchLabelExpressions[2].key"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := validClass()
			tc.mutate(sc)
			expectErrs(t, ValidateStorageClass(sc), tc.want...)
		})
	}
}

func TestValidateStorageClassUpdate(t *testing.T) {
	old := validClass()
	ok := old.DeepCopy()
	ok.AllowVolumeExpansion = ptr.To(true)
	ok.MountOptions = []string{"noatime"}
	expectErrs(t, ValidateStorageClassUpdate(ok, old))

	bad := old.DeepCopy()
	bad.Provisioner = "example.com/other"
	bad.Parameters = map[string]string{"path": "/elsewhere"}
	bad.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRetain)
	bad.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
	expectErrs(t, ValidateStorageClassUpdate(bad, old),
		e(field.ErrorTypeInvalid, "provisioner"),
		e(field.ErrorTypeInvalid, "parameters"),
		e(field.ErrorTypeInvalid, "reclaimPolicy"),
		e(field.ErrorTypeInvalid, "volumeBindingMode"))
}
