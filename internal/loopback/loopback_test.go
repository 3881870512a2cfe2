package loopback

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func selfSigned(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"group-a"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// whoami answers with the request's peer certificate's CN and its
// Authorization header.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	cn := "<none>"
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		cn = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	fmt.Fprintf(w, "cn=%s auth=%q", cn, r.Header.Get("Authorization"))
})

func get(t *testing.T, cfg *rest.Config, path string) (int, string) {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatalf("TransportFor: %v", err)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443"+path, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp.StatusCode, string(b)
}

func TestClientConfigIdentity(t *testing.T) {
	s := NewServer()
	s.Serve(whoami)
	cert := selfSigned(t, "system:kube-controller-manager")
	tests := []struct {
		name string
		cfg  rest.Config
		want string
	}{
		{
			name: "client certificate",
			cfg: rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{
				CertData: cert, KeyData: []byte("unused"), CAData: []byte("unused")}},
			want: `cn=system:kube-controller-manager auth=""`,
		},
		{
			name: "bearer token",
			cfg:  rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "abc", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("unused")}},
			want: `cn=<none> auth="Bearer abc"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := s.ClientConfig(&tt.cfg)
			if err != nil {
				t.Fatalf("ClientConfig: %v", err)
			}
			if cfg.CAData != nil || cfg.CertData != nil || !cfg.DisableCompression {
				t.Errorf("config keeps TLS settings or compression: %+v", cfg.TLSClientConfig)
			}
			if code, body := get(t, cfg, "/"); code != http.StatusOK || body != tt.want {
				t.Errorf("got %d %q, want 200 %q", code, body, tt.want)
			}
		})
	}

	if _, err := s.ClientConfig(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: []byte("not PEM")}}); err == nil {
		t.Error("ClientConfig with a bad certificate succeeded")
	}
	if _, err := s.ClientConfig(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CertFile: "/nonexistent/cert.pem"}}); err == nil ||
		!strings.Contains(err.Error(), "client certificate") {
		t.Errorf("ClientConfig with a missing certificate file: %v", err)
	}
}

// TestReload: a client made from a certificate file presents the file's
// new certificate once Reload has read it; one made from data keeps its
// own; a file gone keeps the previous certificate and is reported.
func TestReload(t *testing.T) {
	s := NewServer()
	s.Serve(whoami)
	file := filepath.Join(t.TempDir(), "client.crt")
	if err := os.WriteFile(file, selfSigned(t, "first"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := s.ClientConfig(&rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CertFile: file, KeyFile: "unused"}})
	if err != nil {
		t.Fatal(err)
	}
	fromData, err := s.ClientConfig(&rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CertData: selfSigned(t, "data")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name    string
		write   []byte // nil: remove the file
		fileCN  string
		wantErr bool
	}{
		{name: "renewed", write: selfSigned(t, "second"), fileCN: "second"},
		{name: "renewed again", write: selfSigned(t, "third"), fileCN: "third"},
		{name: "file gone", fileCN: "third", wantErr: true},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.write != nil {
				if err := os.WriteFile(file, step.write, 0o600); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			if err := s.Reload(); (err != nil) != step.wantErr {
				t.Fatalf("Reload: %v, want error %v", err, step.wantErr)
			}
			if _, body := get(t, fromFile, "/"); !strings.HasPrefix(body, "cn="+step.fileCN+" ") {
				t.Errorf("client from the file: %q, want cn=%s", body, step.fileCN)
			}
			if _, body := get(t, fromData, "/"); !strings.HasPrefix(body, "cn=data ") {
				t.Errorf("client from data: %q", body)
			}
		})
	}
}

func TestResponses(t *testing.T) {
	s := NewServer()
	s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.RawQuery, b)
		case "/missing":
			http.Error(w, "no such thing", http.StatusNotFound)
		case "/empty":
		case "/panic":
			panic("boom")
		case "/panic-after-status":
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "partial")
			panic("boom")
		case "/large":
			chunk := strings.Repeat("x", 64<<10)
			for range 40 { // 2.5 MiB: more than is buffered
				fmt.Fprint(w, chunk)
			}
		}
	}))
	rt := s.Transport(nil)
	tests := []struct {
		method, path, body string
		code               int
		want               string
		readErr            bool // reading the body fails after want
	}{
		{method: http.MethodPost, path: "/echo?x=1", body: "payload", code: http.StatusCreated, want: "POST x=1 payload"},
		{method: http.MethodGet, path: "/missing", code: http.StatusNotFound, want: "no such thing\n"},
		{method: http.MethodGet, path: "/empty", code: http.StatusOK},
		{method: http.MethodGet, path: "/panic", code: http.StatusBadGateway, want: "loopback: handler panicked: boom"},
		{method: http.MethodGet, path: "/panic-after-status", code: http.StatusOK, want: "partial", readErr: true},
		{method: http.MethodGet, path: "/large", code: http.StatusOK, want: strings.Repeat("x", 40*64<<10)},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, _ := http.NewRequest(tt.method, "https://k1s"+tt.path, body)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if (err != nil) != tt.readErr {
				t.Errorf("reading the body: %v, want an error: %v", err, tt.readErr)
			}
			if resp.StatusCode != tt.code || string(b) != tt.want {
				t.Errorf("got %d %.40q (%d bytes), want %d %.40q (%d bytes)", resp.StatusCode, b, len(b), tt.code, tt.want, len(tt.want))
			}
			if resp.ContentLength != int64(len(b)) && resp.ContentLength != -1 {
				t.Errorf("ContentLength %d, body %d bytes", resp.ContentLength, len(b))
			}
		})
	}
}

// A flushed response reaches the client before the handler returns, and
// closing its body ends the handler's request, as a watch needs.
func TestStreaming(t *testing.T) {
	s := NewServer()
	next := make(chan struct{})
	handlerDone := make(chan error, 1)
	s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := w.(http.Flusher)
		w.Header().Set("Transfer-Encoding", "chunked")
		fmt.Fprintln(w, "first")
		f.Flush()
		<-next
		fmt.Fprintln(w, "second")
		f.Flush()
		select {
		case <-r.Context().Done():
			// Writes after the client went away do not fail.
			_, err := fmt.Fprintln(w, "late")
			handlerDone <- err
		case <-time.After(10 * time.Second):
			handlerDone <- errors.New("request context not cancelled after the body was closed")
		}
	}))
	req, _ := http.NewRequest(http.MethodGet, "https://k1s/watch", nil)
	resp, err := s.Transport(nil).RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if resp.ContentLength != -1 || resp.Header.Get("Transfer-Encoding") != "" {
		t.Errorf("streaming response: ContentLength %d, Transfer-Encoding %q", resp.ContentLength, resp.Header.Get("Transfer-Encoding"))
	}
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(next)
	if line, err := r.ReadString('\n'); err != nil || line != "second\n" {
		t.Fatalf("second line %q, %v", line, err)
	}
	resp.Body.Close()
	if err := <-handlerDone; err != nil {
		t.Fatal(err)
	}
}

func TestWaitsUntilServing(t *testing.T) {
	s := NewServer()
	rt := s.Transport(nil)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://k1s/", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RoundTrip before Serve with a short deadline: %v, want deadline exceeded", err)
	}

	got := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "https://k1s/", nil)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("RoundTrip returned before Serve: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	s.Serve(whoami)
	if err := <-got; err != nil {
		t.Fatalf("RoundTrip after Serve: %v", err)
	}

	s.Stop()
	req, _ = http.NewRequest(http.MethodGet, "https://k1s/", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, ErrNotServing) {
		t.Fatalf("RoundTrip after Stop: %v, want ErrNotServing", err)
	}
}

// TestHandlerSeesNoClientValues: the served request ends with the
// client's but carries none of its context's values (an apiserver
// admission plugin's own calls would otherwise take its request's audit
// context along).
func TestHandlerSeesNoClientValues(t *testing.T) {
	type key struct{}
	s := NewServer()
	s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "value=%v", r.Context().Value(key{}))
	}))
	cfg, err := s.ClientConfig(&rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "client's"))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:6443/", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "value=<nil>" {
		t.Errorf("handler saw %q, want no value", b)
	}
}
