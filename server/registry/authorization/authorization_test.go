package authorization

import (
	"context"
	"errors"
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// fakeAuthorizer returns a fixed answer and records the attributes it saw.
type fakeAuthorizer struct {
	decision authorizer.Decision
	reason   string
	err      error
	got      *authorizer.AttributesRecord
}

func (f *fakeAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	rec := a.(authorizer.AttributesRecord)
	f.got = &rec
	return f.decision, f.reason, f.err
}

// invalidFields returns the field paths of an Invalid StatusError, or nil
// when err is not one.
func invalidFields(err error) []string {
	var se *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errors.As(err, &se) || se.ErrStatus.Details == nil {
		return nil
	}
	var out []string
	for _, c := range se.ErrStatus.Details.Causes {
		out = append(out, c.Field)
	}
	return out
}

var (
	podsGet = &authorizationv1.ResourceAttributes{Namespace: "ns1", Verb: "get", Group: "", Resource: "pods", Subresource: "log", Name: "web"}
	healthz = &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}
	me      = &user.DefaultInfo{Name: "me", UID: "me-uid", Groups: []string{"g1"}, Extra: map[string][]string{"k": {"v"}}}
)

func TestSubjectAccessReviewCreate(t *testing.T) {
	tests := []struct {
		name       string
		spec       authorizationv1.SubjectAccessReviewSpec
		meta       metav1.ObjectMeta
		authz      fakeAuthorizer
		wantFields []string // Invalid error with these field paths
		wantStatus authorizationv1.SubjectAccessReviewStatus
		wantAttrs  *authorizer.AttributesRecord
	}{
		{
			name: "allowed resource request",
			spec: authorizationv1.SubjectAccessReviewSpec{
				ResourceAttributes: podsGet, User: "alice", UID: "alice-uid", Groups: []string{"devs"},
				Extra: map[string]authorizationv1.ExtraValue{"scopes": {"s1"}},
			},
			authz:      fakeAuthorizer{decision: authorizer.DecisionAllow, reason: "RBAC: allowed by RoleBinding"},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "RBAC: allowed by RoleBinding"},
			wantAttrs: &authorizer.AttributesRecord{
				User:      &user.DefaultInfo{Name: "alice", UID: "alice-uid", Groups: []string{"devs"}, Extra: map[string][]string{"scopes": {"s1"}}},
				Verb:      "get",
				Namespace: "ns1", APIGroup: "", APIVersion: "*", Resource: "pods", Subresource: "log", Name: "web",
				ResourceRequest: true,
			},
		},
		{
			name:       "explicit deny",
			spec:       authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: podsGet, Groups: []string{"devs"}},
			authz:      fakeAuthorizer{decision: authorizer.DecisionDeny, reason: "node authorizer says no"},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "node authorizer says no"},
		},
		{
			name:       "no opinion with evaluation error",
			spec:       authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: podsGet, User: "alice"},
			authz:      fakeAuthorizer{decision: authorizer.DecisionNoOpinion, err: errors.New("role not found")},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{EvaluationError: "role not found"},
		},
		{
			name:       "non-resource request",
			spec:       authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: healthz, User: "alice"},
			authz:      fakeAuthorizer{decision: authorizer.DecisionAllow},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Allowed: true},
			wantAttrs:  &authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: "get", Path: "/healthz"},
		},
		{
			name:       "explicit version kept",
			spec:       authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Group: "apps", Version: "v1", Resource: "deployments"}, User: "u"},
			authz:      fakeAuthorizer{decision: authorizer.DecisionAllow},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Allowed: true},
			wantAttrs:  &authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "u"}, Verb: "list", APIGroup: "apps", APIVersion: "v1", Resource: "deployments", ResourceRequest: true},
		},
		{
			name:       "both attribute kinds",
			spec:       authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: podsGet, NonResourceAttributes: healthz, User: "alice"},
			wantFields: []string{"spec"},
		},
		{
			name:       "no attributes and no subject",
			spec:       authorizationv1.SubjectAccessReviewSpec{},
			wantFields: []string{"spec", "spec.user"},
		},
		{
			name:       "metadata set",
			spec:       authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: podsGet, User: "alice"},
			meta:       metav1.ObjectMeta{Name: "x"},
			wantFields: []string{"metadata"},
		},
		{
			name:       "managed fields alone are fine",
			spec:       authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: podsGet, User: "alice"},
			meta:       metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			authz:      fakeAuthorizer{decision: authorizer.DecisionAllow},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Allowed: true},
		},
		{
			name: "label selector with raw and requirements",
			spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "list", Resource: "pods",
				LabelSelector: &authorizationv1.LabelSelectorAttributes{
					RawSelector:  "a=b",
					Requirements: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpExists}},
				},
			}},
			wantFields: []string{"spec.resourceAttributes.labelSelector.rawSelector"},
		},
		{
			name: "empty field selector and bad label requirement",
			spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "list", Resource: "pods",
				FieldSelector: &authorizationv1.FieldSelectorAttributes{},
				LabelSelector: &authorizationv1.LabelSelectorAttributes{
					Requirements: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn}},
				},
			}},
			wantFields: []string{"spec.resourceAttributes.fieldSelector.requirements", "spec.resourceAttributes.labelSelector.requirements[0].values"},
		},
		{
			name: "raw selectors are parsed",
			spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "list", Resource: "pods",
				LabelSelector: &authorizationv1.LabelSelectorAttributes{RawSelector: "app=web"},
				FieldSelector: &authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=n1"},
			}},
			authz:      fakeAuthorizer{decision: authorizer.DecisionAllow},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Allowed: true},
			wantAttrs: &authorizer.AttributesRecord{
				User: &user.DefaultInfo{Name: "u"}, Verb: "list", APIVersion: "*", Resource: "pods", ResourceRequest: true,
				LabelSelectorRequirements: mustLabelReqs(t, "app", selection.Equals, "web"),
				FieldSelectorRequirements: fields.Requirements{{Field: "spec.nodeName", Operator: selection.Equals, Value: "n1"}},
			},
		},
		{
			name: "unparseable raw label selector is ignored and reported",
			spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "list", Resource: "pods",
				LabelSelector: &authorizationv1.LabelSelectorAttributes{RawSelector: "a in (b"},
			}},
			authz:      fakeAuthorizer{decision: authorizer.DecisionAllow},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Allowed: true, EvaluationError: "spec.resourceAttributes.labelSelector ignored due to parse error"},
		},
		{
			name: "unknown operators are partly ignored",
			spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "list", Resource: "pods",
				LabelSelector: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
					{Key: "a", Operator: metav1.LabelSelectorOpExists},
					{Key: "b", Operator: "Fancy", Values: []string{"x"}},
				}},
				FieldSelector: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
					{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpExists},
				}},
			}},
			authz: fakeAuthorizer{decision: authorizer.DecisionNoOpinion, err: errors.New("boom")},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{
				EvaluationError: "boom; spec.resourceAttributes.fieldSelector ignored due to parse error; spec.resourceAttributes.labelSelector partially ignored due to parse error",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			authz := tc.authz
			r := NewSubjectAccessReviewREST(&authz)
			out, err := r.Create(context.Background(), &authorizationv1.SubjectAccessReview{ObjectMeta: tc.meta, Spec: tc.spec}, nil, nil)
			if tc.wantFields != nil {
				if got := invalidFields(err); !reflect.DeepEqual(got, tc.wantFields) {
					t.Fatalf("invalid fields = %v (err %v), want %v", got, err, tc.wantFields)
				}
				if authz.got != nil {
					t.Error("authorizer consulted for an invalid review")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := out.(*authorizationv1.SubjectAccessReview).Status; !reflect.DeepEqual(got, tc.wantStatus) {
				t.Errorf("status = %+v, want %+v", got, tc.wantStatus)
			}
			if tc.wantAttrs != nil && !reflect.DeepEqual(authz.got, tc.wantAttrs) {
				t.Errorf("attributes = %+v\nwant %+v", authz.got, tc.wantAttrs)
			}
		})
	}
}

func mustLabelReqs(t *testing.T, key string, op selection.Operator, vals ...string) labels.Requirements {
	t.Helper()
	r, err := labels.NewRequirement(key, op, vals)
	if err != nil {
		t.Fatal(err)
	}
	return labels.Requirements{*r}
}

func TestSelfSubjectAccessReviewCreate(t *testing.T) {
	tests := []struct {
		name       string
		ctx        context.Context
		spec       authorizationv1.SelfSubjectAccessReviewSpec
		authz      fakeAuthorizer
		wantFields []string
		wantBadReq bool
		wantStatus authorizationv1.SubjectAccessReviewStatus
		wantAttrs  *authorizer.AttributesRecord
	}{
		{
			name:       "resource check as the requesting user",
			ctx:        genericapirequest.WithUser(context.Background(), me),
			spec:       authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns1", Verb: "create", Resource: "deployments", Group: "apps"}},
			authz:      fakeAuthorizer{decision: authorizer.DecisionAllow, reason: "ok"},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "ok"},
			wantAttrs: &authorizer.AttributesRecord{
				User: me, Verb: "create", Namespace: "ns1", APIGroup: "apps", APIVersion: "*", Resource: "deployments", ResourceRequest: true,
			},
		},
		{
			name:       "non-resource check",
			ctx:        genericapirequest.WithUser(context.Background(), me),
			spec:       authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: healthz},
			authz:      fakeAuthorizer{decision: authorizer.DecisionNoOpinion},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{},
			wantAttrs:  &authorizer.AttributesRecord{User: me, Verb: "get", Path: "/healthz"},
		},
		{
			name:       "neither attribute kind",
			ctx:        genericapirequest.WithUser(context.Background(), me),
			wantFields: []string{"spec"},
		},
		{
			name:       "no user",
			ctx:        context.Background(),
			spec:       authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: healthz},
			wantBadReq: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			authz := tc.authz
			r := NewSelfSubjectAccessReviewREST(&authz)
			out, err := r.Create(tc.ctx, &authorizationv1.SelfSubjectAccessReview{Spec: tc.spec}, nil, nil)
			switch {
			case tc.wantFields != nil:
				if got := invalidFields(err); !reflect.DeepEqual(got, tc.wantFields) {
					t.Fatalf("invalid fields = %v (err %v), want %v", got, err, tc.wantFields)
				}
				return
			case tc.wantBadReq:
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("err = %v, want BadRequest", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got := out.(*authorizationv1.SelfSubjectAccessReview).Status; !reflect.DeepEqual(got, tc.wantStatus) {
				t.Errorf("status = %+v, want %+v", got, tc.wantStatus)
			}
			if !reflect.DeepEqual(authz.got, tc.wantAttrs) {
				t.Errorf("attributes = %+v\nwant %+v", authz.got, tc.wantAttrs)
			}
		})
	}
}

func TestLocalSubjectAccessReviewCreate(t *testing.T) {
	inNS := func(ns string) *authorizationv1.ResourceAttributes {
		return &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets"}
	}
	tests := []struct {
		name       string
		reqNS      string
		objNS      string
		spec       authorizationv1.SubjectAccessReviewSpec
		wantFields []string
		wantBadReq bool
	}{
		{name: "matching namespaces", reqNS: "ns1", objNS: "ns1", spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: inNS("ns1"), User: "u"}},
		{
			name: "attributes for another namespace", reqNS: "ns1", objNS: "ns1",
			spec:       authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: inNS("kube-system"), User: "u"},
			wantFields: []string{"spec.resourceAttributes.namespace"},
		},
		{
			name: "non-resource attributes", reqNS: "ns1", objNS: "ns1",
			spec:       authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: healthz, User: "u"},
			wantFields: []string{"spec.nonResourceAttributes"},
		},
		{
			name: "no request namespace", reqNS: "", objNS: "",
			spec:       authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: inNS(""), User: "u"},
			wantBadReq: true,
		},
		{
			name: "object namespace differs from request", reqNS: "ns2", objNS: "ns1",
			spec:       authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: inNS("ns1"), User: "u"},
			wantBadReq: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			authz := fakeAuthorizer{decision: authorizer.DecisionAllow}
			r := NewLocalSubjectAccessReviewREST(&authz)
			ctx := genericapirequest.WithNamespace(context.Background(), tc.reqNS)
			obj := &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: tc.objNS}, Spec: tc.spec}
			out, err := r.Create(ctx, obj, nil, nil)
			switch {
			case tc.wantFields != nil:
				if got := invalidFields(err); !reflect.DeepEqual(got, tc.wantFields) {
					t.Fatalf("invalid fields = %v (err %v), want %v", got, err, tc.wantFields)
				}
				return
			case tc.wantBadReq:
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("err = %v, want BadRequest", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !out.(*authorizationv1.LocalSubjectAccessReview).Status.Allowed {
				t.Error("not allowed")
			}
			if authz.got == nil || authz.got.Namespace != tc.objNS || authz.got.User.GetName() != "u" {
				t.Errorf("attributes = %+v", authz.got)
			}
		})
	}
}

// fakeResolver returns fixed rules and records who asked about which namespace.
type fakeResolver struct {
	resource    []authorizer.ResourceRuleInfo
	nonResource []authorizer.NonResourceRuleInfo
	incomplete  bool
	err         error
	gotUser     user.Info
	gotNS       string
}

func (f *fakeResolver) RulesFor(_ context.Context, u user.Info, ns string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	f.gotUser, f.gotNS = u, ns
	return f.resource, f.nonResource, f.incomplete, f.err
}

func TestSelfSubjectRulesReviewCreate(t *testing.T) {
	tests := []struct {
		name       string
		ctx        context.Context
		ns         string
		resolver   fakeResolver
		wantBadReq bool
		want       authorizationv1.SubjectRulesReviewStatus
	}{
		{
			name: "rules converted",
			ctx:  genericapirequest.WithUser(context.Background(), me),
			ns:   "ns1",
			resolver: fakeResolver{
				resource: []authorizer.ResourceRuleInfo{
					&authorizer.DefaultResourceRuleInfo{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}},
					&authorizer.DefaultResourceRuleInfo{Verbs: []string{"update"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"web"}},
				},
				nonResource: []authorizer.NonResourceRuleInfo{
					&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/api/*"}},
				},
			},
			want: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules: []authorizationv1.ResourceRule{
					{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}},
					{Verbs: []string{"update"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"web"}},
				},
				NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/api/*"}}},
			},
		},
		{
			name:     "resolver error makes the answer incomplete",
			ctx:      genericapirequest.WithUser(context.Background(), me),
			ns:       "ns1",
			resolver: fakeResolver{incomplete: true, err: errors.New("clusterrole \"x\" not found")},
			want: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{},
				Incomplete: true, EvaluationError: "clusterrole \"x\" not found",
			},
		},
		{name: "no namespace", ctx: genericapirequest.WithUser(context.Background(), me), wantBadReq: true},
		{name: "no user", ctx: context.Background(), ns: "ns1", wantBadReq: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.resolver
			r := NewSelfSubjectRulesReviewREST(&res)
			out, err := r.Create(tc.ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: tc.ns}}, nil, nil)
			if tc.wantBadReq {
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("err = %v, want BadRequest", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*authorizationv1.SelfSubjectRulesReview)
			if !reflect.DeepEqual(got.Status, tc.want) {
				t.Errorf("status = %+v\nwant %+v", got.Status, tc.want)
			}
			if res.gotUser != me || res.gotNS != tc.ns {
				t.Errorf("resolver asked for %v in %q", res.gotUser, res.gotNS)
			}
		})
	}
}

func TestCreateValidationRuns(t *testing.T) {
	deny := func(context.Context, runtime.Object) error {
		return apierrors.NewForbidden(authorizationv1.Resource("x"), "", errors.New("no"))
	}
	ctx := genericapirequest.WithNamespace(genericapirequest.WithUser(context.Background(), me), "ns1")
	authz := &fakeAuthorizer{decision: authorizer.DecisionAllow}
	cases := map[string]struct {
		storage rest.Creater
		obj     runtime.Object
	}{
		"sar":  {NewSubjectAccessReviewREST(authz), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: healthz, User: "u"}}},
		"ssar": {NewSelfSubjectAccessReviewREST(authz), &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: healthz}}},
		"lsar": {NewLocalSubjectAccessReviewREST(authz), &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"}, Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns1"}, User: "u"}}},
		"ssrr": {NewSelfSubjectRulesReviewREST(&fakeResolver{}), &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns1"}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			authz.got = nil
			if _, err := c.storage.Create(ctx, c.obj, deny, nil); !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want Forbidden from createValidation", err)
			}
			if authz.got != nil {
				t.Error("authorizer consulted after createValidation refused")
			}
		})
	}
}

func TestStorageMetadata(t *testing.T) {
	type meta interface {
		rest.Scoper
		rest.SingularNameProvider
		New() runtime.Object
	}
	cases := []struct {
		s          meta
		namespaced bool
		singular   string
		obj        runtime.Object
	}{
		{NewSubjectAccessReviewREST(nil), false, "subjectaccessreview", &authorizationv1.SubjectAccessReview{}},
		{NewSelfSubjectAccessReviewREST(nil), false, "selfsubjectaccessreview", &authorizationv1.SelfSubjectAccessReview{}},
		{NewLocalSubjectAccessReviewREST(nil), true, "localsubjectaccessreview", &authorizationv1.LocalSubjectAccessReview{}},
		{NewSelfSubjectRulesReviewREST(nil), false, "selfsubjectrulesreview", &authorizationv1.SelfSubjectRulesReview{}},
	}
	for _, c := range cases {
		if c.s.NamespaceScoped() != c.namespaced || c.s.GetSingularName() != c.singular || reflect.TypeOf(c.s.New()) != reflect.TypeOf(c.obj) {
			t.Errorf("%s: metadata wrong", c.singular)
		}
	}
}
