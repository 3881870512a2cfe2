package authorization

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// reviewStorage is what every storage here implements.
type reviewStorage interface {
	rest.Creater
	rest.Scoper
	rest.Storage
	rest.SingularNameProvider
}

var (
	_ reviewStorage = &SubjectAccessReviewREST{}
	_ reviewStorage = &SelfSubjectAccessReviewREST{}
	_ reviewStorage = &LocalSubjectAccessReviewREST{}
	_ reviewStorage = &SelfSubjectRulesReviewREST{}
)

func groupKind(kind string) schema.GroupKind {
	return schema.GroupKind{Group: authorizationv1.GroupName, Kind: kind}
}

func runCreateValidation(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc) error {
	if createValidation == nil {
		return nil
	}
	return createValidation(ctx, obj.DeepCopyObject())
}

// SubjectAccessReviewREST serves POST subjectaccessreviews: may the user in
// the spec perform the action in the spec.
type SubjectAccessReviewREST struct {
	authorizer authorizer.UnconditionalAuthorizer
}

// NewSubjectAccessReviewREST returns the SubjectAccessReview storage, asking
// authz (normally the apiserver's whole authorizer chain).
func NewSubjectAccessReviewREST(authz authorizer.UnconditionalAuthorizer) *SubjectAccessReviewREST {
	return &SubjectAccessReviewREST{authorizer: authz}
}

// New implements rest.Storage.
func (r *SubjectAccessReviewREST) New() runtime.Object { return &authorizationv1.SubjectAccessReview{} }

// Destroy implements rest.Storage; there is nothing to release.
func (r *SubjectAccessReviewREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (r *SubjectAccessReviewREST) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (r *SubjectAccessReviewREST) GetSingularName() string { return "subjectaccessreview" }

// Create implements rest.Creater.
func (r *SubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	sar, ok := obj.(*authorizationv1.SubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SubjectAccessReview: %T", obj))
	}
	if errs := ValidateSubjectAccessReview(sar); len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind("SubjectAccessReview"), "", errs)
	}
	if err := runCreateValidation(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	attrs := specAttributes(&sar.Spec)
	decision, reason, err := r.authorizer.Authorize(ctx, attrs)
	sar.Status = status(decision, reason, err, attrs)
	return sar, nil
}

// SelfSubjectAccessReviewREST serves POST selfsubjectaccessreviews: may the
// requesting user perform the action in the spec.
type SelfSubjectAccessReviewREST struct {
	authorizer authorizer.UnconditionalAuthorizer
}

// NewSelfSubjectAccessReviewREST returns the SelfSubjectAccessReview storage.
func NewSelfSubjectAccessReviewREST(authz authorizer.UnconditionalAuthorizer) *SelfSubjectAccessReviewREST {
	return &SelfSubjectAccessReviewREST{authorizer: authz}
}

// New implements rest.Storage.
func (r *SelfSubjectAccessReviewREST) New() runtime.Object {
	return &authorizationv1.SelfSubjectAccessReview{}
}

// Destroy implements rest.Storage; there is nothing to release.
func (r *SelfSubjectAccessReviewREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (r *SelfSubjectAccessReviewREST) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (r *SelfSubjectAccessReviewREST) GetSingularName() string { return "selfsubjectaccessreview" }

// Create implements rest.Creater.
func (r *SelfSubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	ssar, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectAccessReview: %T", obj))
	}
	if errs := ValidateSelfSubjectAccessReview(ssar); len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind("SelfSubjectAccessReview"), "", errs)
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if err := runCreateValidation(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	var attrs authorizer.AttributesRecord
	if ssar.Spec.ResourceAttributes != nil {
		attrs = resourceAttributes(u, ssar.Spec.ResourceAttributes)
	} else {
		attrs = nonResourceAttributes(u, ssar.Spec.NonResourceAttributes)
	}
	decision, reason, err := r.authorizer.Authorize(ctx, attrs)
	ssar.Status = status(decision, reason, err, attrs)
	return ssar, nil
}

// LocalSubjectAccessReviewREST serves POST
// namespaces/NS/localsubjectaccessreviews: a SubjectAccessReview confined to
// NS, so namespace admins can be allowed to ask it.
type LocalSubjectAccessReviewREST struct {
	authorizer authorizer.UnconditionalAuthorizer
}

// NewLocalSubjectAccessReviewREST returns the LocalSubjectAccessReview storage.
func NewLocalSubjectAccessReviewREST(authz authorizer.UnconditionalAuthorizer) *LocalSubjectAccessReviewREST {
	return &LocalSubjectAccessReviewREST{authorizer: authz}
}

// New implements rest.Storage.
func (r *LocalSubjectAccessReviewREST) New() runtime.Object {
	return &authorizationv1.LocalSubjectAccessReview{}
}

// Destroy implements rest.Storage; there is nothing to release.
func (r *LocalSubjectAccessReviewREST) Destroy() {}

// NamespaceScoped implements rest.Scoper: LocalSubjectAccessReview is namespaced.
func (r *LocalSubjectAccessReviewREST) NamespaceScoped() bool { return true }

// GetSingularName implements rest.SingularNameProvider.
func (r *LocalSubjectAccessReviewREST) GetSingularName() string { return "localsubjectaccessreview" }

// Create implements rest.Creater.
func (r *LocalSubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	lsar, ok := obj.(*authorizationv1.LocalSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a LocalSubjectAccessReview: %T", obj))
	}
	if errs := ValidateLocalSubjectAccessReview(lsar); len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind("LocalSubjectAccessReview"), "", errs)
	}
	ns := genericapirequest.NamespaceValue(ctx)
	if ns == "" {
		return nil, apierrors.NewBadRequest("namespace is required on this type")
	}
	if ns != lsar.Namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", ns))
	}
	if err := runCreateValidation(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	attrs := specAttributes(&lsar.Spec)
	decision, reason, err := r.authorizer.Authorize(ctx, attrs)
	lsar.Status = status(decision, reason, err, attrs)
	return lsar, nil
}

// SelfSubjectRulesReviewREST serves POST selfsubjectrulesreviews: the rules
// the requesting user holds in spec.namespace.
type SelfSubjectRulesReviewREST struct {
	resolver authorizer.RuleResolver
}

// NewSelfSubjectRulesReviewREST returns the SelfSubjectRulesReview storage,
// listing rules through resolver (normally the apiserver's RBAC rule
// resolver, unioned with any other authorizer that can list rules).
func NewSelfSubjectRulesReviewREST(resolver authorizer.RuleResolver) *SelfSubjectRulesReviewREST {
	return &SelfSubjectRulesReviewREST{resolver: resolver}
}

// New implements rest.Storage.
func (r *SelfSubjectRulesReviewREST) New() runtime.Object {
	return &authorizationv1.SelfSubjectRulesReview{}
}

// Destroy implements rest.Storage; there is nothing to release.
func (r *SelfSubjectRulesReviewREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (r *SelfSubjectRulesReviewREST) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (r *SelfSubjectRulesReviewREST) GetSingularName() string { return "selfsubjectrulesreview" }

// Create implements rest.Creater.
func (r *SelfSubjectRulesReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	ssrr, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectRulesReview: %T", obj))
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	ns := ssrr.Spec.Namespace
	if ns == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	if err := runCreateValidation(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	resourceRules, nonResourceRules, incomplete, err := r.resolver.RulesFor(ctx, u, ns)
	out := &authorizationv1.SelfSubjectRulesReview{
		Spec: ssrr.Spec,
		Status: authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    make([]authorizationv1.ResourceRule, 0, len(resourceRules)),
			NonResourceRules: make([]authorizationv1.NonResourceRule, 0, len(nonResourceRules)),
			Incomplete:       incomplete,
		},
	}
	for _, rr := range resourceRules {
		out.Status.ResourceRules = append(out.Status.ResourceRules, authorizationv1.ResourceRule{
			Verbs:         rr.GetVerbs(),
			APIGroups:     rr.GetAPIGroups(),
			Resources:     rr.GetResources(),
			ResourceNames: rr.GetResourceNames(),
		})
	}
	for _, nr := range nonResourceRules {
		out.Status.NonResourceRules = append(out.Status.NonResourceRules, authorizationv1.NonResourceRule{
			Verbs:           nr.GetVerbs(),
			NonResourceURLs: nr.GetNonResourceURLs(),
		})
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}
