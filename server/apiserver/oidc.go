package apiserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"

	sa "github.com/k1s/k1s/server/auth/serviceaccount"
)

// Service-account issuer discovery (kube-apiserver's
// ServiceAccountIssuerDiscovery): an OpenID Connect discovery document and
// the key set that verifies service-account tokens, so that systems outside
// the cluster can verify them. Both are readable by anyone RBAC lets in
// (system:service-account-issuer-discovery).
const (
	oidcConfigPath = "/.well-known/openid-configuration"
	oidcJWKSPath   = "/openid/v1/jwks"
)

type oidcDocs struct {
	config, jwks []byte
}

// newOIDCDocs builds the two documents for issuer and the public half of
// key; the key set lives at jwksURI.
func newOIDCDocs(issuer, jwksURI string, key crypto.PublicKey) (*oidcDocs, error) {
	kid, err := sa.KeyID(key)
	if err != nil {
		return nil, err
	}
	jwk := map[string]string{"use": "sig", "kid": kid}
	switch k := key.(type) {
	case *rsa.PublicKey:
		jwk["kty"], jwk["alg"] = "RSA", "RS256"
		jwk["n"] = b64(k.N.Bytes())
		jwk["e"] = b64(big.NewInt(int64(k.E)).Bytes())
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		jwk["kty"], jwk["crv"] = "EC", k.Curve.Params().Name
		jwk["alg"] = map[int]string{256: "ES256", 384: "ES384", 521: "ES512"}[k.Curve.Params().BitSize]
		jwk["x"] = b64(k.X.FillBytes(make([]byte, size)))
		jwk["y"] = b64(k.Y.FillBytes(make([]byte, size)))
	default:
		return nil, fmt.Errorf("service-account key of type %T cannot be published", key)
	}
	config, err := json.Marshal(map[string]any{
		"issuer":                                issuer,
		"jwks_uri":                              jwksURI,
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{jwk["alg"]},
	})
	if err != nil {
		return nil, err
	}
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{jwk}})
	if err != nil {
		return nil, err
	}
	return &oidcDocs{config: config, jwks: jwks}, nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// install serves the documents on mux (cached for an hour by clients, as
// upstream's).
func (o *oidcDocs) install(mux interface {
	Handle(string, http.Handler)
}) {
	serve := func(body []byte, contentType string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(body)
		})
	}
	mux.Handle(oidcConfigPath, serve(o.config, "application/json"))
	mux.Handle(oidcJWKSPath, serve(o.jwks, "application/jwk-set+json"))
}

// defaultJWKSURI is where clients outside the cluster fetch the keys: the
// apiserver's advertised address.
func defaultJWKSURI(advertise net.IP, port int) string {
	return "https://" + net.JoinHostPort(advertise.String(), strconv.Itoa(port)) + oidcJWKSPath
}
