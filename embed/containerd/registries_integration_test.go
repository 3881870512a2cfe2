package containerd

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// recorder stands in for registry hosts: it is no registry, it records
// each request (host name, method, path, Authorization) and answers 404,
// or 401 asking for basic credentials where it wants them and gets
// others. That is all the test needs to see whom containerd asks, how and
// in which order. Its listeners are on 127.0.0.1 only.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (rec *recorder) handler(name, wantAuth string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, fmt.Sprintf("%s %s %s auth=%q", name, r.Method, r.URL.Path, r.Header.Get("Authorization")))
		rec.mu.Unlock()
		if wantAuth != "" && r.Header.Get("Authorization") != wantAuth {
			w.Header().Set("WWW-Authenticate", `Basic realm="k1s-test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		http.NotFound(w, r)
	})
}

// TestPrivateRegistryMirrorAuthAndTLS starts the embedded containerd with
// a registries.yaml naming a mirror (HTTPS with a CA of its own and basic
// auth) for a registry, and pulls an image of that registry through the
// CRI: containerd asks the mirror first, over TLS verified with ca_file,
// with the configured credentials, then the registry itself. No real
// registry is contacted: both hosts are loopback listeners of the test.
func TestPrivateRegistryMirrorAuthAndTLS(t *testing.T) {
	requireRoot(t)
	ensureAssets(t)
	rec := &recorder{}
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("k1s:s3cret"))
	mirror := httptest.NewTLSServer(rec.handler("mirror", wantAuth))
	defer mirror.Close()
	origin := httptest.NewServer(rec.handler("origin", ""))
	defer origin.Close()
	mirrorHost := strings.TrimPrefix(mirror.URL, "https://")
	originHost := strings.TrimPrefix(origin.URL, "http://")

	e := newTestEnv(t)
	etc := filepath.Join(e.cfg.DataDir, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(etc, "mirror-ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: mirror.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	regFile := filepath.Join(etc, "registries.yaml")
	if err := os.WriteFile(regFile, []byte(fmt.Sprintf(`
mirrors:
  %q:
    endpoint: [%q]
configs:
  %q:
    auth: {username: k1s, password: s3cret}
    tls: {ca_file: %q}
`, originHost, mirror.URL, mirrorHost, caFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.cfg.PrivateRegistry = regFile
	c, _ := e.start()

	// The CRI's status dump (Status, verbose) holds its runtime config
	// only, not the image service's registry settings: what containerd
	// does with a pull is the proof.
	_, is := criClient(t, e.ctx, c.Endpoint())
	image := originHost + "/library/app:1"
	if _, err := is.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err == nil {
		t.Fatalf("pulling %s succeeded from hosts that have no image", image)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	seen := rec.seen
	authed, mirrorFirst := -1, -1
	for i, s := range seen {
		if strings.HasPrefix(s, "mirror ") && mirrorFirst < 0 {
			mirrorFirst = i
		}
		if s == fmt.Sprintf("mirror HEAD /v2/library/app/manifests/1 auth=%q", wantAuth) ||
			s == fmt.Sprintf("mirror GET /v2/library/app/manifests/1 auth=%q", wantAuth) {
			authed = i
		}
	}
	originAfter := false
	for _, s := range seen[max(authed, 0):] {
		if strings.HasPrefix(s, "origin ") && strings.Contains(s, "/v2/library/app/manifests/1") {
			originAfter = true
		}
	}
	t.Logf("requests:\n%s", strings.Join(seen, "\n"))
	if mirrorFirst != 0 || authed < 0 || !originAfter {
		t.Errorf("requests (want the mirror first, with the credentials, then the registry):\n%s", strings.Join(seen, "\n"))
	}
}
