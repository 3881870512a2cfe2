// Package defaultstorageclass is upstream's DefaultStorageClass admission
// plugin: a PersistentVolumeClaim created without a storage class (neither
// spec.storageClassName nor the beta annotation; "" is a class) gets the
// default StorageClass, the one annotated
// storageclass.kubernetes.io/is-default-class=true (the newest when there
// are several). Without a default class the claim is left as it is; the
// persistentvolume-binder assigns one later, when it appears.
package defaultstorageclass

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	"github.com/k1s/k1s/controllers/volume/storageutil"
)

// Name is the name of the plugin, as upstream registers it.
const Name = "DefaultStorageClass"

// Plugin is the DefaultStorageClass admission plugin. Safe for concurrent use.
type Plugin struct {
	*admission.Handler
	lister storagelisters.StorageClassLister
}

var (
	_ admission.MutationInterface       = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
)

// New returns the plugin reading StorageClasses from the factory's
// informer (registering it: the caller starts the factory after New).
func New(factory informers.SharedInformerFactory) (*Plugin, error) {
	if factory == nil {
		return nil, fmt.Errorf("%s admission needs an informer factory", Name)
	}
	inf := factory.Storage().V1().StorageClasses()
	p := &Plugin{Handler: admission.NewHandler(admission.Create), lister: inf.Lister()}
	p.SetReadyFunc(inf.Informer().HasSynced)
	return p, nil
}

// ValidateInitialization reports a missing lister.
func (p *Plugin) ValidateInitialization() error {
	if p.lister == nil {
		return errors.New("missing StorageClass lister")
	}
	return nil
}

var claimsResource = corev1.Resource("persistentvolumeclaims")

// Admit sets the default class on a new claim that names none.
func (p *Plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || a.GetResource().GroupResource() != claimsResource {
		return nil
	}
	pvc, ok := a.GetObject().(*corev1.PersistentVolumeClaim)
	if !ok || storageutil.ClaimHasClass(pvc) {
		return nil
	}
	def, err := storageutil.DefaultClass(p.lister)
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	if def != nil {
		name := def.Name
		pvc.Spec.StorageClassName = &name
	}
	return nil
}
