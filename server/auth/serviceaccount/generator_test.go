package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/go-jose/go-jose.v2/jwt"
)

func TestNewTokenGenerator(t *testing.T) {
	rsa1, _, ec1 := testKeys(t)
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		issuer  string
		key     crypto.Signer
		wantAlg string
		wantErr string
	}{
		{name: "rsa signs RS256", issuer: "https://k1s", key: rsa1, wantAlg: "RS256"},
		{name: "ec P-256 signs ES256", issuer: "https://k1s", key: ec1, wantAlg: "ES256"},
		{name: "empty issuer", issuer: "", key: rsa1, wantErr: "issuer is required"},
		{name: "nil key", issuer: "https://k1s", key: nil, wantErr: "signing key is required"},
		{name: "unsupported curve", issuer: "https://k1s", key: p224, wantErr: "unsupported ECDSA curve"},
		{name: "unsupported key type", issuer: "https://k1s", key: edKey, wantErr: "unsupported signing key type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewTokenGenerator(tc.issuer, tc.key)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tok, err := g.GenerateToken(context.Background(), &jwt.Claims{Subject: "s"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := decodeSegment(t, tok, 0)
			if h["alg"] != tc.wantAlg {
				t.Errorf("alg = %v, want %s", h["alg"], tc.wantAlg)
			}
			if want := mustKeyID(t, tc.key.Public()); h["kid"] != want {
				t.Errorf("kid = %v, want %s", h["kid"], want)
			}
		})
	}
}

func TestGenerateTokenClaimPrecedence(t *testing.T) {
	rsa1, _, _ := testKeys(t)
	g, err := NewTokenGenerator("https://real-issuer", rsa1)
	if err != nil {
		t.Fatal(err)
	}
	private := map[string]any{"iss": "private-iss", "sub": "private-sub", "extra": "kept"}
	tok, err := g.GenerateToken(context.Background(), &jwt.Claims{Issuer: "claims-iss", Subject: "claims-sub"}, private)
	if err != nil {
		t.Fatal(err)
	}
	p := decodeSegment(t, tok, 1)
	if p["iss"] != "https://real-issuer" {
		t.Errorf("iss = %v, want the generator's issuer", p["iss"])
	}
	if p["sub"] != "claims-sub" {
		t.Errorf("sub = %v, want registered claim to beat private claim", p["sub"])
	}
	if p["extra"] != "kept" {
		t.Errorf("extra = %v, want private claim kept", p["extra"])
	}
}

func TestKeyIDDistinguishesKeys(t *testing.T) {
	rsa1, rsa2, ec1 := testKeys(t)
	ids := map[string]bool{}
	for _, k := range []crypto.PublicKey{rsa1.Public(), rsa2.Public(), ec1.Public()} {
		id := mustKeyID(t, k)
		if strings.ContainsAny(id, "+/=") {
			t.Errorf("key ID %q is not unpadded base64url", id)
		}
		if ids[id] {
			t.Errorf("duplicate key ID %q", id)
		}
		ids[id] = true
	}
	if again := mustKeyID(t, rsa1.Public()); !ids[again] {
		t.Errorf("key ID not stable: %q", again)
	}
	if _, err := KeyID("not a key"); err == nil {
		t.Error("KeyID of a non-key succeeded")
	}
}

func TestBoundClaims(t *testing.T) {
	sa, pod, secret, node := testSA(), testPod(), testSecret(), testNode()
	tests := []struct {
		name    string
		in      BoundToken
		wantErr string
		check   func(t *testing.T, pc *boundClaims)
	}{
		{
			name: "pod with node",
			in:   BoundToken{ServiceAccount: sa, Pod: pod, Node: node, Audiences: []string{"a"}, Expiration: 3600e9, Now: testNow},
			check: func(t *testing.T, pc *boundClaims) {
				if pc.Kubernetes.Pod == nil || pc.Kubernetes.Pod.UID != "pod-uid" || pc.Kubernetes.Node == nil || pc.Kubernetes.Node.Name != "node-a" {
					t.Errorf("pod/node refs = %+v / %+v", pc.Kubernetes.Pod, pc.Kubernetes.Node)
				}
			},
		},
		{
			name: "warnafter",
			in:   BoundToken{ServiceAccount: sa, Pod: pod, Expiration: 3600e9, WarnAfter: 60e9, Now: testNow},
			check: func(t *testing.T, pc *boundClaims) {
				if pc.Kubernetes.WarnAfter == nil || pc.Kubernetes.WarnAfter.Time().Unix() != testNow.Unix()+60 {
					t.Errorf("warnafter = %v", pc.Kubernetes.WarnAfter)
				}
			},
		},
		{name: "secret and pod", in: BoundToken{ServiceAccount: sa, Pod: pod, Secret: secret, Expiration: 1e9, Now: testNow}, wantErr: "cannot also be bound"},
		{name: "no service account", in: BoundToken{Expiration: 1e9, Now: testNow}, wantErr: "service account is required"},
		{name: "no expiration", in: BoundToken{ServiceAccount: sa, Now: testNow}, wantErr: "expiration must be positive"},
		{name: "no time", in: BoundToken{ServiceAccount: sa, Expiration: 1e9}, wantErr: "issue time is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc, pcAny, err := BoundClaims(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rc.Subject != "system:serviceaccount:ns1:builder" || rc.ID == "" {
				t.Errorf("sub=%q jti=%q", rc.Subject, rc.ID)
			}
			if got := rc.Expiry.Time().Sub(rc.IssuedAt.Time()); got != tc.in.Expiration {
				t.Errorf("lifetime = %s, want %s", got, tc.in.Expiration)
			}
			pc := pcAny.(*boundClaims)
			if pc.Kubernetes.Namespace != "ns1" || pc.Kubernetes.ServiceAccount != (objectRef{Name: "builder", UID: "sa-uid"}) {
				t.Errorf("kubernetes claims = %+v", pc.Kubernetes)
			}
			tc.check(t, pc)
		})
	}
}

func TestBoundTokenPayloadShape(t *testing.T) {
	_, _, ec1 := testKeys(t)
	g, err := NewTokenGenerator("https://issuer", ec1)
	if err != nil {
		t.Fatal(err)
	}
	rc, pc, err := BoundClaims(BoundToken{
		ServiceAccount: testSA(), Pod: testPod(), Node: testNode(),
		Audiences: []string{"aud1"}, Expiration: 3600e9, WarnAfter: 600e9, Now: testNow,
	})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := g.GenerateToken(context.Background(), rc, pc)
	if err != nil {
		t.Fatal(err)
	}
	p := decodeSegment(t, tok, 1)
	now := float64(testNow.Unix())
	want := map[string]any{
		"iss": "https://issuer",
		"sub": "system:serviceaccount:ns1:builder",
		"aud": []any{"aud1"},
		"iat": now, "nbf": now, "exp": now + 3600,
		"jti": rc.ID,
		"kubernetes.io": map[string]any{
			"namespace":      "ns1",
			"serviceaccount": map[string]any{"name": "builder", "uid": "sa-uid"},
			"pod":            map[string]any{"name": "web-0", "uid": "pod-uid"},
			"node":           map[string]any{"name": "node-a", "uid": "node-uid"},
			"warnafter":      now + 600,
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("payload = %#v\nwant %#v", p, want)
	}
}
