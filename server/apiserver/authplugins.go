package apiserver

import (
	"crypto"
	"fmt"
	"io"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authzunion "k8s.io/apiserver/pkg/authorization/union"

	"github.com/k1s/k1s/server/admission/noderestriction"
	"github.com/k1s/k1s/server/auth/bootstraptoken"
	"github.com/k1s/k1s/server/auth/node"
	"github.com/k1s/k1s/server/auth/rbac"
	"github.com/k1s/k1s/server/auth/rbac/bootstrappolicy"
	sa "github.com/k1s/k1s/server/auth/serviceaccount"
)

// buildTokenAuthenticators sets the bearer-token authenticators:
// service-account tokens (bound and legacy) and bootstrap tokens.
func (d *dependencies) buildTokenAuthenticators() error {
	key, created, err := sa.LoadOrCreateSigningKey(d.cfg.ServiceAccountKeyFile)
	if err != nil {
		return fmt.Errorf("service-account signing key: %w", err)
	}
	if created {
		d.logger.Info("Created service-account signing key", "path", d.cfg.ServiceAccountKeyFile)
	}
	d.saKey = key
	core := d.informers.Core().V1()
	// Listers first, the API when the informer has not seen an object yet
	// (a token is asked for right after its pod is created).
	d.saGetter = sa.WithFallback(
		sa.NewListerGetter(core.ServiceAccounts().Lister(), core.Pods().Lister(), core.Secrets().Lister(), core.Nodes().Lister()),
		sa.NewClientGetter(d.client),
	)
	saAuth, err := sa.NewAuthenticator(sa.AuthenticatorConfig{
		Issuers:      []string{d.cfg.ServiceAccountIssuer},
		APIAudiences: d.cfg.APIAudiences,
		PublicKeys:   []crypto.PublicKey{key.Public()},
	}, d.saGetter, nil)
	if err != nil {
		return fmt.Errorf("service-account authenticator: %w", err)
	}
	boot := authenticator.WrapAudienceAgnosticToken(d.cfg.APIAudiences, bootstraptoken.New(core.Secrets().Lister(), nil))
	d.tokenAuthenticators = []authenticator.Token{saAuth, boot}
	return nil
}

// buildAuthorizers returns the node authorizer and RBAC, with their rule
// resolvers. Both read informers the server starts in a post-start hook.
func (d *dependencies) buildAuthorizers() ([]authzunion.NamedAuthorizer, []authorizer.RuleResolver, error) {
	rb := d.informers.Rbac().V1()
	d.rbac = rbac.New(rb.Roles().Lister(), rb.RoleBindings().Lister(), rb.ClusterRoles().Lister(), rb.ClusterRoleBindings().Lister())
	nodeAuthz, err := node.New(d.informers.Core().V1().Pods().Informer(), d.informers.Core().V1().PersistentVolumes().Informer(), bootstrappolicy.NodeRules())
	if err != nil {
		return nil, nil, fmt.Errorf("node authorizer: %w", err)
	}
	d.nodeAuthz = nodeAuthz
	return []authzunion.NamedAuthorizer{
		{AuthorizerName: "node", Authorizer: nodeAuthz},
		{AuthorizerName: "rbac", Authorizer: d.rbac},
	}, []authorizer.RuleResolver{d.rbac}, nil
}

// nodeAdmission returns the NodeRestriction plugin.
func (d *dependencies) nodeAdmission() []admissionPlugin {
	return []admissionPlugin{{noderestriction.Name, func(io.Reader) (admission.Interface, error) {
		pods, nodes, sas := d.informers.Core().V1().Pods(), d.informers.Core().V1().Nodes(), d.informers.Core().V1().ServiceAccounts()
		p := noderestriction.New(pods.Lister(), nodes.Lister(), sas.Lister(), d.authorizer)
		p.SetReadyFunc(func() bool {
			return pods.Informer().HasSynced() && nodes.Informer().HasSynced() && sas.Informer().HasSynced()
		})
		return p, nil
	}}}
}
