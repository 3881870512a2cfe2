package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestCSRSubresourcePatches: conditions patched through /approval (any
// type, as upstream's approval strategy) and /status are kept, with their
// timestamps set, and the metadata of an /approval patch too; /status
// cannot add an Approved condition.
func TestCSRSubresourcePatches(t *testing.T) {
	s := framework.Start(t)
	c := s.Client(t).CertificatesV1().CertificateSigningRequests()
	ctx := context.Background()

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "e2e-csr"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := c.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "patches"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: "example.com/e2e",
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	got, err := c.Patch(ctx, csr.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"patchedapproval":"true"}},"status":{"conditions":[{"type":"ApprovalPatch","status":"True","reason":"e2e"}]}}`),
		metav1.PatchOptions{}, "approval")
	if err != nil {
		t.Fatalf("patch /approval: %v", err)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != "ApprovalPatch" {
		t.Fatalf("conditions after an /approval patch: %+v", got.Status.Conditions)
	}
	if cond := got.Status.Conditions[0]; cond.LastUpdateTime.IsZero() || cond.LastTransitionTime.IsZero() {
		t.Errorf("condition timestamps not set: %+v", cond)
	}
	if got.Annotations["patchedapproval"] != "true" {
		t.Errorf("annotations after an /approval patch: %v", got.Annotations)
	}

	got, err = c.Patch(ctx, csr.Name, types.MergePatchType,
		[]byte(`{"status":{"conditions":[{"type":"StatusPatch","status":"True","reason":"e2e"}]}}`),
		metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("patch /status: %v", err)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != "StatusPatch" || got.Status.Conditions[0].LastUpdateTime.IsZero() {
		t.Fatalf("conditions after a /status patch: %+v", got.Status.Conditions)
	}

	got, err = c.Patch(ctx, csr.Name, types.MergePatchType,
		[]byte(`{"status":{"conditions":[{"type":"Approved","status":"True","reason":"sneaky"}]}}`),
		metav1.PatchOptions{}, "status")
	if err == nil {
		for _, cond := range got.Status.Conditions {
			if cond.Type == certificatesv1.CertificateApproved {
				t.Fatalf("/status added an Approved condition: %+v", got.Status.Conditions)
			}
		}
	}
}
