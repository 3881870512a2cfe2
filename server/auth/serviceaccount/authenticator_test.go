package serviceaccount

import (
	"context"
	"crypto"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	clocktesting "k8s.io/utils/clock/testing"

	satesting "github.com/k1s/k1s/server/auth/serviceaccount/testing"
)

const (
	testIssuer = "https://kubernetes.default.svc.cluster.local"
	apiAud     = "https://kubernetes.default.svc.cluster.local"
)

// boundCase describes one bound-token authentication attempt.
type boundCase struct {
	name string
	// token construction
	signer    crypto.Signer // default rsa1
	issuer    string        // default testIssuer
	pod       bool
	secret    bool
	node      bool
	audiences []string // default {apiAud}
	lifetime  time.Duration
	// world
	objects func() []any
	// authentication
	advance     time.Duration // clock moved after issuing (negative for the past)
	requestAuds []string      // audiences in the request context
	// outcome
	wantOK     bool
	wantNil    bool // not ours: (nil, false, nil)
	wantErr    string
	wantExtra  map[string][]string
	wantRspAud []string
}

func defaultObjects() []any {
	return []any{testSA(), testPod(), testSecret(), testNode()}
}

func TestAuthenticateBoundTokens(t *testing.T) {
	rsa1, rsa2, ec1 := testKeys(t)
	tests := []boundCase{
		{
			name: "unbound token", wantOK: true, wantRspAud: []string{apiAud},
		},
		{
			name: "pod bound token carries pod and node extra", pod: true, node: true, wantOK: true,
			wantExtra: map[string][]string{
				"authentication.kubernetes.io/pod-name":  {"web-0"},
				"authentication.kubernetes.io/pod-uid":   {"pod-uid"},
				"authentication.kubernetes.io/node-name": {"node-a"},
				"authentication.kubernetes.io/node-uid":  {"node-uid"},
			},
		},
		{
			name: "pod bound token keeps working when its node is gone", pod: true, node: true, wantOK: true,
			objects: func() []any { return []any{testSA(), testPod()} },
		},
		{name: "secret bound token", secret: true, wantOK: true},
		{
			name: "node bound token", node: true, wantOK: true,
			wantExtra: map[string][]string{
				"authentication.kubernetes.io/node-name": {"node-a"},
				"authentication.kubernetes.io/node-uid":  {"node-uid"},
			},
		},
		{name: "ES256 token", signer: ec1, wantOK: true},
		{name: "second configured key verifies", signer: rsa2, wantOK: true},
		{name: "expired", advance: time.Hour + 2*time.Minute, wantErr: "service account token has expired"},
		{name: "expiry within leeway accepted", advance: time.Hour + 30*time.Second, wantOK: true},
		{name: "issued in the future", advance: -5 * time.Minute, wantErr: "not valid yet"},
		{name: "wrong audience", audiences: []string{"vault"}, wantErr: "token audiences"},
		{
			name: "requested audience matches token", audiences: []string{"vault"}, requestAuds: []string{"vault", "other"},
			wantOK: true, wantRspAud: []string{"vault"},
		},
		{name: "requested audience not in token", requestAuds: []string{"vault"}, wantErr: "token audiences"},
		{name: "unknown issuer is not ours", issuer: "https://elsewhere", wantNil: true},
		{name: "untrusted key", signer: mustNewRSA(t), wantErr: "no public key matches"},
		{
			name:    "service account deleted",
			objects: func() []any { return []any{testPod()} },
			wantErr: `serviceaccounts "builder" not found`,
		},
		{
			name:    "service account recreated with new UID",
			objects: func() []any { return []any{withUID(testSA(), "other-uid")} },
			wantErr: "service account UID (other-uid) does not match claim (sa-uid)",
		},
		{
			name: "service account being deleted long ago",
			objects: func() []any {
				sa := testSA()
				sa.DeletionTimestamp = deletedAt(testNow.Add(-10 * time.Minute))
				return []any{sa}
			},
			wantErr: "has been deleted",
		},
		{
			name: "pod deleted", pod: true,
			objects: func() []any { return []any{testSA()} },
			wantErr: "service account token has been invalidated",
		},
		{
			name: "pod recreated", pod: true,
			objects: func() []any { return []any{testSA(), withUID(testPod(), "pod-uid-2")} },
			wantErr: "pod UID (pod-uid-2) does not match",
		},
		{
			name: "pod deletion timestamp passed", pod: true,
			objects: func() []any {
				p := testPod()
				p.DeletionTimestamp = deletedAt(testNow.Add(-2 * time.Minute))
				return []any{testSA(), p}
			},
			wantErr: "service account token has been invalidated",
		},
		{
			name: "pod in graceful termination still valid", pod: true, wantOK: true,
			objects: func() []any {
				p := testPod()
				p.DeletionTimestamp = deletedAt(testNow.Add(30 * time.Second))
				return []any{testSA(), p}
			},
		},
		{
			name: "secret deleted", secret: true,
			objects: func() []any { return []any{testSA()} },
			wantErr: "service account token has been invalidated",
		},
		{
			name: "secret recreated", secret: true,
			objects: func() []any { return []any{testSA(), withUID(testSecret(), "s2")} },
			wantErr: "secret UID (s2) does not match",
		},
		{
			name: "node deleted", node: true,
			objects: func() []any { return []any{testSA()} },
			wantErr: "service account token has been invalidated",
		},
		{
			name: "node recreated", node: true,
			objects: func() []any { return []any{testSA(), withUID(testNode(), "n2")} },
			wantErr: "node UID (n2) does not match",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			signer := tc.signer
			if signer == nil {
				signer = rsa1
			}
			issuer := tc.issuer
			if issuer == "" {
				issuer = testIssuer
			}
			auds := tc.audiences
			if auds == nil {
				auds = []string{apiAud}
			}
			lifetime := tc.lifetime
			if lifetime == 0 {
				lifetime = time.Hour
			}
			spec := BoundToken{ServiceAccount: testSA(), Audiences: auds, Expiration: lifetime, Now: testNow}
			if tc.pod {
				spec.Pod = testPod()
			}
			if tc.secret {
				spec.Secret = testSecret()
			}
			if tc.node {
				spec.Node = testNode()
			}
			rc, pc, err := BoundClaims(spec)
			if err != nil {
				t.Fatal(err)
			}
			gen, err := NewTokenGenerator(issuer, signer)
			if err != nil {
				t.Fatal(err)
			}
			token, err := gen.GenerateToken(context.Background(), rc, pc)
			if err != nil {
				t.Fatal(err)
			}

			objs := defaultObjects()
			if tc.objects != nil {
				objs = tc.objects()
			}
			clk := clocktesting.NewFakePassiveClock(testNow.Add(tc.advance))
			a, err := NewAuthenticator(AuthenticatorConfig{
				Issuers:      []string{"https://old-issuer", testIssuer},
				APIAudiences: []string{apiAud},
				PublicKeys:   []crypto.PublicKey{rsa1.Public(), rsa2, ec1.Public()},
			}, satesting.NewGetter(objs...), clk)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.requestAuds != nil {
				ctx = authenticator.WithAudiences(ctx, tc.requestAuds)
			}
			resp, ok, err := a.AuthenticateToken(ctx, token)

			switch {
			case tc.wantNil:
				if resp != nil || ok || err != nil {
					t.Fatalf("got (%v, %v, %v), want (nil, false, nil)", resp, ok, err)
				}
				return
			case tc.wantErr != "":
				if ok || resp != nil {
					t.Errorf("authenticated, want rejection")
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !ok {
				t.Fatalf("got (%v, %v), want success", ok, err)
			}
			u := resp.User
			if u.GetName() != "system:serviceaccount:ns1:builder" || u.GetUID() != "sa-uid" {
				t.Errorf("user = %q uid %q", u.GetName(), u.GetUID())
			}
			if want := []string{"system:serviceaccounts", "system:serviceaccounts:ns1"}; !reflect.DeepEqual(u.GetGroups(), want) {
				t.Errorf("groups = %v, want %v", u.GetGroups(), want)
			}
			extra := u.GetExtra()
			if cid := extra["authentication.kubernetes.io/credential-id"]; len(cid) != 1 || !strings.HasPrefix(cid[0], "JTI=") || cid[0] != "JTI="+rc.ID {
				t.Errorf("credential-id = %v, want JTI=%s", cid, rc.ID)
			}
			for k, v := range tc.wantExtra {
				if !reflect.DeepEqual(extra[k], v) {
					t.Errorf("extra[%s] = %v, want %v", k, extra[k], v)
				}
			}
			if tc.wantRspAud != nil && !reflect.DeepEqual([]string(resp.Audiences), tc.wantRspAud) {
				t.Errorf("audiences = %v, want %v", resp.Audiences, tc.wantRspAud)
			}
		})
	}
}

func mustNewRSA(t *testing.T) crypto.Signer {
	t.Helper()
	// A third key, trusted by nobody; reuse the package helper's generator.
	k, _, _ := testKeys(t)
	other, err := generateRSA()
	if err != nil {
		t.Fatal(err)
	}
	if other.Equal(k) {
		t.Fatal("generated a duplicate key")
	}
	return other
}

// legacyCase is one legacy-token authentication attempt.
type legacyCase struct {
	name        string
	objects     func(token string) []any
	disable     bool
	requestAuds []string
	wantNil     bool
	wantErr     string
}

func legacySecret(token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "builder-token-abc", UID: "legacy-secret-uid"},
		Type:       corev1.SecretTypeServiceAccountToken,
		Data:       map[string][]byte{corev1.ServiceAccountTokenKey: []byte(token)},
	}
}

func TestAuthenticateLegacyTokens(t *testing.T) {
	rsa1, _, _ := testKeys(t)
	gen, err := NewTokenGenerator(LegacyIssuer, rsa1)
	if err != nil {
		t.Fatal(err)
	}
	rc, pc := LegacyClaims(testSA(), legacySecret(""))
	token, err := gen.GenerateToken(context.Background(), rc, pc)
	if err != nil {
		t.Fatal(err)
	}
	payload := decodeSegment(t, token, 1)
	wantPayload := map[string]any{
		"iss":                                    "kubernetes/serviceaccount",
		"sub":                                    "system:serviceaccount:ns1:builder",
		"kubernetes.io/serviceaccount/namespace": "ns1",
		"kubernetes.io/serviceaccount/secret.name":          "builder-token-abc",
		"kubernetes.io/serviceaccount/service-account.name": "builder",
		"kubernetes.io/serviceaccount/service-account.uid":  "sa-uid",
	}
	if !reflect.DeepEqual(payload, wantPayload) {
		t.Fatalf("legacy payload = %v, want %v", payload, wantPayload)
	}

	tests := []legacyCase{
		{name: "valid"},
		{name: "valid for API audiences asked explicitly", requestAuds: []string{apiAud}},
		{name: "not valid for another audience", requestAuds: []string{"vault"}, wantErr: "token audiences"},
		{name: "legacy disabled", disable: true, wantNil: true},
		{
			name:    "secret deleted",
			objects: func(string) []any { return []any{testSA()} },
			wantErr: "service account token has been invalidated",
		},
		{
			name: "secret being deleted",
			objects: func(tok string) []any {
				s := legacySecret(tok)
				s.DeletionTimestamp = deletedAt(testNow)
				return []any{testSA(), s}
			},
			wantErr: "service account token has been invalidated",
		},
		{
			name:    "secret holds another token",
			objects: func(string) []any { return []any{testSA(), legacySecret("something-else")} },
			wantErr: "does not match the one stored",
		},
		{
			name: "secret marked invalid",
			objects: func(tok string) []any {
				s := legacySecret(tok)
				s.Labels = map[string]string{InvalidSinceLabelKey: "2026-01-01"}
				return []any{testSA(), s}
			},
			wantErr: "marked invalid",
		},
		{
			name:    "service account gone",
			objects: func(tok string) []any { return []any{legacySecret(tok)} },
			wantErr: "not found",
		},
		{
			name:    "service account recreated",
			objects: func(tok string) []any { return []any{withUID(testSA(), "x"), legacySecret(tok)} },
			wantErr: "service account UID (x) does not match claim (sa-uid)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := []any{testSA(), legacySecret(token)}
			if tc.objects != nil {
				objs = tc.objects(token)
			}
			cfg := AuthenticatorConfig{
				Issuers:             []string{testIssuer},
				APIAudiences:        []string{apiAud},
				PublicKeys:          []crypto.PublicKey{rsa1.Public()},
				DisableLegacyTokens: tc.disable,
			}
			a, err := NewAuthenticator(cfg, satesting.NewGetter(objs...), clocktesting.NewFakePassiveClock(testNow))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.requestAuds != nil {
				ctx = authenticator.WithAudiences(ctx, tc.requestAuds)
			}
			resp, ok, err := a.AuthenticateToken(ctx, token)
			switch {
			case tc.wantNil:
				if resp != nil || ok || err != nil {
					t.Fatalf("got (%v, %v, %v), want (nil, false, nil)", resp, ok, err)
				}
			case tc.wantErr != "":
				if ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got ok=%v err=%v, want error containing %q", ok, err, tc.wantErr)
				}
			default:
				if err != nil || !ok {
					t.Fatalf("got (%v, %v), want success", ok, err)
				}
				if resp.User.GetName() != "system:serviceaccount:ns1:builder" || resp.User.GetUID() != "sa-uid" {
					t.Errorf("user = %q/%q", resp.User.GetName(), resp.User.GetUID())
				}
				if len(resp.User.GetExtra()) != 0 {
					t.Errorf("legacy token user has extra %v, want none", resp.User.GetExtra())
				}
				if !reflect.DeepEqual([]string(resp.Audiences), []string{apiAud}) {
					t.Errorf("audiences = %v", resp.Audiences)
				}
			}
		})
	}
}

func TestAuthenticateNotAJWT(t *testing.T) {
	rsa1, _, _ := testKeys(t)
	a, err := NewAuthenticator(AuthenticatorConfig{Issuers: []string{testIssuer}, PublicKeys: []crypto.PublicKey{rsa1}},
		satesting.NewGetter(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"", "abcdef.0123456789abcdef", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMuY2x1c3Rlci5sb2NhbCJ9.!!"} {
		resp, ok, err := a.AuthenticateToken(context.Background(), tok)
		if resp != nil || ok || err != nil {
			t.Errorf("token %q: got (%v, %v, %v), want (nil, false, nil)", tok, resp, ok, err)
		}
	}
}

func TestAuthenticatorGetterErrorsSurface(t *testing.T) {
	rsa1, _, _ := testKeys(t)
	getter := satesting.NewGetter(testSA())
	getter.SetError(errors.New("etcd unavailable"))
	a, err := NewAuthenticator(AuthenticatorConfig{Issuers: []string{testIssuer}, PublicKeys: []crypto.PublicKey{rsa1}}, getter,
		clocktesting.NewFakePassiveClock(testNow))
	if err != nil {
		t.Fatal(err)
	}
	gen, _ := NewTokenGenerator(testIssuer, rsa1)
	rc, pc, _ := BoundClaims(BoundToken{ServiceAccount: testSA(), Expiration: time.Hour, Now: testNow})
	tok, _ := gen.GenerateToken(context.Background(), rc, pc)
	_, ok, err := a.AuthenticateToken(context.Background(), tok)
	if ok || err == nil || !strings.Contains(err.Error(), "etcd unavailable") {
		t.Fatalf("got ok=%v err=%v, want the getter's error", ok, err)
	}
}

func TestAuthenticatorConfigValidate(t *testing.T) {
	rsa1, _, _ := testKeys(t)
	keys := []crypto.PublicKey{rsa1.Public()}
	tests := []struct {
		name    string
		cfg     AuthenticatorConfig
		wantErr string
	}{
		{name: "ok", cfg: AuthenticatorConfig{Issuers: []string{testIssuer}, PublicKeys: keys}},
		{name: "legacy only", cfg: AuthenticatorConfig{PublicKeys: keys}},
		{name: "no keys", cfg: AuthenticatorConfig{Issuers: []string{testIssuer}}, wantErr: "at least one public key"},
		{name: "nothing accepted", cfg: AuthenticatorConfig{PublicKeys: keys, DisableLegacyTokens: true}, wantErr: "nothing could authenticate"},
		{name: "empty issuer", cfg: AuthenticatorConfig{Issuers: []string{""}, PublicKeys: keys}, wantErr: "issuers[0] is empty"},
		{name: "legacy issuer as bound", cfg: AuthenticatorConfig{Issuers: []string{LegacyIssuer}, PublicKeys: keys}, wantErr: "may not be the legacy issuer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
			}
		})
	}
	if _, err := NewAuthenticator(AuthenticatorConfig{PublicKeys: keys}, nil, nil); err == nil {
		t.Error("NewAuthenticator without getter succeeded")
	}
}
