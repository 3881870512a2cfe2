package clustertrustbundleattest

import (
	"context"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// attestFor allows "attest" on exactly the signer names given.
func attestFor(names ...string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		if attrs.GetVerb() != "attest" || attrs.GetResource() != "signers" || attrs.GetAPIGroup() != "certificates.k8s.io" {
			return authorizer.DecisionNoOpinion, "", nil
		}
		for _, n := range names {
			if attrs.GetName() == n {
				return authorizer.DecisionAllow, "", nil
			}
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

func bundle(name, signer string) *certificatesv1.ClusterTrustBundle {
	return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: "x"}}
}

func attrs(obj, old *certificatesv1.ClusterTrustBundle, op admission.Operation) admission.Attributes {
	var o runtime.Object
	if old != nil {
		o = old
	}
	return admission.NewAttributesRecord(obj, o, certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"), "", obj.Name,
		certificatesv1.SchemeGroupVersion.WithResource("clustertrustbundles"), "", op, nil, false, &user.DefaultInfo{Name: "alice"})
}

func TestValidate(t *testing.T) {
	p := New(attestFor("example.com/allowed", "wild.example.com/*"))
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	withOwner := bundle("example.com:denied:a", "example.com/denied")
	withOwner.Finalizers = []string{"example.com/keep"}
	changed := bundle("example.com:denied:a", "example.com/denied")
	changed.Spec.TrustBundle = "y"
	tests := []struct {
		name    string
		a       admission.Attributes
		allowed bool
	}{
		{"no signer", attrs(bundle("plain", ""), nil, admission.Create), true},
		{"signer allowed", attrs(bundle("example.com:allowed:a", "example.com/allowed"), nil, admission.Create), true},
		{"signer domain wildcard", attrs(bundle("wild.example.com:x:a", "wild.example.com/x"), nil, admission.Create), true},
		{"signer denied", attrs(bundle("example.com:denied:a", "example.com/denied"), nil, admission.Create), false},
		{"update of garbage-collector fields only", attrs(withOwner, bundle("example.com:denied:a", "example.com/denied"), admission.Update), true},
		{"update of the bundle", attrs(changed, withOwner, admission.Update), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Validate(context.Background(), tc.a, nil)
			if tc.allowed && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.allowed && !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want Forbidden", err)
			}
		})
	}
}
