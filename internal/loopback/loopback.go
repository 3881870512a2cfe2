// Package loopback lets clients in the k1s process reach the apiserver's
// handler chain directly: an http.RoundTripper that serves each request
// with the apiserver's http.Handler in the same process, instead of
// writing it to a TLS connection on 127.0.0.1 that the same process reads
// back. Requests still pass through the whole chain (authentication,
// authorization, admission, the registry); only TLS, HTTP/2 framing and
// the socket are skipped. A client certificate's identity is carried in
// the request's TLS connection state, where the x509 authenticator reads
// and verifies it, so the apiserver sees the same user as over TLS.
//
// Streaming responses (watches, logs followed) are delivered as the
// handler flushes them. Connection upgrades (exec, attach, port-forward)
// are not supported: those clients keep a real connection.
package loopback

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// ErrNotServing is returned for requests made after the apiserver stopped.
var ErrNotServing = errors.New("the in-process apiserver is not serving")

// waitForServing bounds how long a request made before the apiserver
// serves waits for it; after that it fails like a refused connection, and
// the client's own retries take over.
const waitForServing = 30 * time.Second

// Server is the apiserver's handler as in-process clients reach it. Its
// zero value is not usable: use NewServer.
type Server struct {
	ready chan struct{}
	once  sync.Once

	mu      sync.RWMutex
	handler http.Handler
	stopped bool
	// fromFiles are the identities of clients made with a certificate
	// file, which Reload reads again.
	fromFiles []*identity
}

// identity is the client certificate chain the requests of one client
// present; a chain from a file is replaced by Reload.
type identity struct {
	file  string
	state atomic.Pointer[tls.ConnectionState]
}

func newIdentity(file string, chain []*x509.Certificate) *identity {
	id := &identity{file: file}
	id.set(chain)
	return id
}

func (id *identity) set(chain []*x509.Certificate) {
	id.state.Store(&tls.ConnectionState{Version: tls.VersionTLS13, HandshakeComplete: true, PeerCertificates: chain})
}

// Reload reads again the client certificates of the clients ClientConfig
// made from a certificate file (the server renews them while it runs):
// their later requests present the new ones, those under way keep theirs.
// A file that cannot be read keeps its client's previous certificate.
func (s *Server) Reload() error {
	s.mu.RLock()
	ids := slices.Clone(s.fromFiles)
	s.mu.RUnlock()
	var errs []error
	for _, id := range ids {
		chain, err := readChain(id.file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		id.set(chain)
	}
	return errors.Join(errs...)
}

func readChain(file string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("in-process client: read client certificate: %w", err)
	}
	chain, err := certutil.ParseCertsPEM(b)
	if err != nil {
		return nil, fmt.Errorf("in-process client: client certificate %s: %w", file, err)
	}
	return chain, nil
}

// NewServer returns a Server that has no handler yet: requests wait until
// Serve is called.
func NewServer() *Server {
	return &Server{ready: make(chan struct{})}
}

// Serve starts handing requests to h. Only the first call counts.
func (s *Server) Serve(h http.Handler) {
	s.once.Do(func() {
		s.mu.Lock()
		s.handler = h
		s.mu.Unlock()
		close(s.ready)
	})
}

// Stop makes later requests fail with ErrNotServing, as a closed listener
// would. Requests in flight finish.
func (s *Server) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.Serve(nil) // release waiters
}

func (s *Server) current(ctx context.Context) (http.Handler, error) {
	t := time.NewTimer(waitForServing)
	defer t.Stop()
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("%w: it did not start within %v", ErrNotServing, waitForServing)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.stopped || s.handler == nil {
		return nil, ErrNotServing
	}
	return s.handler, nil
}

// Transport returns a RoundTripper whose requests carry the given client
// certificate chain (leaf first) as their TLS peer certificates, or none
// when chain is empty (the request then authenticates by its headers,
// e.g. a bearer token).
func (s *Server) Transport(chain []*x509.Certificate) http.RoundTripper {
	return &transport{server: s, id: newIdentity("", chain)}
}

// ClientConfig returns a copy of cfg whose requests go to s. The identity
// of cfg is kept: its client certificate travels as the request's peer
// certificate (one from a file is read again by Reload), a bearer token
// or basic auth as headers. The server CA and TLS settings are dropped,
// as nothing is dialled.
func (s *Server) ClientConfig(cfg *rest.Config) (*rest.Config, error) {
	out := rest.CopyConfig(cfg)
	id := newIdentity("", nil)
	switch {
	case out.CertData != nil:
		chain, err := certutil.ParseCertsPEM(out.CertData)
		if err != nil {
			return nil, fmt.Errorf("in-process client: client certificate: %w", err)
		}
		id.set(chain)
	case out.CertFile != "":
		chain, err := readChain(out.CertFile)
		if err != nil {
			return nil, err
		}
		id = newIdentity(out.CertFile, chain)
		s.mu.Lock()
		s.fromFiles = append(s.fromFiles, id)
		s.mu.Unlock()
	}
	out.TLSClientConfig = rest.TLSClientConfig{}
	out.Transport = &transport{server: s, id: id}
	// Nothing to compress between two goroutines.
	out.DisableCompression = true
	return out, nil
}

type transport struct {
	server *Server
	id     *identity
}

// RoundTrip serves req with the apiserver's handler in a new goroutine.
// It returns when the handler has written its status: with the whole body
// if the handler finished, or with a body that streams what the handler
// flushes (a watch) until the handler returns or the body is closed.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	h, err := t.server.current(req.Context())
	if err != nil {
		closeBody(req)
		return nil, err
	}
	// The handler's request is a new request, as one over a socket: it
	// ends with the client's, but sees none of its context's values (an
	// admission plugin's own calls would otherwise carry its request's
	// audit context, user and request info into theirs).
	ctx, cancel := context.WithCancel(withoutValues{req.Context()})
	sreq := req.Clone(ctx)
	sreq.TLS = t.id.state.Load()
	sreq.RemoteAddr = "127.0.0.1:0"
	sreq.RequestURI = req.URL.RequestURI()
	sreq.Proto, sreq.ProtoMajor, sreq.ProtoMinor = "HTTP/1.1", 1, 1
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	if sreq.Header == nil {
		sreq.Header = http.Header{}
	}
	w := &responseWriter{
		req:     req,
		ctx:     ctx,
		header:  http.Header{},
		cancel:  cancel,
		started: make(chan struct{}),
	}
	go w.serve(h, sreq)
	select {
	case <-w.started:
		return w.resp, nil
	case <-req.Context().Done():
		// The handler sees its context cancelled and returns. A response
		// it hands over meanwhile is nobody's: close it, so a streaming
		// handler's writes fail instead of blocking.
		cancel()
		go func() {
			<-w.started
			_ = w.resp.Body.Close()
		}()
		return nil, req.Context().Err()
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// responseWriter buffers what the handler writes until the handler
// returns or flushes. At a flush the response is handed to the client and
// later writes stream through a pipe.
type responseWriter struct {
	req    *http.Request   // the client's
	ctx    context.Context // the handler's request context
	header http.Header
	cancel context.CancelFunc

	status  int
	buf     bytes.Buffer
	resp    *http.Response
	started chan struct{} // closed when resp is set

	pw *io.PipeWriter // set once streaming
}

func (w *responseWriter) serve(h http.Handler, req *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			// http.Server's behaviour: the panic is the handler's; the
			// client sees its connection end. ErrAbortHandler is silent.
			if p != http.ErrAbortHandler {
				klog.ErrorS(nil, "Panic serving an in-process request", "method", req.Method, "path", req.URL.Path, "panic", p)
			}
			w.finish(fmt.Errorf("loopback: handler panicked: %v", p))
			return
		}
		w.finish(nil)
	}()
	defer closeBody(req)
	h.ServeHTTP(w, req)
}

// finish ends the response: the buffered body is handed over whole, or
// the stream ends (with err, if the handler failed).
func (w *responseWriter) finish(err error) {
	if w.pw != nil {
		if err != nil {
			_ = w.pw.CloseWithError(err)
		} else {
			_ = w.pw.Close()
		}
		w.cancel()
		return
	}
	switch {
	case err != nil && w.status == 0:
		w.status = http.StatusBadGateway
		w.header = http.Header{}
		w.buf.Reset()
		w.buf.WriteString(err.Error())
	case err != nil:
		// The status is written: as over a connection that breaks, the
		// client gets what was written and then an error, not a short
		// body that looks complete.
		w.respond(io.NopCloser(io.MultiReader(bytes.NewReader(w.buf.Bytes()), errReader{err})), -1)
		w.cancel()
		return
	}
	w.respond(io.NopCloser(bytes.NewReader(w.buf.Bytes())), int64(w.buf.Len()))
	w.cancel()
}

func (w *responseWriter) respond(body io.ReadCloser, length int64) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	h := w.header.Clone()
	h.Del("Transfer-Encoding")
	if length >= 0 {
		h.Set("Content-Length", strconv.FormatInt(length, 10))
	}
	w.resp = &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          body,
		ContentLength: length,
		Request:       w.req,
	}
	close(w.started)
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 {
		return // informational: nothing to forward
	}
	w.status = code
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.pw == nil && w.buf.Len()+len(p) > maxBuffered {
		// A large response (a big list) streams instead of growing the
		// buffer to its whole size.
		w.Flush()
	}
	if w.pw != nil {
		n, err := w.pw.Write(p)
		if err == errClientClosed {
			// As a write into a socket's buffer after the peer went away:
			// it succeeds, and the handler learns of it from its context.
			return len(p), nil
		}
		return n, err
	}
	return w.buf.Write(p)
}

// Flush hands the response to the client and switches to streaming.
func (w *responseWriter) Flush() {
	if w.pw != nil {
		return
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	pr, pw := io.Pipe()
	w.pw = pw
	w.respond(&streamBody{pr: pr, cancel: w.cancel}, -1)
	if w.buf.Len() > 0 {
		// The pipe is done with the bytes when Write returns; the
		// buffer is not used again.
		_, _ = pw.Write(w.buf.Bytes())
		w.buf = bytes.Buffer{}
	}
}

// FlushError is Flush for http.ResponseController.
func (w *responseWriter) FlushError() error {
	w.Flush()
	return nil
}

// CloseNotify is for handlers that still use http.CloseNotifier.
//
//nolint:staticcheck // the apiserver's filters look for it.
func (w *responseWriter) CloseNotify() <-chan bool {
	ch := make(chan bool, 1)
	ctx := w.ctx
	go func() {
		<-ctx.Done()
		ch <- true
	}()
	return ch
}

// maxBuffered is how much of a response is buffered before it streams.
const maxBuffered = 1 << 20

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// streamBody is a streaming response's body: closing it ends the
// handler's request, as a closed connection would.
type streamBody struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
}

func (b *streamBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *streamBody) Close() error {
	b.cancel()
	return b.pr.CloseWithError(errClientClosed)
}

var errClientClosed = errors.New("loopback: the client closed the response body")

// withoutValues is a context's cancellation and deadline without its values.
type withoutValues struct{ context.Context }

func (withoutValues) Value(any) any { return nil }
