package authentication

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
)

// SelfSubjectReviewREST serves POST selfsubjectreviews: it answers with the
// user the request was authenticated as.
type SelfSubjectReviewREST struct {
	clock clock.PassiveClock
}

var (
	_ rest.Creater              = &SelfSubjectReviewREST{}
	_ rest.Scoper               = &SelfSubjectReviewREST{}
	_ rest.Storage              = &SelfSubjectReviewREST{}
	_ rest.SingularNameProvider = &SelfSubjectReviewREST{}
)

// NewSelfSubjectReviewREST returns the SelfSubjectReview storage. clk stamps
// metadata.creationTimestamp and defaults to the real clock when nil.
func NewSelfSubjectReviewREST(clk clock.PassiveClock) *SelfSubjectReviewREST {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &SelfSubjectReviewREST{clock: clk}
}

// New implements rest.Storage.
func (r *SelfSubjectReviewREST) New() runtime.Object { return &authenticationv1.SelfSubjectReview{} }

// Destroy implements rest.Storage; there is nothing to release.
func (r *SelfSubjectReviewREST) Destroy() {}

// NamespaceScoped implements rest.Scoper: SelfSubjectReview is cluster-scoped.
func (r *SelfSubjectReviewREST) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (r *SelfSubjectReviewREST) GetSingularName() string { return "selfsubjectreview" }

// Create implements rest.Creater.
func (r *SelfSubjectReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	if _, ok := obj.(*authenticationv1.SelfSubjectReview); !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectReview: %T", obj))
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	return &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(r.clock.Now())},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: userInfo(u)},
	}, nil
}
