package authentication

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
)

// TokenReviewREST serves POST tokenreviews. Callers need the ordinary RBAC
// permission "create tokenreviews.authentication.k8s.io"; nothing more is
// checked here.
type TokenReviewREST struct {
	authenticator authenticator.Request
	apiAudiences  []string
}

var (
	_ rest.Creater              = &TokenReviewREST{}
	_ rest.Scoper               = &TokenReviewREST{}
	_ rest.Storage              = &TokenReviewREST{}
	_ rest.SingularNameProvider = &TokenReviewREST{}
)

// NewTokenReviewREST returns the TokenReview storage. authn is the
// apiserver's request authenticator (wrap a bare authenticator.Token with
// k8s.io/apiserver/pkg/authentication/request/bearertoken.New); it is shown a
// request carrying nothing but "Authorization: Bearer <spec.token>".
// apiAudiences are used when the review names no audiences. A nil authn
// answers every review with authenticated=false.
func NewTokenReviewREST(authn authenticator.Request, apiAudiences []string) *TokenReviewREST {
	return &TokenReviewREST{authenticator: authn, apiAudiences: apiAudiences}
}

// New implements rest.Storage.
func (r *TokenReviewREST) New() runtime.Object { return &authenticationv1.TokenReview{} }

// Destroy implements rest.Storage; there is nothing to release.
func (r *TokenReviewREST) Destroy() {}

// NamespaceScoped implements rest.Scoper: TokenReview is cluster-scoped.
func (r *TokenReviewREST) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (r *TokenReviewREST) GetSingularName() string { return "tokenreview" }

// errAudienceMismatch is returned when an authenticator claims success for
// audiences none of which was asked for: an authenticator bug, not a client
// error.
var errAudienceMismatch = apierrors.NewInternalError(errors.New("error validating audiences"))

// Create implements rest.Creater.
func (r *TokenReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authenticationv1.TokenReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenReview: %T", obj))
	}
	if ns := genericapirequest.NamespaceValue(ctx); ns != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is not allowed on this type: %v", ns))
	}
	if review.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}

	// Whatever status the client sent is not ours to echo back.
	review.Status = authenticationv1.TokenReviewStatus{}
	if r.authenticator == nil {
		return review, nil
	}

	auds := review.Spec.Audiences
	if len(auds) == 0 {
		auds = r.apiAudiences
	}
	req := &http.Request{Header: http.Header{}}
	req.Header.Set("Authorization", "Bearer "+review.Spec.Token)
	// Always set the audiences, even to none, so that audiences the caller's
	// own request was authenticated for cannot leak into this review.
	req = req.WithContext(authenticator.WithAudiences(ctx, auds))

	resp, authenticated, err := r.authenticator.AuthenticateRequest(req)
	review.Status.Authenticated = authenticated
	if err != nil {
		review.Status.Error = err.Error()
	}
	if len(auds) > 0 && resp != nil && len(authenticator.Audiences(auds).Intersect(resp.Audiences)) == 0 {
		klog.FromContext(ctx).Error(nil, "Authenticator returned audiences outside the requested ones", "requested", auds, "returned", resp.Audiences)
		return nil, errAudienceMismatch
	}
	if resp != nil && resp.User != nil {
		review.Status.User = userInfo(resp.User)
		review.Status.Audiences = resp.Audiences
	}
	return review, nil
}

// userInfo converts an authenticated user to the API form.
func userInfo(u user.Info) authenticationv1.UserInfo {
	out := authenticationv1.UserInfo{
		Username: u.GetName(),
		UID:      u.GetUID(),
		Groups:   u.GetGroups(),
	}
	if extra := u.GetExtra(); len(extra) > 0 {
		out.Extra = make(map[string]authenticationv1.ExtraValue, len(extra))
		for k, v := range extra {
			out.Extra[k] = authenticationv1.ExtraValue(v)
		}
	}
	return out
}
