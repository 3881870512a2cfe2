package join

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k1s/k1s/internal/pki"
)

// testCA signs certificates with the validity a test chooses.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string
}

func newTestCA(t *testing.T, dir string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, "server-ca.crt")}
	if err := os.WriteFile(ca.file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return ca
}

var serial int64 = 100

// sign issues a certificate for spec with a new key, valid from nb to na.
func (ca *testCA) sign(spec csrSpec, nb, na time.Time) (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: spec.subject, DNSNames: spec.dns, IPAddresses: spec.ips,
		NotBefore: nb, NotAfter: na, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func (ca *testCA) write(t *testing.T, out pki.CertKey, spec csrSpec, nb, na time.Time) {
	t.Helper()
	certPEM, keyPEM, err := ca.sign(spec, nb, na)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out.KeyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out.CertFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
}

func leafOf(t *testing.T, ck pki.CertKey) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(ck.CertFile, ck.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return pair.Leaf
}

func TestRenewAt(t *testing.T) {
	nb := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, life := range []time.Duration{15 * time.Minute, time.Hour, 8760 * time.Hour} {
		t.Run(life.String(), func(t *testing.T) {
			lo, hi := nb.Add(life*7/10), nb.Add(life*9/10)
			for range 1000 {
				if at := renewAt(nb, nb.Add(life)); at.Before(lo) || at.After(hi) {
					t.Fatalf("renewAt = %s into the life, want 70–90 %%: %s–%s", at.Sub(nb), lo.Sub(nb), hi.Sub(nb))
				}
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{{0, 2 * time.Second}, {1, 4 * time.Second}, {3, 16 * time.Second}, {4, 32 * time.Second}, {12, 32 * time.Second}} {
		if got := backoff(tc.attempt); got != tc.want {
			t.Errorf("backoff(%d) = %s, want %s", tc.attempt, got, tc.want)
		}
	}
}

// rotatorFixture is a node holding certificates valid for an hour from
// t0, a Rotator on a fake clock whose signer issues hour-long
// certificates from the clock's now and fails as told.
type rotatorFixture struct {
	clk    *clocktesting.FakeClock
	creds  Credentials
	client *ClientCert
	r      *Rotator

	mu    sync.Mutex
	calls map[string]int // by signer
	fail  map[string]int // failures left, by signer
}

func newRotatorFixture(t *testing.T, t0 time.Time) *rotatorFixture {
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	f := &rotatorFixture{clk: clocktesting.NewFakeClock(t0), creds: credentials(dir), calls: map[string]int{}, fail: map[string]int{}}
	f.creds.ServerCAFile = ca.file
	ips := []net.IP{net.ParseIP("192.0.2.7")}
	ca.write(t, f.creds.Client, clientSpec("n1"), t0, t0.Add(time.Hour))
	ca.write(t, f.creds.Serving, servingSpec("n1", ips), t0, t0.Add(time.Hour))
	var err error
	// The client's connections retire on a clock of their own: the
	// rotator's has only its two loops' timers.
	if f.client, err = NewClientCert(f.creds, nil, clocktesting.NewFakeClock(t0)); err != nil {
		t.Fatal(err)
	}
	f.r = &Rotator{cfg: Config{NodeName: "n1", NodeIPs: ips, RenewAt: renewAt}, creds: f.creds, client: f.client, clock: f.clk,
		issue: func(_ context.Context, spec csrSpec) ([]byte, []byte, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.calls[spec.signer]++
			if f.fail[spec.signer] > 0 {
				f.fail[spec.signer]--
				return nil, nil, errors.New("not now")
			}
			now := f.clk.Now()
			return ca.sign(spec, now, now.Add(time.Hour))
		}}
	return f
}

func (f *rotatorFixture) callsTo(signer string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[signer]
}

// settle waits until both of the rotator's loops sleep again after
// calls requests in all.
func (f *rotatorFixture) settle(t *testing.T, calls int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.clk.Waiters() != 2 || f.callsTo(certificatesv1.KubeAPIServerClientKubeletSignerName)+f.callsTo(certificatesv1.KubeletServingSignerName) != calls {
		if time.Now().After(deadline) {
			t.Fatalf("rotator not settled: %d timers, %v requests, want 2 and %d", f.clk.Waiters(), f.calls, calls)
		}
		time.Sleep(time.Millisecond)
	}
}

func (f *rotatorFixture) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// TestRotatorRenews: nothing before 70 % of the life, both certificates
// renewed (new key, files replaced, the client one installed) by 90 %,
// and the next renewal planned from the new certificate.
func TestRotatorRenews(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f := newRotatorFixture(t, t0)
	oldClient, oldServing := leafOf(t, f.creds.Client), leafOf(t, f.creds.Serving)
	f.run(t)
	f.settle(t, 0)

	f.clk.Step(41 * time.Minute) // 68 %
	if f.clk.Waiters() != 2 {
		t.Fatalf("a certificate was renewed at 68 %% of its life")
	}
	f.clk.Step(14 * time.Minute) // 92 %
	f.settle(t, 2)
	client, serving := leafOf(t, f.creds.Client), leafOf(t, f.creds.Serving)
	for _, c := range []struct {
		name     string
		old, new *x509.Certificate
	}{{"client", oldClient, client}, {"serving", oldServing, serving}} {
		if c.new.SerialNumber.Cmp(c.old.SerialNumber) == 0 || !c.new.NotBefore.Equal(t0.Add(55*time.Minute)) {
			t.Errorf("%s certificate not renewed: serial %s from %s", c.name, c.new.SerialNumber, c.new.NotBefore)
		}
		if c.new.PublicKey.(*ecdsa.PublicKey).Equal(c.old.PublicKey) {
			t.Errorf("%s certificate renewed with the same key", c.name)
		}
	}
	if cur := f.client.Current().Leaf; cur.SerialNumber.Cmp(client.SerialNumber) != 0 {
		t.Errorf("the clients present serial %s, the file holds %s", cur.SerialNumber, client.SerialNumber)
	}
	if err := serving.VerifyHostname("192.0.2.7"); err != nil {
		t.Errorf("renewed serving certificate: %v", err)
	}

	// The next renewal: from the new certificates' life.
	f.clk.Step(41 * time.Minute)
	if f.clk.Waiters() != 2 {
		t.Fatalf("a new certificate was renewed at 68 %% of its life")
	}
	f.clk.Step(14 * time.Minute)
	f.settle(t, 4)
}

// TestRotatorRetries: a failed request is retried after 2 s, then 4 s …
// while the other certificate goes its own way.
func TestRotatorRetries(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f := newRotatorFixture(t, t0)
	clientSigner := certificatesv1.KubeAPIServerClientKubeletSignerName
	f.fail[clientSigner] = 2
	old := leafOf(t, f.creds.Client)
	f.run(t)
	f.settle(t, 0)

	f.clk.Step(55 * time.Minute)
	f.settle(t, 2) // both tried; the client's failed and waits 2 s
	if leafOf(t, f.creds.Client).SerialNumber.Cmp(old.SerialNumber) != 0 {
		t.Fatalf("client certificate replaced after a failed request")
	}
	for _, step := range []struct {
		by    time.Duration
		calls int
	}{{time.Second, 2}, {time.Second, 3}, {3 * time.Second, 3}, {time.Second, 4}} {
		f.clk.Step(step.by)
		f.settle(t, step.calls)
	}
	if got := f.callsTo(clientSigner); got != 3 {
		t.Errorf("client requests = %d, want 3", got)
	}
	if leafOf(t, f.creds.Client).SerialNumber.Cmp(old.SerialNumber) == 0 {
		t.Errorf("client certificate not renewed after the retries")
	}
}

// TestClientCertSwitches: once a new client certificate is set, the next
// request presents it on a new connection, although the one made with
// the old certificate was kept alive; a request under way on the old
// connection goes on until it is retired, a minute later.
func TestClientCertSwitches(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	creds := credentials(dir)
	creds.ServerCAFile = ca.file
	now := time.Now()
	ca.write(t, creds.Client, clientSpec("n1"), now.Add(-time.Minute), now.Add(time.Hour))
	srvCert, srvKey, err := ca.sign(csrSpec{subject: pkix.Name{CommonName: "server"}, ips: []net.IP{net.IPv4(127, 0, 0, 1)}}, now.Add(-time.Minute), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	more := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, r.TLS.PeerCertificates[0].SerialNumber)
		if r.URL.Path != "/stream" {
			return
		}
		for {
			w.(http.Flusher).Flush()
			select {
			case <-more:
				fmt.Fprintln(w, "more")
			case <-r.Context().Done():
				return
			}
		}
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	defer srv.Close()

	clk := clocktesting.NewFakeClock(now)
	cc, err := NewClientCert(creds, nil, clk)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(rest.CopyConfig(cc.RESTConfig(srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	get := func() string {
		t.Helper()
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		return strings.TrimSpace(string(b))
	}
	oldSerial := cc.Current().Leaf.SerialNumber.String()
	if got := get(); got != oldSerial {
		t.Fatalf("presented serial %s, want %s", got, oldSerial)
	}
	resp, err := hc.Get(srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream := bufio.NewReader(resp.Body)
	if line, err := stream.ReadString('\n'); err != nil || strings.TrimSpace(line) != oldSerial {
		t.Fatalf("stream: %q %v", line, err)
	}

	certPEM, keyPEM, err := ca.sign(clientSpec("n1"), now.Add(-time.Minute), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	next, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cc.set(&next)
	if got, want := get(), next.Leaf.SerialNumber.String(); got != want {
		t.Errorf("after the switch presented serial %s, want %s", got, want)
	}
	more <- struct{}{}
	if line, err := stream.ReadString('\n'); err != nil || line != "more\n" {
		t.Fatalf("the request under way broke at the switch: %q %v", line, err)
	}
	clk.Step(59 * time.Second)
	more <- struct{}{}
	if line, err := stream.ReadString('\n'); err != nil || line != "more\n" {
		t.Fatalf("the request under way broke before it was retired: %q %v", line, err)
	}
	clk.Step(time.Second)
	read := make(chan error, 1)
	go func() {
		_, err := stream.ReadString('\n')
		read <- err
	}()
	select {
	case err := <-read:
		if err == nil {
			t.Errorf("the old connection was not closed")
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the old connection still open a minute after the switch")
	}
}

func TestRetireAfter(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		left time.Duration
		want time.Duration
	}{{"plenty left", time.Hour, time.Minute}, {"ninety seconds left", 90 * time.Second, 45 * time.Second}, {"expired", -time.Second, 0}} {
		leaf := &x509.Certificate{NotAfter: now.Add(tc.left)}
		if got := retireAfter(&tls.Certificate{Leaf: leaf}, now); got != tc.want {
			t.Errorf("%s: retireAfter = %s, want %s", tc.name, got, tc.want)
		}
	}
}
