// Package certificates holds the CertificateSigningRequest hooks: the
// requester's identity recorded on create, Approved/Denied conditions kept
// out of plain status updates, and the approval subresource; the signer
// permission check ("attest", "sign" on signers) and the
// PodCertificateRequest status validation that uses it.
package certificates

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/k1s/k1s/internal/apis/certificates"
)

// PrepareForCreate records who asked: spec.username, uid, groups and extra
// come from the request, never from the client.
func PrepareForCreate(ctx context.Context, obj runtime.Object) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		csr.Spec.Username = u.GetName()
		csr.Spec.UID = u.GetUID()
		csr.Spec.Groups = append([]string(nil), u.GetGroups()...)
		if extra := u.GetExtra(); len(extra) > 0 {
			csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
			for k, v := range extra {
				csr.Spec.Extra[k] = append(certificatesv1.ExtraValue(nil), v...)
			}
		}
	}
}

func isDecision(t certificatesv1.RequestConditionType) bool {
	return t == certificatesv1.CertificateApproved || t == certificatesv1.CertificateDenied
}

// mergeConditions takes the decision conditions (Approved, Denied) of one
// list and every other condition of the other.
func mergeConditions(decisionsFrom, othersFrom []certificatesv1.CertificateSigningRequestCondition) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range decisionsFrom {
		if isDecision(c.Type) {
			out = append(out, c)
		}
	}
	for _, c := range othersFrom {
		if !isDecision(c.Type) {
			out = append(out, c)
		}
	}
	return out
}

// PrepareForStatusUpdate keeps the old Approved/Denied conditions: only the
// approval subresource decides. Conditions get their timestamps.
func PrepareForStatusUpdate(_ context.Context, obj, old runtime.Object) {
	csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	csr.Spec = oldCSR.Spec
	csr.Status.Conditions = mergeConditions(oldCSR.Status.Conditions, csr.Status.Conditions)
	stampConditions(csr, oldCSR, metav1.Now())
}

// PrepareForApproval takes the conditions (any type, as upstream's
// approval strategy) and the metadata of the update, and the rest of the
// old object. Conditions get their timestamps.
func PrepareForApproval(_ context.Context, obj, old runtime.Object) {
	csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	conditions := csr.Status.Conditions
	csr.Spec = *oldCSR.Spec.DeepCopy()
	csr.Status = *oldCSR.Status.DeepCopy()
	csr.Status.Conditions = conditions
	stampConditions(csr, oldCSR, metav1.Now())
}

// stampConditions sets a condition's missing lastUpdateTime to now and
// its missing lastTransitionTime to the old one of the same type and
// status, or now.
func stampConditions(csr, old *certificatesv1.CertificateSigningRequest, now metav1.Time) {
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = now
		for _, o := range old.Status.Conditions {
			if o.Type == c.Type && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
				c.LastTransitionTime = o.LastTransitionTime
				break
			}
		}
	}
}

// ValidateApproval checks an approval update.
func ValidateApproval(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return certificates.ValidateCertificateSigningRequestApproval(obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest))
}
