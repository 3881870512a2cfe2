// Package bootstraptoken is a bootstrap token as it is stored: a Secret
// "bootstrap-token-<id>" of type bootstrap.kubernetes.io/token in
// kube-system, in kubeadm's layout (token-id, token-secret, expiration as
// RFC 3339, description, usage-bootstrap-authentication and
// usage-bootstrap-signing, auth-extra-groups). `k1s token` writes and reads
// such Secrets, the server keeps its own join token as one, the apiserver's
// authenticator (server/auth/bootstraptoken) accepts them and the
// token-cleaner controller deletes them once they have expired.
package bootstraptoken

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"
)

// Defaults of `k1s token create`, kubeadm's with k1s's group.
const (
	// DefaultTTL is how long a created token lives.
	DefaultTTL = 24 * time.Hour
	// DefaultGroup is the extra group of node join tokens; the server's own
	// join token is in it too.
	DefaultGroup = "system:bootstrappers:k1s:default-node-token"
)

// Usages a token can have (bootstrapapi.KnownTokenUsages).
const (
	UsageAuthentication = "authentication"
	UsageSigning        = "signing"
)

// DefaultUsages are kubeadm's: a created token authenticates and may sign
// the cluster-info ConfigMap.
func DefaultUsages() []string { return []string{UsageSigning, UsageAuthentication} }

// Token is one bootstrap token.
type Token struct {
	// ID and Secret make the bearer token "<id>.<secret>"
	// ([a-z0-9]{6}.[a-z0-9]{16}); the ID is public (it names the Secret),
	// the secret is not.
	ID, Secret string
	// Description is free text for people.
	Description string
	// Expires is when the token stops being accepted and the token-cleaner
	// deletes it; the zero time means never.
	Expires time.Time
	// Usages are "authentication" (a bearer token for the apiserver) and
	// "signing" (signs the cluster-info ConfigMap); at least one.
	Usages []string
	// Groups are the extra groups the token authenticates in, besides
	// system:bootstrappers; each matches system:bootstrappers:[a-z0-9:-]*.
	// Only with the "authentication" usage.
	Groups []string
}

// Generate returns a new random token "<id>.<secret>".
func Generate() (string, error) {
	tok, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return "", fmt.Errorf("generate a bootstrap token: %w", err)
	}
	return tok, nil
}

// Split reads a bearer token "<id>.<secret>". Its error never repeats the
// input, which may be a secret.
func Split(s string) (id, secret string, err error) {
	if !bootstraputil.IsValidBootstrapToken(s) {
		return "", "", fmt.Errorf("not a bootstrap token %s", bootstrapapi.BootstrapTokenPattern)
	}
	id, secret, _ = strings.Cut(s, ".")
	return id, secret, nil
}

// Bearer is the token as a client sends it, "<id>.<secret>".
func (t Token) Bearer() string { return t.ID + "." + t.Secret }

// SecretName is the name of the Secret of the token with this ID.
func SecretName(id string) string { return bootstraputil.BootstrapTokenSecretName(id) }

// ValidateUsages checks usages: at least one, each known.
func ValidateUsages(usages []string) error {
	if len(usages) == 0 {
		return fmt.Errorf("at least one usage is needed (%s)", strings.Join(bootstrapapi.KnownTokenUsages, ", "))
	}
	return bootstraputil.ValidateUsages(usages)
}

// ValidateGroups checks the extra groups: each a bootstrap group, and none
// unless the token authenticates.
func ValidateGroups(groups, usages []string) error {
	var errs []error
	for _, g := range groups {
		if err := bootstraputil.ValidateBootstrapGroupName(g); err != nil {
			errs = append(errs, err)
		}
	}
	if len(groups) > 0 && !slices.Contains(usages, UsageAuthentication) {
		errs = append(errs, fmt.Errorf("extra groups need the %q usage", UsageAuthentication))
	}
	return errors.Join(errs...)
}

// Validate checks every field; the errors name the fields.
func (t Token) Validate() error {
	var errs []error
	if _, _, err := Split(t.Bearer()); err != nil {
		errs = append(errs, fmt.Errorf("token: %w", err))
	}
	if err := ValidateUsages(t.Usages); err != nil {
		errs = append(errs, fmt.Errorf("usages: %w", err))
	}
	if err := ValidateGroups(t.Groups, t.Usages); err != nil {
		errs = append(errs, fmt.Errorf("groups: %w", err))
	}
	return errors.Join(errs...)
}

// ToSecret is the Secret that stores t, after validating it.
func ToSecret(t Token) (*corev1.Secret, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:     []byte(t.ID),
		bootstrapapi.BootstrapTokenSecretKey: []byte(t.Secret),
	}
	if t.Description != "" {
		data[bootstrapapi.BootstrapTokenDescriptionKey] = []byte(t.Description)
	}
	if !t.Expires.IsZero() {
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(t.Expires.UTC().Format(time.RFC3339))
	}
	for _, u := range t.Usages {
		data[bootstrapapi.BootstrapTokenUsagePrefix+u] = []byte("true")
	}
	if len(t.Groups) > 0 {
		data[bootstrapapi.BootstrapTokenExtraGroupsKey] = []byte(strings.Join(t.Groups, ","))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(t.ID), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data:       data,
	}, nil
}

// FromSecret reads a token's Secret. It fails on a Secret that is not a
// well-formed bootstrap token (wrong type, name and token-id disagreeing,
// a malformed secret or expiration); the error names the Secret, never
// the token's secret.
func FromSecret(s *corev1.Secret) (Token, error) {
	ref := s.Namespace + "/" + s.Name
	if s.Type != bootstrapapi.SecretTypeBootstrapToken {
		return Token{}, fmt.Errorf("secret %s has type %q, not %q", ref, s.Type, bootstrapapi.SecretTypeBootstrapToken)
	}
	t := Token{
		ID:          bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenIDKey),
		Secret:      bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenSecretKey),
		Description: bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenDescriptionKey),
	}
	if nameID, ok := bootstrapsecrets.ParseName(s.Name); !ok || nameID != t.ID {
		return Token{}, fmt.Errorf("secret %s: its name does not match its %s %q", ref, bootstrapapi.BootstrapTokenIDKey, t.ID)
	}
	if _, _, err := Split(t.Bearer()); err != nil {
		return Token{}, fmt.Errorf("secret %s: %s and %s are %w", ref, bootstrapapi.BootstrapTokenIDKey, bootstrapapi.BootstrapTokenSecretKey, err)
	}
	if exp := bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenExpirationKey); exp != "" {
		at, err := time.Parse(time.RFC3339, exp)
		if err != nil {
			return Token{}, fmt.Errorf("secret %s: %s %q is not an RFC 3339 time", ref, bootstrapapi.BootstrapTokenExpirationKey, exp)
		}
		t.Expires = at
	}
	// In kubeadm's order: sorted by key.
	keys := make([]string, 0, len(s.Data))
	for k := range s.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if u, ok := strings.CutPrefix(k, bootstrapapi.BootstrapTokenUsagePrefix); ok && string(s.Data[k]) == "true" {
			t.Usages = append(t.Usages, u)
		}
	}
	if g := bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenExtraGroupsKey); g != "" {
		t.Groups = strings.Split(g, ",")
	}
	return t, nil
}

// Expired reports whether t has an expiry that now has reached.
func (t Token) Expired(now time.Time) bool {
	return !t.Expires.IsZero() && !now.Before(t.Expires)
}
