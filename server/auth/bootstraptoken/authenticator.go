package bootstraptoken

import (
	"context"
	"crypto/subtle"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	corev1listers "k8s.io/client-go/listers/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"
	bootstraptokens "k8s.io/cluster-bootstrap/util/tokens"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// New returns an authenticator.Token for bootstrap tokens, reading Secrets
// in kube-system from secrets (normally an informer's lister). clk decides
// expiry and defaults to the real clock when nil. Safe for concurrent use.
//
// Every token that is not a usable bootstrap token, whatever the reason, is
// answered with (nil, false, nil) so other authenticators may try it; only a
// failing lister yields an error.
//
// Bootstrap tokens carry no audience, so responses have none. An apiserver
// with API audiences must wrap the result with
// authenticator.WrapAudienceAgnosticToken(apiAudiences, New(...)), as
// kube-apiserver does; otherwise TokenReviews of bootstrap tokens fail the
// audience check.
func New(secrets corev1listers.SecretLister, clk clock.PassiveClock) authenticator.Token {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &tokenAuthenticator{secrets: secrets.Secrets(metav1.NamespaceSystem), clock: clk}
}

type tokenAuthenticator struct {
	secrets corev1listers.SecretNamespaceLister
	clock   clock.PassiveClock
}

func (a *tokenAuthenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	id, secretPart, err := bootstraptokens.ParseToken(token)
	if err != nil {
		// Not shaped like a bootstrap token: somebody else's.
		return nil, false, nil
	}
	logger := klog.FromContext(ctx)
	name := bootstrapapi.BootstrapTokenSecretPrefix + id
	secret, err := a.secrets.Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(3).Info("No bootstrap token secret for bearer token", "secret", klog.KRef(metav1.NamespaceSystem, name))
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("look up bootstrap token secret %s: %w", name, err)
	}

	reject := func(why string, kv ...any) (*authenticator.Response, bool, error) {
		logger.V(3).Info("Bootstrap token secret matching bearer token rejected: "+why,
			append([]any{"secret", klog.KObj(secret)}, kv...)...)
		return nil, false, nil
	}
	if secret.DeletionTimestamp != nil {
		return reject("secret is being deleted")
	}
	if secret.Type != bootstrapapi.SecretTypeBootstrapToken || secret.Data == nil {
		return reject("wrong secret type", "type", secret.Type)
	}
	stored := bootstrapsecrets.GetData(secret, bootstrapapi.BootstrapTokenSecretKey)
	if subtle.ConstantTimeCompare([]byte(stored), []byte(secretPart)) != 1 {
		return reject("token secret does not match")
	}
	if bootstrapsecrets.GetData(secret, bootstrapapi.BootstrapTokenIDKey) != id {
		return reject("token id does not match", "key", bootstrapapi.BootstrapTokenIDKey)
	}
	if bootstrapsecrets.HasExpired(secret, a.clock.Now()) {
		return reject("token has expired or has an unparseable expiration")
	}
	if bootstrapsecrets.GetData(secret, bootstrapapi.BootstrapTokenUsageAuthentication) != "true" {
		return reject("token is not marked for authentication", "key", bootstrapapi.BootstrapTokenUsageAuthentication)
	}
	groups, err := bootstrapsecrets.GetGroups(secret)
	if err != nil {
		return reject("invalid extra groups", "err", err)
	}
	return &authenticator.Response{User: &user.DefaultInfo{
		Name:   bootstrapapi.BootstrapUserPrefix + id,
		Groups: groups,
	}}, true, nil
}
