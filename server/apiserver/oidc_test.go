package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	sa "github.com/k1s/k1s/server/auth/serviceaccount"
)

func TestOIDCDocs(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		key     any
		kty     string
		alg     string
		members []string
	}{
		{"rsa", &rsaKey.PublicKey, "RSA", "RS256", []string{"n", "e"}},
		{"ecdsa", &ecKey.PublicKey, "EC", "ES256", []string{"x", "y", "crv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := defaultJWKSURI(net.ParseIP("192.0.2.1"), 6443)
			docs, err := newOIDCDocs("https://kubernetes.default.svc.cluster.local", uri, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			docs.install(mux)
			get := func(path string) map[string]any {
				rec := httptest.NewRecorder()
				mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusOK {
					t.Fatalf("GET %s: %d", path, rec.Code)
				}
				var out map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
					t.Fatal(err)
				}
				return out
			}
			cfg := get(oidcConfigPath)
			if cfg["issuer"] != "https://kubernetes.default.svc.cluster.local" || cfg["jwks_uri"] != "https://192.0.2.1:6443/openid/v1/jwks" {
				t.Errorf("discovery document %v", cfg)
			}
			keys := get(oidcJWKSPath)["keys"].([]any)
			if len(keys) != 1 {
				t.Fatalf("keys %v", keys)
			}
			k := keys[0].(map[string]any)
			kid, _ := sa.KeyID(tc.key)
			if k["kty"] != tc.kty || k["alg"] != tc.alg || k["kid"] != kid || k["use"] != "sig" {
				t.Errorf("key %v", k)
			}
			for _, m := range tc.members {
				if s, _ := k[m].(string); s == "" {
					t.Errorf("key lacks %s: %v", m, k)
				}
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, oidcJWKSPath, nil))
			if rec.Code != http.StatusMethodNotAllowed {
				t.Errorf("POST: %d", rec.Code)
			}
		})
	}
}
