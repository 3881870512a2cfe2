// Package pvcresize is upstream's PersistentVolumeClaimResize admission
// plugin: a claim's storage request may grow only once the claim is bound,
// and only when its StorageClass (the same before and after the update)
// sets allowVolumeExpansion. Shrinking is the validation's to refuse.
package pvcresize

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	storagelisters "k8s.io/client-go/listers/storage/v1"
)

// Name is the name of the plugin, as upstream registers it.
const Name = "PersistentVolumeClaimResize"

// Plugin is the PersistentVolumeClaimResize admission plugin. Safe for
// concurrent use.
type Plugin struct {
	*admission.Handler
	lister storagelisters.StorageClassLister
}

var (
	_ admission.ValidationInterface     = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
)

// New returns the plugin reading StorageClasses from the factory's informer
// (registering it: the caller starts the factory after New).
func New(factory informers.SharedInformerFactory) (*Plugin, error) {
	if factory == nil {
		return nil, fmt.Errorf("%s admission needs an informer factory", Name)
	}
	inf := factory.Storage().V1().StorageClasses()
	p := &Plugin{Handler: admission.NewHandler(admission.Update), lister: inf.Lister()}
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

// Validate refuses growing a claim that is not bound or whose class does
// not allow expansion.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || a.GetResource().GroupResource() != claimsResource {
		return nil
	}
	claim, ok := a.GetObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	old, ok := a.GetOldObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	was, now := old.Spec.Resources.Requests[corev1.ResourceStorage], claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if now.Cmp(was) <= 0 {
		return nil
	}
	if old.Status.Phase != corev1.ClaimBound {
		return admission.NewForbidden(a, errors.New("Only bound persistent volume claims can be expanded")) //nolint:staticcheck // upstream's message
	}
	if !p.expandable(className(old), className(claim)) {
		return admission.NewForbidden(a, errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	}
	return nil
}

// expandable reports whether the claim's class, unchanged by the update,
// exists and allows volume expansion.
func (p *Plugin) expandable(before, after string) bool {
	if before == "" || before != after {
		return false
	}
	sc, err := p.lister.Get(after)
	if err != nil || sc.AllowVolumeExpansion == nil {
		return false
	}
	return *sc.AllowVolumeExpansion
}

// className is the claim's class: the beta annotation when set, as
// upstream reads it, else spec.storageClassName.
func className(c *corev1.PersistentVolumeClaim) string {
	if v, ok := c.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return v
	}
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return ""
}
