package bootstraptoken

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"
)

var expires = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

func TestToSecret(t *testing.T) {
	tests := []struct {
		name     string
		token    Token
		wantData map[string]string
		wantErr  []string
	}{
		{
			name: "every field",
			token: Token{ID: "abcdef", Secret: "0123456789abcdef", Description: "for node 2",
				Expires: expires.In(time.FixedZone("CET", 3600)), Usages: DefaultUsages(), Groups: []string{DefaultGroup, "system:bootstrappers:edge"}},
			wantData: map[string]string{
				"token-id": "abcdef", "token-secret": "0123456789abcdef", "description": "for node 2",
				"expiration":              "2026-03-02T12:00:00Z",
				"usage-bootstrap-signing": "true", "usage-bootstrap-authentication": "true",
				"auth-extra-groups": DefaultGroup + ",system:bootstrappers:edge",
			},
		},
		{
			name:  "never expires, no description, no groups",
			token: Token{ID: "abcdef", Secret: "0123456789abcdef", Usages: []string{UsageAuthentication}},
			wantData: map[string]string{
				"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true",
			},
		},
		{name: "bad id", token: Token{ID: "ABCDEF", Secret: "0123456789abcdef", Usages: DefaultUsages()}, wantErr: []string{"token: not a bootstrap token"}},
		{name: "short secret", token: Token{ID: "abcdef", Secret: "0123", Usages: DefaultUsages()}, wantErr: []string{"token: not a bootstrap token"}},
		{name: "no usage", token: Token{ID: "abcdef", Secret: "0123456789abcdef"}, wantErr: []string{"usages: at least one usage"}},
		{name: "unknown usage", token: Token{ID: "abcdef", Secret: "0123456789abcdef", Usages: []string{"authentication", "admin"}}, wantErr: []string{"usages: invalid bootstrap token usage string: admin"}},
		{
			name:    "group outside system:bootstrappers",
			token:   Token{ID: "abcdef", Secret: "0123456789abcdef", Usages: DefaultUsages(), Groups: []string{"system:masters"}},
			wantErr: []string{`groups: bootstrap group "system:masters" is invalid`},
		},
		{
			name:    "groups without authentication",
			token:   Token{ID: "abcdef", Secret: "0123456789abcdef", Usages: []string{UsageSigning}, Groups: []string{DefaultGroup}},
			wantErr: []string{`groups: extra groups need the "authentication" usage`},
		},
		{
			name:    "several errors at once",
			token:   Token{ID: "abcdef", Secret: "x", Usages: []string{"root"}},
			wantErr: []string{"token:", "usages:"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ToSecret(tc.token)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				if strings.Contains(err.Error(), tc.token.Secret) && len(tc.token.Secret) > 4 {
					t.Errorf("error %q repeats the secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != "bootstrap-token-abcdef" || s.Namespace != "kube-system" || s.Type != "bootstrap.kubernetes.io/token" {
				t.Errorf("secret %s/%s type %q", s.Namespace, s.Name, s.Type)
			}
			got := map[string]string{}
			for k, v := range s.Data {
				got[k] = string(v)
			}
			if !reflect.DeepEqual(got, tc.wantData) {
				t.Errorf("data = %v\nwant %v", got, tc.wantData)
			}
			// What the apiserver's authenticator and the cleaner read.
			if bootstrapsecrets.HasExpired(s, expires.Add(-time.Second)) {
				t.Errorf("expired a second before its expiry")
			}
			if want := !tc.token.Expires.IsZero(); bootstrapsecrets.HasExpired(s, expires) != want {
				t.Errorf("expired at %v: %v, want %v", expires, !want, want)
			}
			back, err := FromSecret(s)
			if err != nil {
				t.Fatalf("FromSecret: %v", err)
			}
			want := tc.token
			want.Expires = want.Expires.UTC()
			if !back.Expires.Equal(want.Expires) {
				t.Errorf("expires %v, want %v", back.Expires, want.Expires)
			}
			back.Expires, want.Expires = time.Time{}, time.Time{}
			// Usages come back sorted, as kubeadm lists them.
			want.Usages = sortedUsages(want.Usages)
			if !reflect.DeepEqual(back, want) {
				t.Errorf("round trip = %+v\nwant %+v", back, want)
			}
		})
	}
}

func sortedUsages(u []string) []string {
	var out []string
	for _, k := range []string{UsageAuthentication, UsageSigning} {
		for _, x := range u {
			if x == k {
				out = append(out, k)
			}
		}
	}
	return out
}

func TestFromSecret(t *testing.T) {
	secret := func(mutate func(*corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-abcdef"},
			Type:       bootstrapapi.SecretTypeBootstrapToken,
			Data: map[string][]byte{
				"token-id": []byte("abcdef"), "token-secret": []byte("0123456789abcdef"),
				"usage-bootstrap-authentication": []byte("true"), "usage-bootstrap-signing": []byte("false"),
				"expiration": []byte("2026-03-02T13:00:00+01:00"),
			},
		}
		if mutate != nil {
			mutate(s)
		}
		return s
	}
	tests := []struct {
		name    string
		secret  *corev1.Secret
		want    Token
		wantErr string
	}{
		{
			name:   "usages set to false are not usages; any zone",
			secret: secret(nil),
			want:   Token{ID: "abcdef", Secret: "0123456789abcdef", Usages: []string{"authentication"}, Expires: expires},
		},
		{name: "opaque", secret: secret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), wantErr: "has type"},
		{name: "name and id differ", secret: secret(func(s *corev1.Secret) { s.Name = "bootstrap-token-zzzzzz" }), wantErr: "name does not match"},
		{name: "not a bootstrap name", secret: secret(func(s *corev1.Secret) { s.Name = "my-token" }), wantErr: "name does not match"},
		{name: "bad secret", secret: secret(func(s *corev1.Secret) { s.Data["token-secret"] = []byte("short") }), wantErr: "not a bootstrap token"},
		{name: "bad expiration", secret: secret(func(s *corev1.Secret) { s.Data["expiration"] = []byte("tomorrow") }), wantErr: `expiration "tomorrow"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromSecret(tc.secret)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "0123456789abcdef") {
					t.Errorf("error %q repeats the secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Expires.Equal(tc.want.Expires) {
				t.Errorf("expires %v, want %v", got.Expires, tc.want.Expires)
			}
			got.Expires, tc.want.Expires = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestGenerateAndSplit(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		tok, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		id, secret, err := Split(tok)
		if err != nil || len(id) != 6 || len(secret) != 16 {
			t.Fatalf("Generate() = %q: split %q %q %v", tok, id, secret, err)
		}
		if seen[tok] {
			t.Fatalf("Generate() repeated %q", tok)
		}
		seen[tok] = true
	}
	for _, bad := range []string{"", "abcdef", "abcdef.0123456789abcdeF", "abcdef:0123456789abcdef", "K10abc::abcdef.0123456789abcdef"} {
		if _, _, err := Split(bad); err == nil {
			t.Errorf("Split(%q) accepted", bad)
		}
	}
}

func TestExpired(t *testing.T) {
	for _, tc := range []struct {
		expires time.Time
		now     time.Time
		want    bool
	}{
		{time.Time{}, expires, false},
		{expires, expires.Add(-time.Second), false},
		{expires, expires, true},
		{expires, expires.Add(time.Hour), true},
	} {
		if got := (Token{Expires: tc.expires}).Expired(tc.now); got != tc.want {
			t.Errorf("expires %v at %v: Expired = %v, want %v", tc.expires, tc.now, got, tc.want)
		}
	}
}
