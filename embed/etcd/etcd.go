// Package etcd runs an embedded, single-member etcd server for the k1s
// control plane: data under <data-dir>/server/db/etcd, client and peer
// listeners on loopback only, clients authenticated with TLS certificates.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// Config configures the embedded etcd.
type Config struct {
	// DataDir holds etcd's member directory. Required.
	DataDir string
	// ClientPort is the loopback port of the client listener. Default 2379.
	ClientPort int
	// PeerPort is the loopback port of the peer listener. Default 2380.
	PeerPort int
	// Name is the member name. Default: "k1s".
	Name string
	// CertFile/KeyFile are the server certificate; TrustedCAFile verifies clients. Required.
	CertFile, KeyFile, TrustedCAFile string
	// QuotaBackendBytes is the backend size quota. Default 2 GiB (etcd's default).
	QuotaBackendBytes int64
	// SnapshotCount is the number of applied entries between snapshots. Default 10000
	// (lower than etcd's 100000, to cap memory on small machines).
	SnapshotCount uint64
	// LogLevel is etcd's zap log level. Default "warn".
	LogLevel string
}

func (c *Config) setDefaults() {
	if c.ClientPort == 0 {
		c.ClientPort = 2379
	}
	if c.PeerPort == 0 {
		c.PeerPort = 2380
	}
	if c.Name == "" {
		c.Name = "k1s"
	}
	if c.SnapshotCount == 0 {
		c.SnapshotCount = 10000
	}
	if c.LogLevel == "" {
		c.LogLevel = "warn"
	}
}

// Validate reports configuration errors naming the flag.
func (c Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir: etcd data directory must not be empty"))
	}
	if c.ClientPort < 0 || c.ClientPort > 65535 {
		errs = append(errs, fmt.Errorf("--etcd-client-port: %d is not a valid port", c.ClientPort))
	}
	if c.PeerPort < 0 || c.PeerPort > 65535 {
		errs = append(errs, fmt.Errorf("--etcd-peer-port: %d is not a valid port", c.PeerPort))
	}
	if c.CertFile == "" || c.KeyFile == "" || c.TrustedCAFile == "" {
		errs = append(errs, errors.New("etcd TLS files must be set"))
	}
	return errors.Join(errs...)
}

// Server is an embedded etcd member.
type Server struct {
	cfg   Config
	ready chan struct{}
	// member is the running etcd server, set before ready is closed.
	member atomic.Pointer[etcdserver.EtcdServer]
}

// New validates cfg. It starts nothing.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, ready: make(chan struct{})}, nil
}

// Endpoint is the client URL.
func (s *Server) Endpoint() string {
	return "https://127.0.0.1:" + strconv.Itoa(s.cfg.ClientPort)
}

// Ready is closed once etcd serves clients.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// LocalClient returns a client that calls the member in this process
// directly: no socket, no TLS, no gRPC framing or protobuf encoding, the
// requests and responses are handed over as Go values. The apiserver's
// storage uses it; the TLS listener stays for other clients and tools.
// The client fails once the member stops. It is valid only after Ready.
func (s *Server) LocalClient() (*clientv3.Client, error) {
	m := s.member.Load()
	if m == nil {
		return nil, errors.New("etcd is not running yet")
	}
	return v3client.New(m), nil
}

// Run starts etcd and blocks until ctx is cancelled or etcd fails.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("etcd")
	if err := os.MkdirAll(s.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create etcd data directory %s (check --data-dir is writable): %w", s.cfg.DataDir, err)
	}
	if err := checkDataDir(s.cfg.DataDir); err != nil {
		return err
	}
	for _, port := range []int{s.cfg.ClientPort, s.cfg.PeerPort} {
		if err := portFree(port); err != nil {
			return err
		}
	}

	ec := embed.NewConfig()
	ec.Name = s.cfg.Name
	ec.Dir = s.cfg.DataDir
	clientURL := url.URL{Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.cfg.ClientPort))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.cfg.PeerPort))}
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	ec.ListenPeerUrls = []url.URL{peerURL}
	ec.AdvertisePeerUrls = []url.URL{peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.ClientTLSInfo = transport.TLSInfo{
		CertFile:       s.cfg.CertFile,
		KeyFile:        s.cfg.KeyFile,
		TrustedCAFile:  s.cfg.TrustedCAFile,
		ClientCertAuth: true,
	}
	// A lone member still waits out a randomised election timeout before
	// it leads and serves: with etcd's 100 ms heartbeat and 1 s election
	// timeout that was 0.1–1 s of every start. The member has no peers to
	// heartbeat or to lose touch with, so a short timeout costs nothing
	// but 20 ticks a second.
	ec.TickMs = 50
	ec.ElectionMs = 250
	ec.SnapshotCount = s.cfg.SnapshotCount
	if s.cfg.QuotaBackendBytes > 0 {
		ec.QuotaBackendBytes = s.cfg.QuotaBackendBytes
	}
	ec.AutoCompactionMode = "periodic"
	ec.AutoCompactionRetention = "1h"
	ec.EnableGRPCGateway = false
	ec.LogLevel = s.cfg.LogLevel
	ec.LogOutputs = []string{"stderr"}
	level, err := zapcore.ParseLevel(ec.LogLevel)
	if err != nil {
		return fmt.Errorf("etcd log level %q: %w", ec.LogLevel, err)
	}
	lg, err := NewLogger(level)
	if err != nil {
		return err
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return fmt.Errorf("start etcd in %s (a corrupt or foreign data directory? move it aside to start fresh): %w", s.cfg.DataDir, err)
	}
	defer func() {
		s.member.Store(nil)
		e.Close()
		logger.V(2).Info("Stopped etcd")
	}()

	select {
	case <-e.Server.ReadyNotify():
		logger.V(2).Info("etcd is ready", "endpoint", clientURL.String())
		s.member.Store(e.Server)
		close(s.ready)
	case err := <-e.Err():
		return fmt.Errorf("etcd: %w", err)
	case <-e.Server.StopNotify():
		return fmt.Errorf("etcd stopped before becoming ready (check the data directory %s)", s.cfg.DataDir)
	case <-ctx.Done():
		return nil
	case <-time.After(2 * time.Minute):
		return errors.New("etcd did not become ready within 2m")
	}

	select {
	case err := <-e.Err():
		return fmt.Errorf("etcd: %w", err)
	case <-e.Server.StopNotify():
		return errors.New("etcd stopped unexpectedly")
	case <-ctx.Done():
		return nil
	}
}

// checkDataDir refuses a data directory that holds files etcd does not own,
// so a mistyped --data-dir cannot be turned into an etcd member.
func checkDataDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read etcd data directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() != "member" {
			return fmt.Errorf("etcd data directory %s holds %q, which is not etcd's: refusing to use a foreign directory", dir, e.Name())
		}
	}
	if len(entries) == 1 {
		if _, err := os.Stat(filepath.Join(dir, "member", "snap")); err != nil {
			return fmt.Errorf("etcd data directory %s is corrupt (no member/snap): %w", dir, err)
		}
	}
	return nil
}

func portFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("etcd port 127.0.0.1:%d is in use (another k1s or etcd running?): %w", port, err)
	}
	return l.Close()
}
