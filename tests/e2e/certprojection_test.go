package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/e2e/framework"
)

const (
	e2eSigner     = "example.com/e2e"
	e2ePodSigner  = "example.com/e2e-pods"
	e2eDenySigner = "example.com/e2e-deny"
)

// TestCertificateProjection runs clusterTrustBundle and podCertificate
// projected volumes end to end: the node reads ClusterTrustBundles by name
// and by signer, keeps a pod with a missing non-optional bundle from
// starting until the bundle appears, and requests pod certificates that an
// in-test signer issues (or denies) by writing PodCertificateRequest status.
func TestCertificateProjection(t *testing.T) {
	s := framework.NewNodeServer(t)
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	c := s.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waitServiceAccount(t, c, "default")

	caA, caB, caC := testCA(t, "root-a"), testCA(t, "root-b"), testCA(t, "root-c")
	mkCTB := func(name, signer string, lbls map[string]string, pems ...string) {
		t.Helper()
		_, err := c.CertificatesV1().ClusterTrustBundles().Create(ctx, &certificatesv1.ClusterTrustBundle{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
			Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: strings.Join(pems, "")},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create ClusterTrustBundle %s: %v", name, err)
		}
	}
	mkCTB("e2e-plain", "", nil, caA.pem)
	mkCTB("example.com:e2e:one", e2eSigner, map[string]string{"tier": "gold"}, caA.pem, caB.pem)
	mkCTB("example.com:e2e:two", e2eSigner, map[string]string{"tier": "silver"}, caB.pem, caC.pem)

	t.Run("clusterTrustBundle by name and by signer", func(t *testing.T) {
		pod := catPod("ctb", []string{"/certs/plain.pem", "/certs/all.pem", "/certs/gold.pem", "/certs/none.pem"}, corev1.VolumeProjection{
			ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("e2e-plain"), Path: "plain.pem"},
		}, corev1.VolumeProjection{
			ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptr.To(e2eSigner), LabelSelector: &metav1.LabelSelector{}, Path: "all.pem"},
		}, corev1.VolumeProjection{
			ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptr.To(e2eSigner), Path: "gold.pem",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}},
		}, corev1.VolumeProjection{
			ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptr.To(e2eSigner), Optional: ptr.To(true), Path: "none.pem"},
		})
		files := runCatPod(t, c, pod)
		for name, want := range map[string]string{"plain.pem": "root-a", "all.pem": "root-a,root-b,root-c", "gold.pem": "root-a,root-b", "none.pem": ""} {
			if got := strings.Join(certNames(t, files[name]), ","); got != want {
				t.Errorf("%s holds %q, want %q", name, got, want)
			}
		}
	})

	t.Run("missing non-optional bundle keeps the pod from starting until it exists", func(t *testing.T) {
		pod := catPod("ctb-missing", []string{"/certs/late.pem"}, corev1.VolumeProjection{
			ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("e2e-late"), Path: "late.pem"},
		})
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, c, pod.Name, "FailedMount", `"e2e-late" not found`)
		if p, _ := c.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{}); p.Status.Phase != corev1.PodPending {
			t.Fatalf("pod phase %s with a missing bundle, want Pending", p.Status.Phase)
		}
		mkCTB("e2e-late", "", nil, caC.pem)
		framework.WaitPod(t, c, "default", pod.Name, 60*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if got := strings.Join(certNames(t, podLog(t, c, pod.Name)), ","); got != "root-c" {
			t.Errorf("late.pem holds %q, want root-c", got)
		}
	})

	signerDone := make(chan struct{})
	go func() {
		defer close(signerDone)
		runTestSigner(ctx, t, c, caA)
	}()
	// The signer reports through t: it must stop before the test ends.
	defer func() { cancel(); <-signerDone }()

	t.Run("podCertificate issued by a signer", func(t *testing.T) {
		pod := catPod("pcr", []string{"/certs/bundle.pem"}, corev1.VolumeProjection{
			PodCertificate: &corev1.PodCertificateProjection{
				SignerName: e2ePodSigner, KeyType: "ECDSAP256", MaxExpirationSeconds: ptr.To[int32](3600),
				CredentialBundlePath: "bundle.pem", UserAnnotations: map[string]string{"example.com/path": "/e2e/custom"},
			},
		})
		bundle := runCatPod(t, c, pod)["bundle.pem"]
		var key *ecdsa.PrivateKey
		var certs []*x509.Certificate
		for rest := []byte(bundle); ; {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			switch b.Type {
			case "PRIVATE KEY":
				k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
				if err != nil {
					t.Fatal(err)
				}
				key, _ = k.(*ecdsa.PrivateKey)
			case "CERTIFICATE":
				cert, err := x509.ParseCertificate(b.Bytes)
				if err != nil {
					t.Fatal(err)
				}
				certs = append(certs, cert)
			}
		}
		if key == nil || len(certs) == 0 {
			t.Fatalf("bundle has no ECDSA key or no certificate:\n%s", bundle)
		}
		leaf := certs[0]
		if !key.PublicKey.Equal(leaf.PublicKey) {
			t.Error("the certificate is not for the projected key")
		}
		if life := leaf.NotAfter.Sub(leaf.NotBefore); life != time.Hour {
			t.Errorf("certificate lifetime %v, want maxExpirationSeconds' 1h", life)
		}
		if len(leaf.URIs) != 1 || leaf.URIs[0].Path != "/e2e/custom" {
			t.Errorf("certificate URIs %v, want the path from userAnnotations", leaf.URIs)
		}
		pcrs, err := c.CertificatesV1().PodCertificateRequests("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.podName", pod.Name).String()})
		if err != nil || len(pcrs.Items) != 1 {
			t.Fatalf("requests for the pod: %v, %v", pcrs, err)
		}
		spec := pcrs.Items[0].Spec
		if spec.NodeName == "" || spec.NodeUID == "" || spec.ServiceAccountName != "default" || spec.ServiceAccountUID == "" {
			t.Errorf("request spec %+v lacks the node or service account", spec)
		}
	})

	t.Run("denied podCertificate keeps the pod from starting", func(t *testing.T) {
		pod := catPod("pcr-denied", []string{"/certs/bundle.pem"}, corev1.VolumeProjection{
			PodCertificate: &corev1.PodCertificateProjection{SignerName: e2eDenySigner, KeyType: "ED25519", CredentialBundlePath: "bundle.pem"},
		})
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, c, pod.Name, "FailedMount", `message="e2e says no"`)
		if p, _ := c.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{}); p.Status.Phase != corev1.PodPending {
			t.Fatalf("pod phase %s with a denied certificate, want Pending", p.Status.Phase)
		}
	})
}

type testAuthority struct {
	key  ed25519.PrivateKey
	cert *x509.Certificate
	pem  string
}

func testCA(t *testing.T, cn string) *testAuthority {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testAuthority{key: priv, cert: cert, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// runTestSigner answers the PodCertificateRequests of the e2e signers until
// ctx ends: e2ePodSigner's get a certificate from ca for the stub request's
// key, living maxExpirationSeconds (at most 24h) with a SPIFFE URI whose
// path comes from the example.com/path user annotation; e2eDenySigner's are
// denied.
func runTestSigner(ctx context.Context, t *testing.T, c kubernetes.Interface, ca *testAuthority) {
	_ = wait.PollUntilContextCancel(ctx, 300*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := c.CertificatesV1().PodCertificateRequests("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i := range list.Items {
			pcr := &list.Items[i]
			if len(pcr.Status.Conditions) > 0 {
				continue
			}
			now := time.Now()
			switch pcr.Spec.SignerName {
			case e2eDenySigner:
				pcr.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue,
					Reason: "E2EPolicy", Message: "e2e says no", LastTransitionTime: metav1.NewTime(now)}}
			case e2ePodSigner:
				csr, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
				if err != nil {
					t.Errorf("signer: request %s: %v", pcr.Name, err)
					continue
				}
				life := 24 * time.Hour
				if m := pcr.Spec.MaxExpirationSeconds; m != nil && time.Duration(*m)*time.Second < life {
					life = time.Duration(*m) * time.Second
				}
				notBefore := now.Add(-2 * time.Minute).Truncate(time.Second)
				notAfter := notBefore.Add(life)
				uri := &url.URL{Scheme: "spiffe", Host: "cluster.local", Path: "/ns/" + pcr.Namespace + "/sa/" + pcr.Spec.ServiceAccountName}
				if p, ok := pcr.Spec.UnverifiedUserAnnotations["example.com/path"]; ok {
					uri.Path = p
				}
				der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
					SerialNumber: big.NewInt(now.UnixNano()), NotBefore: notBefore, NotAfter: notAfter, URIs: []*url.URL{uri},
					KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
				}, ca.cert, csr.PublicKey, ca.key)
				if err != nil {
					t.Errorf("signer: sign %s: %v", pcr.Name, err)
					continue
				}
				var chain bytes.Buffer
				_ = pem.Encode(&chain, &pem.Block{Type: "CERTIFICATE", Bytes: der})
				pcr.Status.CertificateChain = chain.String()
				pcr.Status.NotBefore = ptr.To(metav1.NewTime(notBefore))
				pcr.Status.BeginRefreshAt = ptr.To(metav1.NewTime(notAfter.Add(-30 * time.Minute)))
				pcr.Status.NotAfter = ptr.To(metav1.NewTime(notAfter))
				pcr.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue,
					Reason: "Issued", Message: "issued by the e2e signer", LastTransitionTime: metav1.NewTime(now)}}
			default:
				continue
			}
			if _, err := c.CertificatesV1().PodCertificateRequests(pcr.Namespace).UpdateStatus(ctx, pcr, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
				t.Logf("signer: update %s: %v", pcr.Name, err)
			}
		}
		return false, nil
	})
}

// catPod is a pod that prints files of a projected volume at /certs, each
// after a "==> path" line, and exits.
func catPod(name string, files []string, sources ...corev1.VolumeProjection) *corev1.Pod {
	script := ""
	for _, f := range files {
		script += "echo '==> " + f + "'; cat " + f + "; "
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "cat", Image: busybox, ImagePullPolicy: corev1.PullNever,
				Command:      []string{"sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "certs", MountPath: "/certs"}},
			}},
			Volumes: []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}},
		},
	}
}

// runCatPod creates a catPod, waits for it to succeed and returns the files
// it printed by base name.
func runCatPod(t *testing.T, c kubernetes.Interface, pod *corev1.Pod) map[string]string {
	t.Helper()
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitPod(t, c, "default", pod.Name, 90*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	out := map[string]string{}
	cur := ""
	for _, line := range strings.SplitAfter(podLog(t, c, pod.Name), "\n") {
		if p, ok := strings.CutPrefix(line, "==> "); ok {
			p = strings.TrimSpace(p)
			cur = p[strings.LastIndex(p, "/")+1:]
			out[cur] = ""
			continue
		}
		out[cur] += line
	}
	return out
}

func podLog(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	b, err := c.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("logs of %s: %v", name, err)
	}
	return string(b)
}

// certNames returns the sorted common names of the certificates in PEM data.
func certNames(t *testing.T, data string) []string {
	t.Helper()
	var out []string
	for rest := []byte(data); ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cert.Subject.CommonName)
	}
	sort.Strings(out)
	return out
}

// waitEvent waits for an event of reason about pod name whose message
// contains substr.
func waitEvent(t *testing.T, c kubernetes.Interface, name, reason, substr string) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range evs.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == reason && strings.Contains(e.Message, substr) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event containing %q for pod %s; events: %v", reason, substr, name, seen)
	}
}
