// Package storageutil holds what the volume controllers, the scheduler's
// volume binding and the storage admission plugins share: the finalizer
// and annotation names upstream uses, the default StorageClass choice, and
// the claims a pod refers to.
package storageutil

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// Finalizers and annotations, spelled as upstream.
const (
	// PVCProtectionFinalizer keeps a claim a pod still uses from being removed.
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	// PVProtectionFinalizer keeps a bound volume from being removed.
	PVProtectionFinalizer = "kubernetes.io/pv-protection"
	// IsDefaultClassAnnotation marks the default StorageClass ("true").
	IsDefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"
	// BetaIsDefaultClassAnnotation is its deprecated beta spelling.
	BetaIsDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
	// BetaStorageClassAnnotation is the deprecated way a claim named its class.
	BetaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"
)

// IsDefaultClass reports whether the class is marked default.
func IsDefaultClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[IsDefaultClassAnnotation] == "true" || sc.Annotations[BetaIsDefaultClassAnnotation] == "true"
}

// DefaultClass returns the default StorageClass, nil when there is none.
// With several, the newest wins, then the first by name (as upstream).
func DefaultClass(lister storagelisters.StorageClassLister) (*storagev1.StorageClass, error) {
	all, err := lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return PickDefault(all), nil
}

// PickDefault is DefaultClass over a list.
func PickDefault(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var defaults []*storagev1.StorageClass
	for _, sc := range classes {
		if IsDefaultClass(sc) {
			defaults = append(defaults, sc)
		}
	}
	if len(defaults) == 0 {
		return nil
	}
	sort.Slice(defaults, func(i, j int) bool {
		a, b := defaults[i].CreationTimestamp.UnixNano(), defaults[j].CreationTimestamp.UnixNano()
		if a == b {
			return defaults[i].Name < defaults[j].Name
		}
		return a > b
	})
	return defaults[0]
}

// ClaimHasClass reports whether the claim names a class, in its spec or
// with the beta annotation; "" counts as a class (the empty one).
func ClaimHasClass(pvc *corev1.PersistentVolumeClaim) bool {
	if pvc.Spec.StorageClassName != nil {
		return true
	}
	_, ok := pvc.Annotations[BetaStorageClassAnnotation]
	return ok
}

// PodClaim is one claim a pod's volume refers to.
type PodClaim struct {
	// Name is the claim's name in the pod's namespace.
	Name string
	// Ephemeral is set for an ephemeral volume's claim, which must be
	// owned by the pod.
	Ephemeral bool
	// ReadOnly is the volume source's readOnly.
	ReadOnly bool
}

// PodClaims lists the claims of the pod's persistentVolumeClaim and
// ephemeral volumes, in volume order.
func PodClaims(pod *corev1.Pod) []PodClaim {
	var out []PodClaim
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, PodClaim{Name: v.PersistentVolumeClaim.ClaimName, ReadOnly: v.PersistentVolumeClaim.ReadOnly})
		case v.Ephemeral != nil:
			out = append(out, PodClaim{Name: ephemeral.VolumeClaimName(pod, v), Ephemeral: true})
		}
	}
	return out
}
