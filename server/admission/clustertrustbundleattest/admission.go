package clustertrustbundleattest

import (
	"context"
	"errors"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	csrregistry "github.com/k1s/k1s/server/registry/certificates"
)

// Name is the name of the plugin, as upstream registers it.
const Name = "ClusterTrustBundleAttest"

// Plugin is the ClusterTrustBundleAttest admission plugin. Safe for
// concurrent use.
type Plugin struct {
	*admission.Handler
	authz authorizer.Authorizer
}

var (
	_ admission.ValidationInterface     = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
)

// New returns the plugin asking authz.
func New(authz authorizer.Authorizer) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), authz: authz}
}

// ValidateInitialization reports a missing authorizer.
func (p *Plugin) ValidateInitialization() error {
	if p.authz == nil {
		return errors.New(Name + " requires an authorizer")
	}
	return nil
}

var bundles = certificatesv1.Resource("clustertrustbundles")

// Validate refuses a bundle for a signer the requester may not attest for.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != bundles || a.GetSubresource() != "" {
		return nil
	}
	b, ok := a.GetObject().(*certificatesv1.ClusterTrustBundle)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("expected type ClusterTrustBundle, got: %T", a.GetObject()))
	}
	if b.Spec.SignerName == "" {
		return nil
	}
	if a.GetOperation() == admission.Update {
		if old, ok := a.GetOldObject().(*certificatesv1.ClusterTrustBundle); ok && onlyGCFieldsChanged(b, old) {
			return nil
		}
	}
	if !csrregistry.AuthorizedForSigner(ctx, p.authz, a.GetUserInfo(), "attest", b.Spec.SignerName) {
		return admission.NewForbidden(a, fmt.Errorf("user not permitted to attest for signerName %q", b.Spec.SignerName))
	}
	return nil
}

// onlyGCFieldsChanged reports whether b differs from old only in the
// fields the garbage collector writes (owner references, finalizers) and
// managed fields.
func onlyGCFieldsChanged(b, old *certificatesv1.ClusterTrustBundle) bool {
	c := b.DeepCopy()
	c.OwnerReferences, c.Finalizers = old.OwnerReferences, old.Finalizers
	c.SelfLink, c.ManagedFields = old.SelfLink, old.ManagedFields
	return apiequality.Semantic.DeepEqual(c, old)
}
