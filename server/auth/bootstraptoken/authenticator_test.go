package bootstraptoken

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	tokenID     = "abcdef"
	tokenSecret = "0123456789abcdef"
	token       = tokenID + "." + tokenSecret
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func bootstrapSecret(mutate func(*corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + tokenID},
		Type:       "bootstrap.kubernetes.io/token",
		Data: map[string][]byte{
			"token-id":                       []byte(tokenID),
			"token-secret":                   []byte(tokenSecret),
			"usage-bootstrap-authentication": []byte("true"),
		},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func lister(t *testing.T, secrets ...*corev1.Secret) corev1listers.SecretLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range secrets {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return corev1listers.NewSecretLister(idx)
}

func TestAuthenticateToken(t *testing.T) {
	tests := []struct {
		name       string
		token      string
		secrets    []*corev1.Secret
		wantGroups []string // nil: expect (nil, false, nil)
	}{
		{
			name: "valid", token: token, secrets: []*corev1.Secret{bootstrapSecret(nil)},
			wantGroups: []string{"system:bootstrappers"},
		},
		{
			name: "valid with extra groups and future expiration", token: token,
			secrets: []*corev1.Secret{bootstrapSecret(func(s *corev1.Secret) {
				s.Data["auth-extra-groups"] = []byte("system:bootstrappers:k1s:default-node-token,system:bootstrappers:worker")
				s.Data["expiration"] = []byte(now.Add(time.Hour).Format(time.RFC3339))
			})},
			wantGroups: []string{"system:bootstrappers", "system:bootstrappers:k1s:default-node-token", "system:bootstrappers:worker"},
		},
		{name: "not a bootstrap token", token: "some.jwt.token", secrets: []*corev1.Secret{bootstrapSecret(nil)}},
		{name: "uppercase is not the token format", token: "ABCDEF.0123456789ABCDEF", secrets: []*corev1.Secret{bootstrapSecret(nil)}},
		{name: "no secret", token: token},
		{
			name: "secret in another namespace", token: token,
			secrets: []*corev1.Secret{bootstrapSecret(func(s *corev1.Secret) { s.Namespace = "default" })},
		},
		{name: "wrong secret part", token: tokenID + ".ffffffffffffffff", secrets: []*corev1.Secret{bootstrapSecret(nil)}},
		{
			name: "wrong type", token: token,
			secrets: []*corev1.Secret{bootstrapSecret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque })},
		},
		{
			name: "token-id mismatch", token: token,
			secrets: []*corev1.Secret{bootstrapSecret(func(s *corev1.Secret) { s.Data["token-id"] = []byte("zzzzzz") })},
		},
		{
			name: "expired", token: token,
			secrets: []*corev1.Secret{bootstrapSecret(func(s *corev1.Secret) {
				s.Data["expiration"] = []byte(now.Add(-time.Second).Format(time.RFC3339))
			})},
		},
		{
			name: "unparseable expiration", token: token,
			secrets: []*corev1.Secret{bootstrapSecret(func(s *corev1.Secret) { s.Data["expiration"] = []byte("tomorrow") })},
		},
		{
			name: "usage not authentication", token: token,
			secrets: []*corev1.Secret{bootstrapSecret(func(s *corev1.Secret) {
				delete(s.Data, "usage-bootstrap-authentication")
				s.Data["usage-bootstrap-signing"] = []byte("true")
			})},
		},
		{
			name: "usage false", token: token,
			secrets: []*corev1.Secret{bootstrapSecret(func(s *corev1.Secret) { s.Data["usage-bootstrap-authentication"] = []byte("false") })},
		},
		{
			name: "invalid extra group", token: token,
			secrets: []*corev1.Secret{bootstrapSecret(func(s *corev1.Secret) { s.Data["auth-extra-groups"] = []byte("system:masters") })},
		},
		{
			name: "being deleted", token: token,
			secrets: []*corev1.Secret{bootstrapSecret(func(s *corev1.Secret) {
				ts := metav1.NewTime(now)
				s.DeletionTimestamp = &ts
			})},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(lister(t, tc.secrets...), clocktesting.NewFakePassiveClock(now))
			resp, ok, err := a.AuthenticateToken(context.Background(), tc.token)
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.wantGroups == nil {
				if ok || resp != nil {
					t.Fatalf("authenticated as %v, want rejection", resp.User)
				}
				return
			}
			if !ok {
				t.Fatal("not authenticated")
			}
			if resp.User.GetName() != "system:bootstrap:"+tokenID {
				t.Errorf("user = %q", resp.User.GetName())
			}
			if !reflect.DeepEqual(resp.User.GetGroups(), tc.wantGroups) {
				t.Errorf("groups = %v, want %v", resp.User.GetGroups(), tc.wantGroups)
			}
		})
	}
}

// failingLister makes every Get fail with a non-NotFound error.
type failingLister struct{ corev1listers.SecretLister }

func (failingLister) Secrets(string) corev1listers.SecretNamespaceLister { return failingNSLister{} }

type failingNSLister struct{}

func (failingNSLister) List(labels.Selector) ([]*corev1.Secret, error) {
	return nil, errors.New("cache broken")
}
func (failingNSLister) Get(string) (*corev1.Secret, error) { return nil, errors.New("cache broken") }

func TestAuthenticateTokenListerError(t *testing.T) {
	a := New(failingLister{}, nil)
	_, ok, err := a.AuthenticateToken(context.Background(), token)
	if ok || err == nil || !strings.Contains(err.Error(), "cache broken") {
		t.Fatalf("got ok=%v err=%v, want lister error", ok, err)
	}
	if strings.Contains(err.Error(), tokenSecret) {
		t.Errorf("error leaks the token secret: %v", err)
	}
}
