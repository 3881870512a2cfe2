package volume

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	certinformers "k8s.io/client-go/informers/certificates/v1"
)

// maxTrustBundleSelectorLength bounds the canonical form of a
// clusterTrustBundle projection's labelSelector (kubelet's limit).
const maxTrustBundleSelectorLength = 100 * 1024

// TrustBundles reads ClusterTrustBundles, typically from an informer's
// cache. Get returns an error for which apierrors.IsNotFound is true when the
// bundle does not exist. Safe for concurrent use.
type TrustBundles interface {
	Get(name string) (*certificatesv1.ClusterTrustBundle, error)
	List(selector labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error)
}

// InformerTrustBundles serves ClusterTrustBundles from inf's cache, refusing
// to answer until the informer has synced so that a bundle is never taken
// for missing while the cache is still empty. The caller starts the
// informer.
func InformerTrustBundles(inf certinformers.ClusterTrustBundleInformer) TrustBundles {
	return &informerTrustBundles{synced: inf.Informer().HasSynced, lister: inf.Lister()}
}

type informerTrustBundles struct {
	synced func() bool
	lister interface {
		Get(name string) (*certificatesv1.ClusterTrustBundle, error)
		List(selector labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error)
	}
}

var errTrustBundlesNotSynced = errors.New("ClusterTrustBundle informer has not yet synced")

func (t *informerTrustBundles) Get(name string) (*certificatesv1.ClusterTrustBundle, error) {
	if !t.synced() {
		return nil, errTrustBundlesNotSynced
	}
	return t.lister.Get(name)
}

func (t *informerTrustBundles) List(selector labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error) {
	if !t.synced() {
		return nil, errTrustBundlesNotSynced
	}
	return t.lister.List(selector)
}

// trustBundleFile adds the file of a clusterTrustBundle projection to out:
// the deduplicated certificates of the bundle named by name, or of every
// bundle of signerName matching labelSelector. As in kubelet, a nil
// labelSelector matches no bundle and an empty one matches all of the
// signer's. A missing bundle (or no match) is an error unless optional, in
// which case the file is written empty.
func (m *manager) trustBundleFile(pod *corev1.Pod, src *corev1.ClusterTrustBundleProjection, defaultMode int32, defaultUser *int64, out map[string]file) error {
	data, err := m.trustAnchors(src)
	if err != nil {
		return err
	}
	uid := defaultUser
	if src.User != nil {
		uid = src.User
	}
	mode := defaultMode
	if uid != nil || fsGroup(pod) != nil {
		mode = 0o600
	}
	out[src.Path] = file{data: data, mode: mode, uid: uid}
	return nil
}

func (m *manager) trustAnchors(src *corev1.ClusterTrustBundleProjection) ([]byte, error) {
	if m.bundles == nil {
		return nil, errors.New("clusterTrustBundle projections are not supported by this node: no ClusterTrustBundle source is configured")
	}
	optional := isTrue(src.Optional)
	switch {
	case src.Name != nil:
		ctb, err := m.bundles.Get(*src.Name)
		if apierrors.IsNotFound(err) && optional {
			return []byte{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("get ClusterTrustBundle %q: %w", *src.Name, err)
		}
		return normalizeTrustAnchors([]*certificatesv1.ClusterTrustBundle{ctb}), nil
	case src.SignerName != nil:
		selector, err := metav1.LabelSelectorAsSelector(src.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("clusterTrustBundle labelSelector: %w", err)
		}
		if n := len(selector.String()); n > maxTrustBundleSelectorLength {
			return nil, fmt.Errorf("clusterTrustBundle labelSelector is %d bytes long, more than %d", n, maxTrustBundleSelectorLength)
		}
		all, err := m.bundles.List(selector)
		if err != nil {
			return nil, fmt.Errorf("list ClusterTrustBundles matching %q: %w", selector.String(), err)
		}
		var matched []*certificatesv1.ClusterTrustBundle
		for _, ctb := range all {
			if ctb.Spec.SignerName == *src.SignerName {
				matched = append(matched, ctb)
			}
		}
		if len(matched) == 0 {
			if optional {
				return []byte{}, nil
			}
			return nil, fmt.Errorf("combination of signerName %q and labelSelector matched zero ClusterTrustBundles", *src.SignerName)
		}
		return normalizeTrustAnchors(matched), nil
	}
	return nil, errors.New("clusterTrustBundle projection requires either name or signerName to be set")
}

// normalizeTrustAnchors returns the distinct certificates of bundles as PEM
// CERTIFICATE blocks without headers, ordered by their DER bytes so that
// the content only changes when the set of certificates does.
func normalizeTrustAnchors(bundles []*certificatesv1.ClusterTrustBundle) []byte {
	seen := map[string]bool{}
	var ders []string
	for _, ctb := range bundles {
		rest := []byte(ctb.Spec.TrustBundle)
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			if k := string(b.Bytes); !seen[k] {
				seen[k] = true
				ders = append(ders, k)
			}
		}
	}
	sort.Strings(ders)
	var buf bytes.Buffer
	for _, der := range ders {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: []byte(der)})
	}
	return buf.Bytes()
}
