package volume

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// fakeTrustBundles serves ClusterTrustBundles from a slice.
type fakeTrustBundles struct {
	mu      sync.Mutex
	bundles []*certificatesv1.ClusterTrustBundle
}

func (f *fakeTrustBundles) Get(name string) (*certificatesv1.ClusterTrustBundle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.bundles {
		if b.Name == name {
			return b.DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(certificatesv1.Resource("clustertrustbundles"), name)
}

func (f *fakeTrustBundles) List(sel labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*certificatesv1.ClusterTrustBundle
	for _, b := range f.bundles {
		if sel.Matches(labels.Set(b.Labels)) {
			out = append(out, b.DeepCopy())
		}
	}
	return out, nil
}

func (f *fakeTrustBundles) set(name, signer string, lbls map[string]string, pems ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := &certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: strings.Join(pems, "")},
	}
	for i, old := range f.bundles {
		if old.Name == name {
			f.bundles[i] = b
			return
		}
	}
	f.bundles = append(f.bundles, b)
}

// caPEM makes a self-signed CA certificate named cn, PEM-encoded.
func caPEM(t *testing.T, cn string) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: t0, NotAfter: t0.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// commonNames returns the subjects of the certificates in a PEM file, in
// order, failing on anything that is not a headerless CERTIFICATE block.
func commonNames(t *testing.T, data string) []string {
	t.Helper()
	var out []string
	rest := []byte(data)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" || len(b.Headers) != 0 {
			t.Fatalf("unexpected PEM block %q with headers %v", b.Type, b.Headers)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Subject.CommonName)
	}
	if len(strings.TrimSpace(string(rest))) != 0 {
		t.Fatalf("trailing data in bundle: %q", rest)
	}
	return out
}

func ctbVolume(name string, srcs ...*corev1.ClusterTrustBundleProjection) corev1.Volume {
	vol := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}
	for _, s := range srcs {
		vol.Projected.Sources = append(vol.Projected.Sources, corev1.VolumeProjection{ClusterTrustBundle: s})
	}
	return vol
}

func TestClusterTrustBundleProjection(t *testing.T) {
	roots := map[string]string{}
	for _, cn := range []string{"a", "b", "c", "d", "e"} {
		roots[cn] = caPEM(t, cn)
	}
	setup := func(f *fakeTrustBundles) {
		f.set("one:1", "example.com/one", map[string]string{"alive": "true"}, roots["a"], roots["b"])
		f.set("one:2", "example.com/one", map[string]string{"alive": "false"}, roots["b"], roots["c"])
		f.set("two:1", "example.com/two", map[string]string{"alive": "true"}, roots["d"])
		f.set("plain", "", map[string]string{"alive": "true"}, roots["e"], "junk between blocks\n", roots["e"])
	}
	tests := []struct {
		name    string
		src     corev1.ClusterTrustBundleProjection
		want    []string // common names in the file (any order)
		wantErr string
	}{
		{name: "by name", src: corev1.ClusterTrustBundleProjection{Name: ptr("one:1")}, want: []string{"a", "b"}},
		{name: "by name, duplicates and junk dropped", src: corev1.ClusterTrustBundleProjection{Name: ptr("plain")}, want: []string{"e"}},
		{name: "missing name, optional", src: corev1.ClusterTrustBundleProjection{Name: ptr("nope"), Optional: ptr(true)}, want: nil},
		{name: "missing name", src: corev1.ClusterTrustBundleProjection{Name: ptr("nope")},
			wantErr: `get ClusterTrustBundle "nope": clustertrustbundles.certificates.k8s.io "nope" not found`},
		{name: "missing name, optional=false", src: corev1.ClusterTrustBundleProjection{Name: ptr("nope"), Optional: ptr(false)},
			wantErr: `not found`},
		{name: "signer, empty selector matches all of the signer's", src: corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com/one"), LabelSelector: &metav1.LabelSelector{}},
			want: []string{"a", "b", "c"}},
		{name: "signer and labels", src: corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com/one"), LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "false"}}},
			want: []string{"b", "c"}},
		{name: "signer, nil selector matches nothing", src: corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com/one")},
			wantErr: `combination of signerName "example.com/one" and labelSelector matched zero ClusterTrustBundles`},
		{name: "signer, nil selector, optional", src: corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com/one"), Optional: ptr(true)}, want: nil},
		{name: "signer, selector matches nothing, optional", src: corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com/two"), Optional: ptr(true),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "false"}}}, want: nil},
		{name: "unknown signer", src: corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com/three"), LabelSelector: &metav1.LabelSelector{}},
			wantErr: "matched zero ClusterTrustBundles"},
		{name: "bad selector", src: corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com/one"),
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "alive", Operator: "Bogus"}}}},
			wantErr: "clusterTrustBundle labelSelector"},
		{name: "neither name nor signer", src: corev1.ClusterTrustBundleProjection{}, wantErr: "requires either name or signerName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			setup(e.bundles)
			src := tt.src
			src.Path = "bundle.pem"
			pod := newPod("uid1", ctbVolume("ctb", &src))
			paths, err := e.mgr.SetUpPod(context.Background(), pod)
			if tt.wantErr != "" {
				ves := mustVolumeErrors(t, err)
				if !strings.Contains(ves[0].Error(), tt.wantErr) || !strings.HasPrefix(ves[0].Error(), `MountVolume.SetUp failed for volume "ctb" : `) {
					t.Fatalf("error = %q, want it to contain %q", ves[0].Error(), tt.wantErr)
				}
				if _, ok := paths["ctb"]; ok {
					t.Fatal("failed volume has a path")
				}
				return
			}
			if err != nil {
				t.Fatalf("SetUpPod: %v", err)
			}
			p := filepath.Join(paths["ctb"], "bundle.pem")
			got := commonNames(t, readFile(t, p))
			if strings.Join(sortedCopy(got), ",") != strings.Join(tt.want, ",") {
				t.Errorf("certificates = %v, want %v", got, tt.want)
			}
			if m := fileMode(t, p); m != 0o644 {
				t.Errorf("mode = %v, want 0644", m)
			}
		})
	}
}

func sortedCopy(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestClusterTrustBundleOrderIsStable(t *testing.T) {
	var pems []string
	for _, cn := range []string{"r1", "r2", "r3", "r4"} {
		pems = append(pems, caPEM(t, cn))
	}
	fwd := normalizeTrustAnchors([]*certificatesv1.ClusterTrustBundle{{Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: strings.Join(pems, "")}}})
	rev := normalizeTrustAnchors([]*certificatesv1.ClusterTrustBundle{
		{Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: pems[3] + pems[2]}},
		{Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: pems[1] + pems[0] + pems[3]}},
	})
	if string(fwd) != string(rev) {
		t.Errorf("the same set of certificates gave two contents:\n%s\n---\n%s", fwd, rev)
	}
	if n := len(commonNames(t, string(fwd))); n != 4 {
		t.Errorf("%d certificates, want 4", n)
	}
}

func TestClusterTrustBundleUpdateAndMode(t *testing.T) {
	e := newEnv(t)
	a, b := caPEM(t, "a"), caPEM(t, "b")
	e.bundles.set("ctb", "", nil, a)
	vol := ctbVolume("ctb", &corev1.ClusterTrustBundleProjection{Name: ptr("ctb"), Path: "ca.pem"}, &corev1.ClusterTrustBundleProjection{Name: ptr("ctb"), Path: "mine.pem", User: ptr(int64(1000))})
	vol.Projected.DefaultMode = ptr(int32(0o640))
	pod := newPod("uid1", vol)
	dir := e.setUp(pod)["ctb"]
	if got := commonNames(t, readFile(t, filepath.Join(dir, "ca.pem"))); strings.Join(got, ",") != "a" {
		t.Fatalf("certificates = %v, want [a]", got)
	}
	if m := fileMode(t, filepath.Join(dir, "ca.pem")); m != 0o640 {
		t.Errorf("mode = %v, want the volume's 0640", m)
	}
	if m := fileMode(t, filepath.Join(dir, "mine.pem")); m != 0o600 {
		t.Errorf("mode with a user = %v, want 0600", m)
	}

	// The bundle changes: the next sync after the refresh interval shows it.
	e.bundles.set("ctb", "", nil, a, b)
	e.clock.Step(DefaultRefreshInterval)
	e.setUp(pod)
	if got := sortedCopy(commonNames(t, readFile(t, filepath.Join(dir, "ca.pem")))); strings.Join(got, ",") != "a,b" {
		t.Errorf("certificates after update = %v, want [a b]", got)
	}
}

func TestClusterTrustBundleWithoutSource(t *testing.T) {
	e := newEnv(t)
	mgr, err := New(Config{PodsDir: filepath.Join(e.dir, "other")}, Deps{Objects: e.objects, Mounter: e.mounter, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	_, err = mgr.SetUpPod(context.Background(), newPod("uid1", ctbVolume("ctb", &corev1.ClusterTrustBundleProjection{Name: ptr("x"), Path: "p"})))
	ves := mustVolumeErrors(t, err)
	if !strings.Contains(ves[0].Error(), "no ClusterTrustBundle source is configured") {
		t.Errorf("error = %q", ves[0].Error())
	}
}

func TestInformerTrustBundlesWaitsForSync(t *testing.T) {
	synced := false
	f := &fakeTrustBundles{}
	f.set("x", "", nil)
	tb := &informerTrustBundles{synced: func() bool { return synced }, lister: f}
	if _, err := tb.Get("x"); !errors.Is(err, errTrustBundlesNotSynced) {
		t.Errorf("Get before sync: err = %v, want not synced", err)
	}
	if _, err := tb.List(labels.Everything()); !errors.Is(err, errTrustBundlesNotSynced) {
		t.Errorf("List before sync: err = %v, want not synced", err)
	}
	synced = true
	if _, err := tb.Get("x"); err != nil {
		t.Errorf("Get after sync: %v", err)
	}
}
