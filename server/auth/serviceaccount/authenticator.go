package serviceaccount

import (
	"context"
	"crypto"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/go-jose/go-jose.v2/jwt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	saapi "k8s.io/apiserver/pkg/authentication/serviceaccount"
	tokenjwt "k8s.io/apiserver/pkg/authentication/token/jwt"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Leeway is the clock skew tolerated when checking exp, nbf and iat, and the
// grace given to a bound object whose deletionTimestamp has just passed.
const Leeway = jwt.DefaultLeeway

// errInvalidated is returned when an object a token is bound to is gone.
var errInvalidated = errors.New("service account token has been invalidated")

// AuthenticatorConfig configures NewAuthenticator.
type AuthenticatorConfig struct {
	// Issuers lists the "iss" values accepted on bound tokens. The first is
	// normally the issuer the TokenRequest generator signs with; more let a
	// cluster change issuer without breaking tokens already handed out.
	// Default: none, so only legacy tokens are accepted.
	Issuers []string
	// APIAudiences are the apiserver's own audiences. A token must share one
	// with the audiences asked for (these, unless the request context carries
	// others as TokenReview does). Tokens without "aud" (legacy tokens) count
	// as carrying exactly these. Default: none, which switches the audience
	// check off.
	APIAudiences []string
	// PublicKeys verify token signatures: *rsa.PublicKey or *ecdsa.PublicKey
	// (a crypto.Signer is accepted and its public half used). At least one is
	// required. Several allow signing-key rotation.
	PublicKeys []crypto.PublicKey
	// DisableLegacyTokens rejects secret-based tokens (iss LegacyIssuer).
	// Default false: a legacy token is accepted while its Secret exists and
	// still holds exactly that token.
	DisableLegacyTokens bool
}

// Validate reports configuration errors.
func (c AuthenticatorConfig) Validate() error {
	var errs []error
	if len(c.PublicKeys) == 0 {
		errs = append(errs, errors.New("service account authenticator: at least one public key is required"))
	}
	if len(c.Issuers) == 0 && c.DisableLegacyTokens {
		errs = append(errs, errors.New("service account authenticator: no issuers configured and legacy tokens disabled, nothing could authenticate"))
	}
	for i, iss := range c.Issuers {
		switch {
		case iss == "":
			errs = append(errs, fmt.Errorf("service account authenticator: issuers[%d] is empty", i))
		case iss == LegacyIssuer:
			errs = append(errs, fmt.Errorf("service account authenticator: issuers[%d] may not be the legacy issuer %q", i, LegacyIssuer))
		}
	}
	return errors.Join(errs...)
}

type verificationKey struct {
	id  string
	key crypto.PublicKey
}

// NewAuthenticator returns an authenticator.Token for service-account JWTs.
// It verifies the signature against cfg.PublicKeys (preferring the key named
// by "kid"), the issuer, the audiences and the validity window (with Leeway),
// then checks through getter that the ServiceAccount and any bound Pod,
// Secret or Node still exist with the UIDs recorded in the token. Tokens with
// an issuer it does not know are left to other authenticators (nil, false,
// nil). clk defaults to the real clock when nil. Safe for concurrent use.
func NewAuthenticator(cfg AuthenticatorConfig, getter ServiceAccountTokenGetter, clk clock.PassiveClock) (authenticator.Token, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if getter == nil {
		return nil, errors.New("service account authenticator: a ServiceAccountTokenGetter is required")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	a := &jwtAuthenticator{
		issuers:      map[string]bool{},
		apiAudiences: slices.Clone(cfg.APIAudiences),
		getter:       getter,
		clock:        clk,
	}
	for _, iss := range cfg.Issuers {
		a.issuers[iss] = true
	}
	if !cfg.DisableLegacyTokens {
		a.issuers[LegacyIssuer] = true
	}
	for i, k := range cfg.PublicKeys {
		if s, ok := k.(crypto.Signer); ok {
			k = s.Public()
		}
		id, err := KeyID(k)
		if err != nil {
			return nil, fmt.Errorf("service account authenticator: public key %d: %w", i, err)
		}
		a.keys = append(a.keys, verificationKey{id: id, key: k})
	}
	return a, nil
}

type jwtAuthenticator struct {
	issuers      map[string]bool
	apiAudiences authenticator.Audiences
	keys         []verificationKey
	getter       ServiceAccountTokenGetter
	clock        clock.PassiveClock
}

// unverifiedIssuer extracts "iss" from a compact JWS without checking the
// signature. It is only used to decide whether the token is ours to judge.
func unverifiedIssuer(token string) (string, bool) {
	// Only the compact serialisation is ours; JSON-serialised JWS is not.
	if strings.HasPrefix(strings.TrimSpace(token), "{") {
		return "", false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", false
	}
	var c struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", false
	}
	return c.Issuer, true
}

func (a *jwtAuthenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	iss, ok := unverifiedIssuer(token)
	if !ok || !a.issuers[iss] {
		return nil, false, nil
	}
	tok, err := jwt.ParseSigned(token)
	if err != nil {
		return nil, false, nil
	}

	public := &jwt.Claims{}
	legacy := &legacyClaims{}
	bound := &boundClaims{}
	var private any = bound
	if iss == LegacyIssuer {
		private = legacy
	}
	if err := a.verify(tok, public, private); err != nil {
		return nil, false, err
	}
	// The issuer was read before the signature was checked; read it again
	// from the verified payload.
	if public.Issuer != iss {
		return nil, false, fmt.Errorf("token issuer %q is invalid", public.Issuer)
	}

	tokenAuds := authenticator.Audiences(public.Audience)
	if len(tokenAuds) == 0 {
		tokenAuds = a.apiAudiences
	}
	wanted, ok := authenticator.AudiencesFrom(ctx)
	if !ok {
		wanted = a.apiAudiences
	}
	auds := tokenAuds.Intersect(wanted)
	if len(auds) == 0 && len(a.apiAudiences) != 0 {
		return nil, false, fmt.Errorf("token audiences %q are invalid for the target audiences %q", []string(tokenAuds), []string(wanted))
	}

	var info *saapi.ServiceAccountInfo
	if iss == LegacyIssuer {
		info, err = a.validateLegacy(ctx, token, public, legacy)
	} else {
		info, err = a.validateBound(ctx, public, bound)
	}
	if err != nil {
		return nil, false, err
	}
	return &authenticator.Response{User: info.UserInfo(), Audiences: auds}, true, nil
}

// verify checks the signature with the key named by the token's "kid", or
// with every key when the token names none, and decodes the payload.
func (a *jwtAuthenticator) verify(tok *jwt.JSONWebToken, out ...any) error {
	var kid string
	for _, h := range tok.Headers {
		if h.KeyID != "" {
			kid = h.KeyID
			break
		}
	}
	var errs []error
	tried := 0
	for _, k := range a.keys {
		if kid != "" && k.id != kid {
			continue
		}
		tried++
		err := tok.Claims(k.key, out...)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	if tried == 0 {
		return errors.New("invalid signature: no public key matches the token's key ID")
	}
	return fmt.Errorf("invalid signature: %w", errors.Join(errs...))
}

// deletedLongAgo reports whether meta's deletionTimestamp lies further in the
// past than the leeway.
func deletedLongAgo(meta *metav1.ObjectMeta, now time.Time) bool {
	return meta.DeletionTimestamp != nil && meta.DeletionTimestamp.Time.Before(now.Add(-Leeway))
}

func (a *jwtAuthenticator) validateBound(ctx context.Context, public *jwt.Claims, private *boundClaims) (*saapi.ServiceAccountInfo, error) {
	logger := klog.FromContext(ctx)
	now := a.clock.Now()
	switch err := public.ValidateWithLeeway(jwt.Expected{Time: now}, Leeway); {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return nil, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, errors.New("service account token is issued in the future")
	default:
		return nil, fmt.Errorf("service account token claims are invalid: %w", err)
	}

	k := private.Kubernetes
	ns, saName := k.Namespace, k.ServiceAccount.Name
	if ns == "" || saName == "" || k.ServiceAccount.UID == "" {
		return nil, errors.New("service account token lacks its kubernetes.io namespace or serviceaccount claims")
	}

	sa, err := a.getter.GetServiceAccount(ctx, ns, saName)
	if err != nil {
		logger.V(4).Info("Service account of token not found", "serviceAccount", klog.KRef(ns, saName), "err", err)
		return nil, fmt.Errorf("service account %s/%s: %w", ns, saName, err)
	}
	if string(sa.UID) != k.ServiceAccount.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, k.ServiceAccount.UID)
	}
	if deletedLongAgo(&sa.ObjectMeta, now) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", ns, saName)
	}

	info := &saapi.ServiceAccountInfo{
		Namespace:    ns,
		Name:         saName,
		UID:          k.ServiceAccount.UID,
		CredentialID: tokenjwt.CredentialIDForJTI(public.ID),
	}

	if ref := k.Secret; ref != nil {
		secret, err := a.getter.GetSecret(ctx, ns, ref.Name)
		if err != nil {
			logger.V(4).Info("Bound secret of token not found", "secret", klog.KRef(ns, ref.Name), "err", err)
			return nil, errInvalidated
		}
		if string(secret.UID) != ref.UID {
			return nil, fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", secret.UID, ref.UID)
		}
		if deletedLongAgo(&secret.ObjectMeta, now) {
			return nil, errInvalidated
		}
	}

	if ref := k.Pod; ref != nil {
		pod, err := a.getter.GetPod(ctx, ns, ref.Name)
		if err != nil {
			logger.V(4).Info("Bound pod of token not found", "pod", klog.KRef(ns, ref.Name), "err", err)
			return nil, errInvalidated
		}
		if string(pod.UID) != ref.UID {
			return nil, fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", pod.UID, ref.UID)
		}
		if deletedLongAgo(&pod.ObjectMeta, now) {
			return nil, errInvalidated
		}
		info.PodName, info.PodUID = ref.Name, ref.UID
		// A pod-bound token names its node for information only: the pod
		// check above already ties the token's life to the pod.
		if k.Node != nil {
			info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
		}
	} else if ref := k.Node; ref != nil {
		node, err := a.getter.GetNode(ctx, ref.Name)
		if err != nil {
			logger.V(4).Info("Bound node of token not found", "node", ref.Name, "err", err)
			return nil, errInvalidated
		}
		if string(node.UID) != ref.UID {
			return nil, fmt.Errorf("node UID (%s) does not match service account node ref claim (%s)", node.UID, ref.UID)
		}
		if deletedLongAgo(&node.ObjectMeta, now) {
			return nil, errInvalidated
		}
		info.NodeName, info.NodeUID = ref.Name, ref.UID
	}

	if wa := k.WarnAfter; wa != nil && *wa != 0 && now.After(wa.Time()) {
		logger.V(4).Info("Stale service account token used past its warnafter time",
			"serviceAccount", klog.KRef(ns, saName), "secondsPast", int64(now.Sub(wa.Time()).Seconds()))
	}
	return info, nil
}

func (a *jwtAuthenticator) validateLegacy(ctx context.Context, token string, public *jwt.Claims, private *legacyClaims) (*saapi.ServiceAccountInfo, error) {
	logger := klog.FromContext(ctx)
	switch {
	case public.Subject == "":
		return nil, errors.New("sub claim is missing")
	case private.Namespace == "":
		return nil, errors.New("namespace claim is missing")
	case private.SecretName == "":
		return nil, errors.New("secret name claim is missing")
	case private.ServiceAccountName == "":
		return nil, errors.New("service account name claim is missing")
	case private.ServiceAccountUID == "":
		return nil, errors.New("service account UID claim is missing")
	}
	ns, saName := private.Namespace, private.ServiceAccountName
	subNS, subName, err := saapi.SplitUsername(public.Subject)
	if err != nil || subNS != ns || subName != saName {
		return nil, errors.New("sub claim is invalid")
	}

	secret, err := a.getter.GetSecret(ctx, ns, private.SecretName)
	if err != nil {
		logger.V(4).Info("Secret of legacy token not found", "secret", klog.KRef(ns, private.SecretName), "err", err)
		return nil, errInvalidated
	}
	if secret.DeletionTimestamp != nil {
		return nil, errInvalidated
	}
	if subtle.ConstantTimeCompare(secret.Data[corev1.ServiceAccountTokenKey], []byte(token)) != 1 {
		return nil, errors.New("token does not match the one stored in its secret")
	}
	if since := secret.Labels[InvalidSinceLabelKey]; since != "" {
		return nil, fmt.Errorf("the token in secret %s/%s was marked invalid on %s; use the TokenRequest API or remove the %q label", ns, secret.Name, since, InvalidSinceLabelKey)
	}

	sa, err := a.getter.GetServiceAccount(ctx, ns, saName)
	if err != nil {
		logger.V(4).Info("Service account of legacy token not found", "serviceAccount", klog.KRef(ns, saName), "err", err)
		return nil, fmt.Errorf("service account %s/%s: %w", ns, saName, err)
	}
	if sa.DeletionTimestamp != nil {
		return nil, fmt.Errorf("service account %s/%s has been deleted", ns, saName)
	}
	if string(sa.UID) != private.ServiceAccountUID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, private.ServiceAccountUID)
	}
	return &saapi.ServiceAccountInfo{Namespace: ns, Name: saName, UID: private.ServiceAccountUID}, nil
}
