// Package etcd runs the embedded etcd member of the k1s control plane:
// data under <data-dir>/server/db/etcd, its client listener on loopback
// only, clients authenticated with TLS certificates. Alone (the default)
// its peer listener is on loopback too; one of a cluster (k1s server
// --cluster-init, or a server that joined one) listens for its peers on
// the node's address with TLS, and a joining member enters as a learner
// and promotes itself once it has caught up (AddLearner, on a member of
// the cluster, makes room for it).
package etcd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// LowWriteBackendBatchInterval is the backend batch interval of k1s's
// low-write mode (--low-write): the bbolt file is committed at most every
// 10 minutes (or every BackendBatchLimit writes) instead of every 100ms.
const LowWriteBackendBatchInterval = 10 * time.Minute

// Config configures the embedded etcd.
type Config struct {
	// DataDir holds etcd's member directory. Required.
	DataDir string
	// ClientPort is the loopback port of the client listener. Default 2379.
	ClientPort int
	// PeerPort is the port of the peer listener. Default 2380.
	PeerPort int
	// PeerIP, when set, makes the member one of a cluster: its peer
	// listener is on PeerIP:PeerPort with TLS (PeerCertFile and
	// PeerKeyFile, peers verified against TrustedCAFile), its peer URL
	// is kept in the membership as it changes, and it runs etcd's
	// default 100 ms heartbeat and 1 s election timeout, which members
	// talking over a network need. Default: nil, a lone member whose
	// peer listener is on loopback, without TLS.
	PeerIP                    net.IP
	PeerCertFile, PeerKeyFile string
	// InitialCluster joins an existing cluster, when DataDir holds no
	// member yet: "name=peerURL,..." of every member, this one (Name,
	// PeerURL) included, as AddLearner returns it. The member joins as a
	// learner and promotes itself once it has caught up; Ready waits for
	// that. Default: empty, a new cluster of this member alone.
	InitialCluster string
	// Name is the member name. Default: "k1s".
	Name string
	// CertFile/KeyFile are the server certificate; TrustedCAFile verifies clients. Required.
	CertFile, KeyFile, TrustedCAFile string
	// QuotaBackendBytes is the backend size quota. Default 2 GiB (etcd's default).
	QuotaBackendBytes int64
	// SnapshotCount is the number of applied entries between snapshots. Default 10000
	// (lower than etcd's 100000, to cap memory on small machines).
	SnapshotCount uint64
	// BackendBatchInterval and BackendBatchLimit bound how long and how
	// many writes the backend (bbolt) holds before committing them to its
	// file (etcd's --backend-batch-interval, --backend-batch-limit). A
	// write is durable once its raft entry is fsynced to the WAL, before
	// it is acknowledged; the backend commit only shortens the WAL replay
	// after a crash, so batching longer costs no acknowledged write.
	// Default 0: etcd's (100ms, 10000). `--low-write` sets
	// LowWriteBackendBatchInterval.
	BackendBatchInterval time.Duration
	BackendBatchLimit    int
	// LogLevel is etcd's zap log level. Default "warn".
	LogLevel string
	// ForceNewCluster starts the member as a cluster of itself alone,
	// keeping its data: the other members are dropped from the
	// membership (etcd's --force-new-cluster; `k1s server
	// --cluster-reset`). Default false.
	ForceNewCluster bool
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
	if c.PeerIP != nil && (c.PeerCertFile == "" || c.PeerKeyFile == "") {
		errs = append(errs, errors.New("etcd peer TLS files must be set with a peer address"))
	}
	if c.InitialCluster != "" && c.PeerIP == nil {
		errs = append(errs, errors.New("joining an etcd cluster needs a peer address (--node-ip)"))
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

// PeerURL is the URL the member's peers reach it at.
func (s *Server) PeerURL() string {
	if s.cfg.PeerIP == nil {
		return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.cfg.PeerPort))
	}
	return PeerURL(s.cfg.PeerIP, s.cfg.PeerPort)
}

// PeerURL is the peer URL of a member of a cluster (Config.PeerIP) at
// ip and port.
func PeerURL(ip net.IP, port int) string {
	return "https://" + net.JoinHostPort(ip.String(), strconv.Itoa(port))
}

// Ready is closed once etcd serves clients (a joining member: once it is
// a voting member).
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
	if err := portFree(net.IPv4(127, 0, 0, 1), s.cfg.ClientPort); err != nil {
		return err
	}
	peerIP := net.IPv4(127, 0, 0, 1)
	if s.cfg.PeerIP != nil {
		peerIP = s.cfg.PeerIP
	}
	if err := portFree(peerIP, s.cfg.PeerPort); err != nil {
		return err
	}
	_, statErr := os.Stat(filepath.Join(s.cfg.DataDir, "member"))
	joining := s.cfg.InitialCluster != "" && errors.Is(statErr, fs.ErrNotExist)

	ec := embed.NewConfig()
	ec.Name = s.cfg.Name
	ec.Dir = s.cfg.DataDir
	clientURL := url.URL{Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.cfg.ClientPort))}
	peerURL, err := url.Parse(s.PeerURL())
	if err != nil {
		return err
	}
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	if joining {
		ec.InitialCluster = s.cfg.InitialCluster
		ec.ClusterState = embed.ClusterStateFlagExisting
	}
	ec.ClientTLSInfo = transport.TLSInfo{
		CertFile:       s.cfg.CertFile,
		KeyFile:        s.cfg.KeyFile,
		TrustedCAFile:  s.cfg.TrustedCAFile,
		ClientCertAuth: true,
	}
	if s.cfg.PeerIP != nil {
		ec.PeerTLSInfo = transport.TLSInfo{
			CertFile:       s.cfg.PeerCertFile,
			KeyFile:        s.cfg.PeerKeyFile,
			TrustedCAFile:  s.cfg.TrustedCAFile,
			ClientCertAuth: true,
		}
	} else {
		// A lone member still waits out a randomised election timeout
		// before it leads and serves: with etcd's 100 ms heartbeat and
		// 1 s election timeout that was 0.1–1 s of every start. The
		// member has no peers to heartbeat or to lose touch with, so a
		// short timeout costs nothing but 20 ticks a second. Members of
		// a cluster keep etcd's defaults: a busy machine would miss a
		// 250 ms timeout and call elections for nothing.
		ec.TickMs = 50
		ec.ElectionMs = 250
	}
	ec.SnapshotCount = s.cfg.SnapshotCount
	if s.cfg.BackendBatchInterval > 0 {
		ec.BackendBatchInterval = s.cfg.BackendBatchInterval
	}
	if s.cfg.BackendBatchLimit > 0 {
		ec.BackendBatchLimit = s.cfg.BackendBatchLimit
	}
	ec.ForceNewCluster = s.cfg.ForceNewCluster
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
		logger.V(2).Info("etcd is ready", "endpoint", clientURL.String(), "peerURL", peerURL.String())
		if s.cfg.PeerIP != nil {
			if err := s.joined(ctx, e.Server, peerURL.String()); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		if s.cfg.BackendBatchInterval > 0 {
			// Commit what start-up wrote (the term and consistent index
			// among it) now, not a whole batch interval later: etcd's
			// storage-version monitor reads them from the committed
			// backend and logs an error every few seconds until then.
			e.Server.Backend().ForceCommit()
		}
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

func portFree(ip net.IP, port int) error {
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("etcd port %s is in use (another k1s or etcd running?): %w", addr, err)
	}
	return l.Close()
}
