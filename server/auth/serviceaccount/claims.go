package serviceaccount

import (
	"errors"
	"fmt"
	"time"

	"gopkg.in/go-jose/go-jose.v2/jwt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	saapi "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// LegacyIssuer is the fixed "iss" of secret-based service-account tokens.
const LegacyIssuer = "kubernetes/serviceaccount"

// InvalidSinceLabelKey is the Secret label that marks a legacy token secret as
// invalidated; tokens from such a secret are rejected.
const InvalidSinceLabelKey = "kubernetes.io/legacy-token-invalid-since"

const (
	// WarnOnlyExpirationSeconds is the expirationSeconds value that, for a
	// pod-bound token with API audiences, asks for the extended-expiration
	// transition: the token really lives MaxExtendedExpiration and carries a
	// warnafter claim at the requested lifetime.
	WarnOnlyExpirationSeconds = 60*60 + 7

	// DefaultExtendedExpiration is the lifetime given to such tokens when the
	// issuer has no lower maximum: one year.
	DefaultExtendedExpiration = 365 * 24 * time.Hour
)

// legacyClaims is the flat private-claim set of secret-based tokens.
type legacyClaims struct {
	Namespace          string `json:"kubernetes.io/serviceaccount/namespace"`
	SecretName         string `json:"kubernetes.io/serviceaccount/secret.name"`
	ServiceAccountName string `json:"kubernetes.io/serviceaccount/service-account.name"`
	ServiceAccountUID  string `json:"kubernetes.io/serviceaccount/service-account.uid"`
}

// boundClaims is the private-claim set of bound tokens.
type boundClaims struct {
	Kubernetes kubernetesClaims `json:"kubernetes.io,omitempty"`
}

type kubernetesClaims struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount objectRef        `json:"serviceaccount,omitempty"`
	Pod            *objectRef       `json:"pod,omitempty"`
	Secret         *objectRef       `json:"secret,omitempty"`
	Node           *objectRef       `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

type objectRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// LegacyClaims returns the claims of a secret-based token for sa stored in
// secret. Sign them with a generator whose issuer is LegacyIssuer, and store
// the result under the secret's "token" key: the authenticator accepts a
// legacy token only while the secret still holds exactly that value.
func LegacyClaims(sa *corev1.ServiceAccount, secret *corev1.Secret) (*jwt.Claims, any) {
	return &jwt.Claims{Subject: saapi.MakeUsername(sa.Namespace, sa.Name)},
		&legacyClaims{
			Namespace:          sa.Namespace,
			SecretName:         secret.Name,
			ServiceAccountName: sa.Name,
			ServiceAccountUID:  string(sa.UID),
		}
}

// BoundToken describes a bound token to issue.
type BoundToken struct {
	// ServiceAccount the token identifies. Required.
	ServiceAccount *corev1.ServiceAccount
	// Pod the token is bound to; the token dies with it. Optional; exclusive
	// with Secret. Node may be set alongside it to record where the pod runs
	// (a Node with only a name is fine when the Node object is missing).
	Pod *corev1.Pod
	// Secret the token is bound to. Optional; exclusive with Pod and Node.
	Secret *corev1.Secret
	// Node the token is bound to (alone), or the pod's node (with Pod).
	Node *corev1.Node
	// Audiences is the "aud" claim. Callers normally default it to the API
	// audiences; a token without "aud" is treated by the authenticator as
	// meant for the API audiences.
	Audiences []string
	// Expiration is the token lifetime from Now. Required, > 0.
	Expiration time.Duration
	// WarnAfter, when > 0, adds a warnafter claim at Now+WarnAfter.
	WarnAfter time.Duration
	// Now is the issue time (iat, nbf). Required.
	Now time.Time
}

// BoundClaims returns the registered and private claims of a bound token.
// The token gets a random "jti", which surfaces as the credential ID in the
// authenticated user's extra.
func BoundClaims(b BoundToken) (*jwt.Claims, any, error) {
	if b.ServiceAccount == nil {
		return nil, nil, errors.New("bound token: service account is required")
	}
	if b.Expiration <= 0 {
		return nil, nil, fmt.Errorf("bound token: expiration must be positive, got %s", b.Expiration)
	}
	if b.Now.IsZero() {
		return nil, nil, errors.New("bound token: issue time is required")
	}
	if b.Secret != nil && (b.Pod != nil || b.Node != nil) {
		return nil, nil, errors.New("bound token: a token bound to a secret cannot also be bound to a pod or node")
	}
	sa := b.ServiceAccount
	rc := &jwt.Claims{
		Subject:   saapi.MakeUsername(sa.Namespace, sa.Name),
		Audience:  jwt.Audience(b.Audiences),
		IssuedAt:  jwt.NewNumericDate(b.Now),
		NotBefore: jwt.NewNumericDate(b.Now),
		Expiry:    jwt.NewNumericDate(b.Now.Add(b.Expiration)),
		ID:        string(uuid.NewUUID()),
	}
	pc := &boundClaims{Kubernetes: kubernetesClaims{
		Namespace:      sa.Namespace,
		ServiceAccount: objectRef{Name: sa.Name, UID: string(sa.UID)},
	}}
	if b.Pod != nil {
		pc.Kubernetes.Pod = &objectRef{Name: b.Pod.Name, UID: string(b.Pod.UID)}
	}
	if b.Secret != nil {
		pc.Kubernetes.Secret = &objectRef{Name: b.Secret.Name, UID: string(b.Secret.UID)}
	}
	if b.Node != nil {
		pc.Kubernetes.Node = &objectRef{Name: b.Node.Name, UID: string(b.Node.UID)}
	}
	if b.WarnAfter > 0 {
		pc.Kubernetes.WarnAfter = jwt.NewNumericDate(b.Now.Add(b.WarnAfter))
	}
	return rc, pc, nil
}
