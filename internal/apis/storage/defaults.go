package storage

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds the StorageClass and CSIDriver defaulters (and
// their lists') to s.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&storagev1.CSIDriver{}, func(obj interface{}) {
		DefaultCSIDriver(obj.(*storagev1.CSIDriver))
	})
	s.AddTypeDefaultingFunc(&storagev1.CSIDriverList{}, func(obj interface{}) {
		list := obj.(*storagev1.CSIDriverList)
		for i := range list.Items {
			DefaultCSIDriver(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&storagev1.StorageClass{}, func(obj interface{}) {
		DefaultStorageClass(obj.(*storagev1.StorageClass))
	})
	s.AddTypeDefaultingFunc(&storagev1.StorageClassList{}, func(obj interface{}) {
		list := obj.(*storagev1.StorageClassList)
		for i := range list.Items {
			DefaultStorageClass(&list.Items[i])
		}
	})
	return nil
}

// DefaultStorageClass sets reclaimPolicy to Delete and volumeBindingMode to
// Immediate when unset.
func DefaultStorageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		policy := corev1.PersistentVolumeReclaimDelete
		sc.ReclaimPolicy = &policy
	}
	if sc.VolumeBindingMode == nil {
		mode := storagev1.VolumeBindingImmediate
		sc.VolumeBindingMode = &mode
	}
}
