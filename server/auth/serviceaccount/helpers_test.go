package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var (
	keysOnce sync.Once
	rsaKey1  *rsa.PrivateKey
	rsaKey2  *rsa.PrivateKey
	ecKey1   *ecdsa.PrivateKey
)

// testKeys generates the test keys once per test binary.
func testKeys(t *testing.T) (*rsa.PrivateKey, *rsa.PrivateKey, *ecdsa.PrivateKey) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if rsaKey1, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if rsaKey2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if ecKey1, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
	})
	return rsaKey1, rsaKey2, ecKey1
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testSA() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "builder", UID: "sa-uid"}}
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "web-0", UID: "pod-uid"},
		Spec:       corev1.PodSpec{ServiceAccountName: "builder", NodeName: "node-a"},
	}
}

func testSecret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "bound-secret", UID: "secret-uid"}}
}

func testNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
}

func deletedAt(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

func withUID[T interface{ SetUID(types.UID) }](o T, uid string) T {
	o.SetUID(types.UID(uid))
	return o
}

// decodeSegment decodes one base64url JWT segment into a map.
func decodeSegment(t *testing.T, token string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d segments, want 3", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatalf("decode segment %d: %v", i, err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("unmarshal segment %d: %v", i, err)
	}
	return out
}

func mustKeyID(t *testing.T, k crypto.PublicKey) string {
	t.Helper()
	id, err := KeyID(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func generateRSA() (*rsa.PrivateKey, error) {
	return rsa.GenerateKey(rand.Reader, 2048)
}
