package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The admission plugins' first read of the /openapi/v3 index waits until
// the server is ready and one poll period more; other requests, and the
// index's later reads, go straight through.
func TestHoldFirstOpenAPIIndex(t *testing.T) {
	var index atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/openapi/v3":
			index.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"paths":{}}`))
		case "/version":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"major":"1","minor":"37"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ready, done := make(chan struct{}), make(chan struct{})
	const period = 200 * time.Millisecond
	c, err := kubernetes.NewForConfig(holdFirstOpenAPIIndex(&rest.Config{Host: srv.URL}, ready, period, done))
	if err != nil {
		t.Fatal(err)
	}

	first := make(chan error, 1)
	go func() { _, err := c.Discovery().OpenAPIV3().Paths(); first <- err }()
	// Another request is not held.
	if _, err := c.Discovery().ServerVersion(); err != nil {
		t.Fatalf("version: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := index.Load(); n != 0 {
		t.Fatalf("index read %d times before the server was ready", n)
	}
	select {
	case <-done:
		t.Fatal("done before the held read was answered")
	default:
	}
	readyAt := time.Now()
	close(ready)
	if err := <-first; err != nil {
		t.Fatalf("first index read: %v", err)
	}
	if waited := time.Since(readyAt); waited < period {
		t.Errorf("first index read came %v after ready, want at least %v", waited, period)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("done not closed after the held read was answered")
	}
	start := time.Now()
	if _, err := c.Discovery().OpenAPIV3().Paths(); err != nil {
		t.Fatalf("second index read: %v", err)
	}
	if took := time.Since(start); took >= period {
		t.Errorf("second index read held %v", took)
	}
	if n := index.Load(); n != 2 {
		t.Errorf("index read %d times, want 2", n)
	}
}

// A held read gives up with its request's context.
func TestHoldFirstOpenAPIIndexCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	defer srv.Close()
	done := make(chan struct{})
	cfg := holdFirstOpenAPIIndex(&rest.Config{Host: srv.URL}, make(chan struct{}), time.Hour, done)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/openapi/v3", nil)
	resp, err := hc.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	if err == nil || ctx.Err() == nil {
		t.Fatalf("held read returned %v before its context ended", err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("done not closed after the held read gave up")
	}
}
