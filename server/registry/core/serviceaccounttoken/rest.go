package serviceaccounttoken

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/audit"
	saapi "k8s.io/apiserver/pkg/authentication/serviceaccount"
	tokenjwt "k8s.io/apiserver/pkg/authentication/token/jwt"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/server/auth/serviceaccount"
)

const (
	// DefaultExpirationSeconds is the lifetime of a token whose request
	// leaves spec.expirationSeconds unset.
	DefaultExpirationSeconds = 60 * 60
	// MinExpirationSeconds is the shortest lifetime a request may ask for.
	MinExpirationSeconds = 10 * 60
	// MaxRequestExpirationSeconds is the longest lifetime a request may ask
	// for before validation rejects it (the server may still shorten it to
	// Config.MaxExpiration).
	MaxRequestExpirationSeconds = 1 << 32
)

// Getter looks up the ServiceAccount and the objects a token may be bound to.
// A missing object must be reported as an apierrors NotFound error, which is
// passed to the client as is. serviceaccount.ServiceAccountTokenGetter
// satisfies it. It should read fresh data (not only an informer cache): a
// pod asks for its token right after it was created.
type Getter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// Config holds the issuing policy.
type Config struct {
	// APIAudiences are the apiserver's audiences, used when a request names
	// none, and deciding which tokens may get the extended expiration.
	// Default: none (such tokens then carry no "aud").
	APIAudiences []string
	// MaxExpiration caps token lifetimes; longer requests are shortened with
	// a warning. Default 0: no cap.
	MaxExpiration time.Duration
	// DisableExtendedExpiration turns off the transition aid for projected
	// volumes: by default a pod-bound token requested for exactly
	// serviceaccount.WarnOnlyExpirationSeconds with API audiences is signed
	// to live MaxExtendedExpiration, with a warnafter claim at the requested
	// lifetime (kube-apiserver's --service-account-extend-token-expiration).
	DisableExtendedExpiration bool
	// MaxExtendedExpiration is the real lifetime of such tokens. Default
	// serviceaccount.DefaultExtendedExpiration (one year).
	MaxExtendedExpiration time.Duration
}

// Validate reports configuration errors.
func (c Config) Validate() error {
	var errs []error
	if c.MaxExpiration < 0 {
		errs = append(errs, fmt.Errorf("service account token: max expiration must not be negative, got %s", c.MaxExpiration))
	} else if c.MaxExpiration > 0 && c.MaxExpiration < MinExpirationSeconds*time.Second {
		errs = append(errs, fmt.Errorf("service account token: max expiration %s is below the %ds minimum a request may ask for", c.MaxExpiration, MinExpirationSeconds))
	}
	if c.MaxExtendedExpiration < 0 {
		errs = append(errs, fmt.Errorf("service account token: max extended expiration must not be negative, got %s", c.MaxExtendedExpiration))
	}
	return errors.Join(errs...)
}

// REST is the serviceaccounts/token storage. Safe for concurrent use.
type REST struct {
	generator serviceaccount.TokenGenerator
	getter    Getter
	cfg       Config
	clock     clock.PassiveClock
}

var (
	_ rest.NamedCreater                   = &REST{}
	_ rest.Storage                        = &REST{}
	_ rest.GroupVersionKindProvider       = &REST{}
	_ rest.SubresourceObjectMetaPreserver = &REST{}
)

var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// NewREST returns the serviceaccounts/token storage. generator signs bound
// tokens with the cluster's service-account issuer; getter finds the service
// account and bound objects; clk stamps and times tokens (real clock when
// nil).
func NewREST(generator serviceaccount.TokenGenerator, getter Getter, cfg Config, clk clock.PassiveClock) (*REST, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if generator == nil || getter == nil {
		return nil, errors.New("service account token: generator and getter are required")
	}
	if cfg.MaxExtendedExpiration == 0 {
		cfg.MaxExtendedExpiration = serviceaccount.DefaultExtendedExpiration
	}
	cfg.APIAudiences = slices.Clone(cfg.APIAudiences)
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &REST{generator: generator, getter: getter, cfg: cfg, clock: clk}, nil
}

// New implements rest.Storage.
func (r *REST) New() runtime.Object { return &authenticationv1.TokenRequest{} }

// Destroy implements rest.Storage; there is nothing to release.
func (r *REST) Destroy() {}

// GroupVersionKind implements rest.GroupVersionKindProvider: the subresource
// of core/v1 serviceaccounts speaks authentication.k8s.io/v1 TokenRequest.
func (r *REST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind { return tokenRequestGVK }

// PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate implements
// rest.SubresourceObjectMetaPreserver, so metadata.uid of the request reaches
// Create and can be checked against the service account.
func (r *REST) PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate() bool { return true }

// getErr passes API status errors (NotFound...) through and turns anything
// else into an internal error.
func getErr(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewInternalError(err)
}

func invalid(name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(tokenRequestGVK.GroupKind(), name, errs)
}

// Create implements rest.NamedCreater: name is the service account's.
func (r *REST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", obj))
	}
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || namespace == "" {
		return nil, apierrors.NewBadRequest("namespace is required")
	}
	if req.Name != "" && req.Name != name {
		return nil, invalid(name, field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified"))
	}
	if req.Namespace != "" && req.Namespace != namespace {
		return nil, invalid(name, field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified"))
	}

	sa, err := r.getter.GetServiceAccount(ctx, namespace, name)
	if err != nil {
		return nil, getErr(err)
	}
	if req.UID != "" && req.UID != sa.UID {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: tokenRequestGVK.Group, Resource: tokenRequestGVK.Kind}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}

	// Defaults.
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = slices.Clone(r.cfg.APIAudiences)
	}
	if req.Spec.ExpirationSeconds == nil {
		exp := int64(DefaultExpirationSeconds)
		req.Spec.ExpirationSeconds = &exp
	}
	req.Name, req.Namespace, req.UID = sa.Name, sa.Namespace, sa.UID
	// Taken before signing so the reported expiry never exceeds the token's.
	now := r.clock.Now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}

	if errs := validateTokenRequest(req); len(errs) > 0 {
		return nil, invalid("", errs...)
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}

	binding, err := r.resolveBinding(ctx, name, namespace, req.Spec.BoundObjectRef)
	if err != nil {
		return nil, err
	}

	if maxSeconds := int64(r.cfg.MaxExpiration / time.Second); maxSeconds > 0 && *req.Spec.ExpirationSeconds > maxSeconds {
		warning.AddWarning(ctx, "", fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, maxSeconds))
		*req.Spec.ExpirationSeconds = maxSeconds
	}

	lifetime := time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	var warnAfter time.Duration
	if !r.cfg.DisableExtendedExpiration && binding.Pod != nil &&
		*req.Spec.ExpirationSeconds == serviceaccount.WarnOnlyExpirationSeconds && r.onlyAPIAudiences(req.Spec.Audiences) {
		warnAfter = lifetime
		lifetime = r.cfg.MaxExtendedExpiration
	}

	binding.ServiceAccount = sa
	binding.Audiences = req.Spec.Audiences
	binding.Expiration = lifetime
	binding.WarnAfter = warnAfter
	binding.Now = now
	claims, private, err := serviceaccount.BoundClaims(binding)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("build token claims: %w", err))
	}
	token, err := r.generator.GenerateToken(ctx, claims, private)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err))
	}
	if claims.ID != "" {
		audit.AddAuditAnnotation(ctx, saapi.IssuedCredentialIDAuditAnnotationKey, tokenjwt.CredentialIDForJTI(claims.ID))
	}
	klog.FromContext(ctx).V(4).Info("Issued service account token", "serviceAccount", klog.KObj(sa),
		"boundKind", boundKind(req.Spec.BoundObjectRef), "expirationSeconds", *req.Spec.ExpirationSeconds)

	out := req.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{
		Token:               token,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*out.Spec.ExpirationSeconds) * time.Second)),
	}
	return out, nil
}

func boundKind(ref *authenticationv1.BoundObjectReference) string {
	if ref == nil {
		return ""
	}
	return ref.Kind
}

// onlyAPIAudiences reports whether every audience is one of the API's.
func (r *REST) onlyAPIAudiences(auds []string) bool {
	for _, a := range auds {
		if !slices.Contains(r.cfg.APIAudiences, a) {
			return false
		}
	}
	return true
}

// resolveBinding fetches the object ref names and checks it may carry a
// token of service account saName.
func (r *REST) resolveBinding(ctx context.Context, saName, namespace string, ref *authenticationv1.BoundObjectReference) (serviceaccount.BoundToken, error) {
	var b serviceaccount.BoundToken
	if ref == nil {
		return b, nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var uid types.UID
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		pod, err := r.getter.GetPod(ctx, namespace, ref.Name)
		if err != nil {
			return b, getErr(err)
		}
		if pod.Spec.ServiceAccountName != saName {
			return b, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", saName))
		}
		uid = pod.UID
		b.Pod = pod
		if nodeName := pod.Spec.NodeName; nodeName != "" {
			node, err := r.getter.GetNode(ctx, nodeName)
			switch {
			case apierrors.IsNotFound(err):
				// Record the node's name even without its object, so the
				// token still tells where the pod was scheduled.
				klog.FromContext(ctx).V(4).Info("Node of pod not found while issuing token", "pod", klog.KObj(pod), "node", nodeName)
				b.Node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
			case err != nil:
				return b, apierrors.NewInternalError(fmt.Errorf("look up node %s of pod: %w", nodeName, err))
			default:
				b.Node = node
			}
		}
	case gvk.Group == "" && gvk.Kind == "Node":
		node, err := r.getter.GetNode(ctx, ref.Name)
		if err != nil {
			return b, getErr(err)
		}
		uid = node.UID
		b.Node = node
	case gvk.Group == "" && gvk.Kind == "Secret":
		secret, err := r.getter.GetSecret(ctx, namespace, ref.Name)
		if err != nil {
			return b, getErr(err)
		}
		uid = secret.UID
		b.Secret = secret
	default:
		return b, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	if ref.UID != "" && ref.UID != uid {
		return b, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return b, nil
}

// validateTokenRequest checks a defaulted TokenRequest.
func validateTokenRequest(req *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	exp := *req.Spec.ExpirationSeconds
	switch {
	case exp < MinExpirationSeconds:
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
	case exp > MaxRequestExpirationSeconds:
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
	}
	if len(req.Spec.Attestations) != 0 {
		errs = append(errs, field.Invalid(spec.Child("attestations"), req.Spec.Attestations, "attestations may only be specified with a webhook bound object reference"))
	}
	if ref := req.Spec.BoundObjectRef; ref != nil && ref.Name == "" {
		errs = append(errs, field.Required(spec.Child("boundObjectRef", "name"), ""))
	}
	return errs
}
