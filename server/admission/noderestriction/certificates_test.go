package noderestriction_test

import (
	"context"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/utils/ptr"
)

// TestPodCertificateRequestsAndResourceSlices: a node asks for pod
// certificates only for its own pods, as they run, for signers they mount;
// it writes only its own ResourceSlices.
func TestPodCertificateRequestsAndResourceSlices(t *testing.T) {
	pcrGVR := certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests")
	sliceGVR := resourcev1.SchemeGroupVersion.WithResource("resourceslices")
	pod := boundPod("web", "node-a")
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "cert", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/mounted"}}}}}})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default", UID: "sa-uid"}}
	objs := []runtime.Object{pod, boundPod("db", "node-b"), nodeObj("node-a"), sa}
	pcr := func(mutate ...func(*certificatesv1.PodCertificateRequestSpec)) *certificatesv1.PodCertificateRequest {
		r := &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}, Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/mounted", PodName: "web", PodUID: "uid-web", ServiceAccountName: "default", ServiceAccountUID: "sa-uid",
			NodeName: "node-a", NodeUID: "node-a-uid"}}
		for _, m := range mutate {
			m(&r.Spec)
		}
		return r
	}
	slice := func(node *string) *resourcev1.ResourceSlice {
		return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1.ResourceSliceSpec{NodeName: node}}
	}
	tests := []struct {
		name      string
		authz     authorizer.UnconditionalAuthorizer
		a         admission.Attributes
		wantErr   string
		forbidden bool
	}{
		{name: "own pod, mounted signer", a: attrs(nodeA, admission.Create, pcrGVR, "", "ns", "", pcr(), nil)},
		{name: "other node named", a: attrs(nodeA, admission.Create, pcrGVR, "", "ns", "", pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeName = "node-b" }), nil),
			wantErr: "not the requesting node", forbidden: true},
		{name: "pod on another node", a: attrs(nodeA, admission.Create, pcrGVR, "", "ns", "", pcr(func(s *certificatesv1.PodCertificateRequestSpec) {
			s.PodName, s.PodUID = "db", "uid-db"
		}), nil), wantErr: "is not running on node", forbidden: true},
		{name: "stale pod UID", a: attrs(nodeA, admission.Create, pcrGVR, "", "ns", "", pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodUID = "old" }), nil),
			wantErr: "differs from running pod"},
		{name: "stale node UID", a: attrs(nodeA, admission.Create, pcrGVR, "", "ns", "", pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeUID = "old" }), nil),
			wantErr: "inconsistent with the running node"},
		{name: "stale service account UID", a: attrs(nodeA, admission.Create, pcrGVR, "", "ns", "", pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountUID = "old" }), nil),
			wantErr: "differs from the running service account"},
		{name: "signer not mounted", a: attrs(nodeA, admission.Create, pcrGVR, "", "ns", "", pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.SignerName = "example.com/other" }), nil),
			wantErr: "does not mount a podCertificate projected volume", forbidden: true},
		{name: "signer not mounted, but authorized", authz: allowAll{},
			a: attrs(nodeA, admission.Create, pcrGVR, "", "ns", "", pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.SignerName = "example.com/other" }), nil)},
		{name: "no update", a: attrs(nodeA, admission.Update, pcrGVR, "", "ns", "r", pcr(), pcr()), wantErr: "unexpected operation", forbidden: true},

		{name: "own slice", a: attrs(nodeA, admission.Create, sliceGVR, "", "", "", slice(ptr.To("node-a")), nil)},
		{name: "slice of another node", a: attrs(nodeA, admission.Create, sliceGVR, "", "", "", slice(ptr.To("node-b")), nil),
			wantErr: "can only create ResourceSlice", forbidden: true},
		{name: "cluster-wide slice", a: attrs(nodeA, admission.Create, sliceGVR, "", "", "", slice(nil), nil), wantErr: "can only create ResourceSlice", forbidden: true},
		{name: "delete another node's slice", a: attrs(nodeA, admission.Delete, sliceGVR, "", "", "s", nil, slice(ptr.To("node-b"))),
			wantErr: "can only delete ResourceSlice", forbidden: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, tc.authz, objs...)
			err := p.Admit(context.Background(), tc.a, nil)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if tc.forbidden && !apierrors.IsForbidden(err) {
				t.Errorf("err = %v, want Forbidden", err)
			}
		})
	}
}
