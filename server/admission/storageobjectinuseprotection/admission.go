// Package storageobjectinuseprotection is upstream's
// StorageObjectInUseProtection admission plugin: every PersistentVolume is
// created with the kubernetes.io/pv-protection finalizer and every
// PersistentVolumeClaim with kubernetes.io/pvc-protection, so neither can
// disappear before the pv-protection and pvc-protection controllers have
// looked at it.
package storageobjectinuseprotection

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/k1s/k1s/controllers/volume/storageutil"
)

// Name is the name of the plugin, as upstream registers it.
const Name = "StorageObjectInUseProtection"

// Plugin is the StorageObjectInUseProtection admission plugin. Safe for
// concurrent use.
type Plugin struct {
	*admission.Handler
}

var _ admission.MutationInterface = (*Plugin)(nil)

// New returns the plugin.
func New() *Plugin { return &Plugin{Handler: admission.NewHandler(admission.Create)} }

// Admit adds the protection finalizer to a new volume or claim.
func (p *Plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	switch obj := a.GetObject().(type) {
	case *corev1.PersistentVolume:
		if a.GetResource().GroupResource() == corev1.Resource("persistentvolumes") && !slices.Contains(obj.Finalizers, storageutil.PVProtectionFinalizer) {
			obj.Finalizers = append(obj.Finalizers, storageutil.PVProtectionFinalizer)
		}
	case *corev1.PersistentVolumeClaim:
		if a.GetResource().GroupResource() == corev1.Resource("persistentvolumeclaims") && !slices.Contains(obj.Finalizers, storageutil.PVCProtectionFinalizer) {
			obj.Finalizers = append(obj.Finalizers, storageutil.PVCProtectionFinalizer)
		}
	}
	return nil
}
