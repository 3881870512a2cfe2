package certificates

import (
	"context"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/k1s/k1s/internal/apis/certificates"
)

// AuthorizedForSigner reports whether u may verb ("attest", "sign",
// "approve") for signerName: the verb on resource signers of
// certificates.k8s.io named signerName, or named "<domain>/*".
func AuthorizedForSigner(ctx context.Context, authz authorizer.Authorizer, u user.Info, verb, signerName string) bool {
	domain, _, _ := strings.Cut(signerName, "/")
	for _, name := range []string{signerName, domain + "/*"} {
		d, _, err := authz.Authorize(ctx, authorizer.AttributesRecord{
			User: u, Verb: verb, Name: name, APIGroup: certificatesv1.GroupName, APIVersion: "*",
			Resource: "signers", ResourceRequest: true,
		})
		if err == nil && d == authorizer.DecisionAllow {
			return true
		}
	}
	return false
}

// ValidatePodCertificateRequestStatus returns the status-update validation
// of PodCertificateRequests: the rules of
// certificates.ValidatePodCertificateRequestStatusUpdate at now(), and,
// when the status changes, that the requester may "sign" for the signer.
func ValidatePodCertificateRequestStatus(authz authorizer.Authorizer, now func() time.Time) func(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return func(ctx context.Context, obj, old runtime.Object) field.ErrorList {
		pcr, oldPCR := obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest)
		if errs := certificates.ValidatePodCertificateRequestStatusUpdate(pcr, oldPCR, now()); len(errs) > 0 {
			return errs
		}
		if equality.Semantic.DeepEqual(pcr.Status, oldPCR.Status) {
			return nil
		}
		p := field.NewPath("spec", "signerName")
		u, ok := genericapirequest.UserFrom(ctx)
		if !ok {
			return field.ErrorList{field.InternalError(p, fmt.Errorf("cannot determine calling user to perform \"sign\" check"))}
		}
		if !AuthorizedForSigner(ctx, authz, u, "sign", oldPCR.Spec.SignerName) {
			return field.ErrorList{field.Forbidden(p, fmt.Sprintf("User %q is not permitted to \"sign\" for signer %q", u.GetName(), oldPCR.Spec.SignerName))}
		}
		return nil
	}
}
