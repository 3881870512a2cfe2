package authentication

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeTokenAuth answers one known token and records what it was asked.
type fakeTokenAuth struct {
	token    string
	user     user.Info
	tokenAud []string // audiences the token is valid for; nil = any
	err      error
	respAuds []string // when set, returned verbatim (to simulate a broken authenticator)

	gotAuds   authenticator.Audiences
	gotAudsOK bool
}

func (f *fakeTokenAuth) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	f.gotAuds, f.gotAudsOK = authenticator.AudiencesFrom(ctx)
	if f.err != nil {
		return nil, false, f.err
	}
	if token != f.token {
		return nil, false, nil
	}
	auds := f.gotAuds
	if f.tokenAud != nil {
		auds = authenticator.Audiences(f.tokenAud).Intersect(f.gotAuds)
		if len(auds) == 0 {
			return nil, false, errors.New("token audiences are invalid")
		}
	}
	if f.respAuds != nil {
		auds = f.respAuds
	}
	return &authenticator.Response{User: f.user, Audiences: auds}, true, nil
}

var alice = &user.DefaultInfo{
	Name:   "alice",
	UID:    "alice-uid",
	Groups: []string{"devs", "system:authenticated"},
	Extra:  map[string][]string{"scopes": {"a", "b"}},
}

func TestTokenReviewCreate(t *testing.T) {
	apiAuds := []string{"https://kubernetes.default.svc"}
	tests := []struct {
		name      string
		auth      *fakeTokenAuth
		nilAuth   bool
		ctx       context.Context
		review    *authenticationv1.TokenReview
		wantErr   func(error) bool
		wantAuds  []string // audiences the authenticator was asked for
		wantStats authenticationv1.TokenReviewStatus
	}{
		{
			name:     "authenticated with API audiences by default",
			auth:     &fakeTokenAuth{token: "good", user: alice},
			review:   &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good"}},
			wantAuds: apiAuds,
			wantStats: authenticationv1.TokenReviewStatus{
				Authenticated: true,
				User: authenticationv1.UserInfo{
					Username: "alice", UID: "alice-uid", Groups: []string{"devs", "system:authenticated"},
					Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a", "b"}},
				},
				Audiences: apiAuds,
			},
		},
		{
			name:     "requested audiences are passed through",
			auth:     &fakeTokenAuth{token: "good", user: &user.DefaultInfo{Name: "bob"}, tokenAud: []string{"vault"}},
			review:   &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good", Audiences: []string{"vault", "x"}}},
			wantAuds: []string{"vault", "x"},
			wantStats: authenticationv1.TokenReviewStatus{
				Authenticated: true, User: authenticationv1.UserInfo{Username: "bob"}, Audiences: []string{"vault"},
			},
		},
		{
			name:      "unknown token",
			auth:      &fakeTokenAuth{token: "good", user: alice},
			review:    &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "bad"}},
			wantAuds:  apiAuds,
			wantStats: authenticationv1.TokenReviewStatus{Error: "invalid bearer token"},
		},
		{
			name:      "authenticator error is reported in status",
			auth:      &fakeTokenAuth{err: errors.New("token has expired")},
			review:    &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "old"}},
			wantAuds:  apiAuds,
			wantStats: authenticationv1.TokenReviewStatus{Error: "token has expired"},
		},
		{
			name: "client supplied status is discarded",
			auth: &fakeTokenAuth{token: "good", user: alice},
			review: &authenticationv1.TokenReview{
				Spec:   authenticationv1.TokenReviewSpec{Token: "bad"},
				Status: authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "root"}},
			},
			wantAuds:  apiAuds,
			wantStats: authenticationv1.TokenReviewStatus{Error: "invalid bearer token"},
		},
		{
			name:      "nil authenticator",
			nilAuth:   true,
			review:    &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good"}},
			wantStats: authenticationv1.TokenReviewStatus{},
		},
		{
			name:    "authenticator answering for other audiences is an internal error",
			auth:    &fakeTokenAuth{token: "good", user: alice, respAuds: []string{"elsewhere"}},
			review:  &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good"}},
			wantErr: apierrors.IsInternalError,
		},
		{
			name:    "empty token",
			auth:    &fakeTokenAuth{token: "good", user: alice},
			review:  &authenticationv1.TokenReview{},
			wantErr: apierrors.IsBadRequest,
		},
		{
			name:    "namespace in request",
			auth:    &fakeTokenAuth{token: "good", user: alice},
			ctx:     genericapirequest.WithNamespace(context.Background(), "default"),
			review:  &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good"}},
			wantErr: apierrors.IsBadRequest,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var authn authenticator.Request
			if !tc.nilAuth {
				authn = bearertoken.New(tc.auth)
			}
			r := NewTokenReviewREST(authn, apiAuds)
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			out, err := r.Create(ctx, tc.review, nil, &metav1.CreateOptions{})
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("err = %v, not the expected kind", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*authenticationv1.TokenReview)
			if !reflect.DeepEqual(got.Status, tc.wantStats) {
				t.Errorf("status = %+v\nwant %+v", got.Status, tc.wantStats)
			}
			if tc.auth != nil && tc.wantAuds != nil {
				if !tc.auth.gotAudsOK || !reflect.DeepEqual([]string(tc.auth.gotAuds), tc.wantAuds) {
					t.Errorf("authenticator asked for audiences %v (set=%v), want %v", tc.auth.gotAuds, tc.auth.gotAudsOK, tc.wantAuds)
				}
			}
		})
	}
}

// requestRecorder is an authenticator.Request that keeps the request it saw.
type requestRecorder struct{ req *http.Request }

func (r *requestRecorder) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	r.req = req
	return nil, false, nil
}

func TestTokenReviewBuildsBearerOnlyRequest(t *testing.T) {
	rec := &requestRecorder{}
	r := NewTokenReviewREST(rec, nil)
	if _, err := r.Create(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "tok"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if rec.req == nil || rec.req.TLS != nil {
		t.Fatal("authenticator not called with a plain request")
	}
	if want := (http.Header{"Authorization": {"Bearer tok"}}); !reflect.DeepEqual(rec.req.Header, want) {
		t.Errorf("headers = %v, want %v", rec.req.Header, want)
	}
}

func TestTokenReviewCreateValidation(t *testing.T) {
	r := NewTokenReviewREST(bearertoken.New(&fakeTokenAuth{token: "good", user: alice}), nil)
	deny := func(context.Context, runtime.Object) error {
		return apierrors.NewForbidden(authenticationv1.Resource("tokenreviews"), "", errors.New("no"))
	}
	_, err := r.Create(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good"}}, deny, nil)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want the validation's Forbidden", err)
	}
}

func TestSelfSubjectReviewCreate(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		ctx     context.Context
		obj     runtime.Object
		want    authenticationv1.UserInfo
		wantErr func(error) bool
	}{
		{
			name: "user with extra",
			ctx:  genericapirequest.WithUser(context.Background(), alice),
			obj:  &authenticationv1.SelfSubjectReview{},
			want: authenticationv1.UserInfo{
				Username: "alice", UID: "alice-uid", Groups: []string{"devs", "system:authenticated"},
				Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a", "b"}},
			},
		},
		{
			name: "service account",
			ctx: genericapirequest.WithUser(context.Background(), &user.DefaultInfo{
				Name: "system:serviceaccount:ns:sa", Groups: []string{"system:serviceaccounts"},
			}),
			obj:  &authenticationv1.SelfSubjectReview{},
			want: authenticationv1.UserInfo{Username: "system:serviceaccount:ns:sa", Groups: []string{"system:serviceaccounts"}},
		},
		{name: "no user", ctx: context.Background(), obj: &authenticationv1.SelfSubjectReview{}, wantErr: apierrors.IsBadRequest},
		{name: "wrong type", ctx: genericapirequest.WithUser(context.Background(), alice), obj: &authenticationv1.TokenReview{}, wantErr: apierrors.IsBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewSelfSubjectReviewREST(clocktesting.NewFakePassiveClock(now))
			out, err := r.Create(tc.ctx, tc.obj, nil, nil)
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*authenticationv1.SelfSubjectReview)
			if !reflect.DeepEqual(got.Status.UserInfo, tc.want) {
				t.Errorf("userInfo = %+v, want %+v", got.Status.UserInfo, tc.want)
			}
			if !got.CreationTimestamp.Time.Equal(now) {
				t.Errorf("creationTimestamp = %v, want %v", got.CreationTimestamp, now)
			}
		})
	}
}

func TestStorageMetadata(t *testing.T) {
	tr := NewTokenReviewREST(nil, nil)
	ssr := NewSelfSubjectReviewREST(nil)
	if _, ok := tr.New().(*authenticationv1.TokenReview); !ok || tr.NamespaceScoped() || tr.GetSingularName() != "tokenreview" {
		t.Error("TokenReviewREST metadata wrong")
	}
	if _, ok := ssr.New().(*authenticationv1.SelfSubjectReview); !ok || ssr.NamespaceScoped() || ssr.GetSingularName() != "selfsubjectreview" {
		t.Error("SelfSubjectReviewREST metadata wrong")
	}
	if !strings.HasPrefix(errAudienceMismatch.Error(), "Internal error") {
		t.Errorf("audience mismatch error = %q", errAudienceMismatch.Error())
	}
}
