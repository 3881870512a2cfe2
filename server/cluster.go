package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/k1s/k1s/embed/etcd"
	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/internal/pki"
)

// Several servers, k3s's way. The first runs `k1s server --cluster-init`:
// its etcd member listens for peers on the node's address. Another runs
// `k1s server --server https://FIRST:6443 --token TOKEN`: it checks the
// first server's CA against the token's hash, fetches the CAs and keys
// every server shares (ServerBootstrapPath), has its etcd member added as
// a learner (EtcdMembersPath) and starts it into the cluster; the member
// promotes itself once it has caught up, and only then does the server
// start its apiserver, controllers (in the same leader election) and node.
//
// The server token is the token in <data-dir>/server/token: the server's
// own join token, which a joining server writes to its data dir too, so
// every server of the cluster holds the same. Only it lets a server join
// (the endpoints compare it with their own, sent as HTTP basic auth, user
// "server", as k3s does); bootstrap tokens from `k1s token create` let
// agents join and nothing more.

const (
	// ServerBootstrapPath serves a joining server the files every server
	// shares (k3s's /v1-k3s/server-bootstrap).
	ServerBootstrapPath = "/v1-k1s/server-bootstrap"
	// EtcdMembersPath lists the etcd members (GET) and adds a joining
	// server's member as a learner (POST).
	EtcdMembersPath = "/v1-k1s/etcd-members"
	// serverTokenUser is the basic-auth user of the server token.
	serverTokenUser = "server"
)

// sharedFiles are the files every server of a cluster holds alike: the
// CAs with their keys (each server issues its own certificates from them)
// and the service-account signing key under <data-dir>/server/tls (named
// relative to it), the request-header CA when the cluster has one, and the
// secrets encryption configuration when the cluster encrypts Secrets (as
// k3s's bootstrap data carries it), named relative to <data-dir>/server.
var sharedFiles = []struct {
	name     string
	optional bool
}{
	{"server-ca.crt", false}, {"server-ca.key", false},
	{"client-ca.crt", false}, {"client-ca.key", false},
	{"request-header-ca.crt", true}, {"request-header-ca.key", true},
	{"etcd/server-ca.crt", false}, {"etcd/server-ca.key", false},
	{"service.key", false},
	{encryptionConfigShared, true},
}

// encryptionConfigShared is the shared name of the secrets encryption
// configuration, <data-dir>/server/cred/encryption-config.json.
const encryptionConfigShared = "cred/encryption-config.json"

// sharedFilePath is where the shared file name lives under serverDir.
func sharedFilePath(serverDir, name string) string {
	if name == encryptionConfigShared {
		return filepath.Join(serverDir, name)
	}
	return filepath.Join(serverDir, "tls", name)
}

// bootstrapData is ServerBootstrapPath's answer.
type bootstrapData struct {
	// Files are sharedFiles by name.
	Files map[string][]byte `json:"files"`
	// Settings are the cluster-wide flags (criticalSettings): a joining
	// server must have the same.
	Settings map[string]string `json:"settings"`
}

type addMemberRequest struct {
	Name    string `json:"name"`
	PeerURL string `json:"peerURL"`
}

type addMemberResponse struct {
	// InitialCluster is etcd's initial cluster for the new member.
	InitialCluster string `json:"initialCluster"`
}

// criticalSettings are the flags every server of a cluster must agree on,
// by flag name (k3s refuses a joining server whose "critical
// configuration" differs).
func (s *Server) criticalSettings() map[string]string {
	return map[string]string{
		"cluster-cidr":            s.p.clusterCIDR.String(),
		"service-cidr":            s.p.serviceCIDR.String(),
		"service-node-port-range": s.cfg.ServiceNodePortRange,
		"cluster-dns":             s.cfg.ClusterDNS,
		"cluster-domain":          s.cfg.ClusterDomain,
		"flannel-backend":         s.cfg.FlannelBackend,
		"node-cidr-mask-size":     strconv.Itoa(s.cfg.NodeCIDRMaskSize),
		"disable":                 strings.Join(sortedNames(s.p.disabled), ","),
	}
}

// compareSettings names each flag whose value differs from the cluster's.
func compareSettings(local, cluster map[string]string) error {
	var keys []string
	for k := range local {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		if v, ok := cluster[k]; ok && v != local[k] {
			errs = append(errs, fmt.Errorf("--%s: this server has %q, the cluster %q (servers of a cluster share it)", k, local[k], v))
		}
	}
	return errors.Join(errs...)
}

// clusterEndpoints serve the servers that join this one.
type clusterEndpoints struct {
	serverDir string
	settings  map[string]string
	// etcd is this server's member; nil with an external datastore.
	etcd *etcd.Server
}

func (c *clusterEndpoints) handlers() map[string]http.Handler {
	return map[string]http.Handler{
		ServerBootstrapPath: http.HandlerFunc(c.bootstrap),
		EtcdMembersPath:     http.HandlerFunc(c.members),
	}
}

// authorized checks the server token; it answers the request when not.
func (c *clusterEndpoints) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, err := loadServerToken(c.serverDir)
	if err != nil {
		http.Error(w, "this server has no server token yet", http.StatusServiceUnavailable)
		return false
	}
	user, pass, ok := r.BasicAuth()
	if !ok || user != serverTokenUser || subtle.ConstantTimeCompare([]byte(pass), []byte(tok.Bearer())) != 1 {
		http.Error(w, "a server joins with the server token (<data-dir>/server/token of a server of the cluster); tokens from `k1s token create` only let agents join", http.StatusUnauthorized)
		return false
	}
	return true
}

func (c *clusterEndpoints) bootstrap(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	if !c.authorized(w, r) {
		return
	}
	data := bootstrapData{Files: map[string][]byte{}, Settings: c.settings}
	for _, f := range sharedFiles {
		b, err := os.ReadFile(sharedFilePath(c.serverDir, f.name))
		if errors.Is(err, fs.ErrNotExist) && f.optional {
			continue
		}
		if err != nil {
			klog.FromContext(r.Context()).Error(err, "Cannot read a file a joining server needs", "file", f.name)
			http.Error(w, "cannot read "+f.name, http.StatusInternalServerError)
			return
		}
		data.Files[f.name] = b
	}
	klog.FromContext(r.Context()).Info("A server fetched the cluster's CAs and keys", "remote", r.RemoteAddr)
	writeJSON(w, data)
}

func (c *clusterEndpoints) members(w http.ResponseWriter, r *http.Request) {
	if !c.authorized(w, r) {
		return
	}
	if c.etcd == nil {
		http.Error(w, "this server uses an external datastore (--datastore-endpoint): it has no etcd members", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		ms, err := c.etcd.Members(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, ms)
	case http.MethodPost:
		var req addMemberRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.Name == "" || !strings.HasPrefix(req.PeerURL, "https://") {
			http.Error(w, "want {name, peerURL} with an https:// peer URL", http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		initial, err := c.etcd.AddLearner(ctx, req.Name, req.PeerURL)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, addMemberResponse{InitialCluster: initial})
	default:
		http.Error(w, "GET or POST only", http.StatusMethodNotAllowed)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// clusterJoin is a server joining a cluster through one of its servers.
type clusterJoin struct {
	url    string
	tok    jointoken.Token
	client *http.Client
}

// newClusterJoin checks url's CA against the token's hash (or, when the
// data dir holds the cluster's CA already, the data dir's against it).
func newClusterJoin(ctx context.Context, url, token string, localCA []byte) (*clusterJoin, error) {
	tok, err := jointoken.Parse(token)
	if err != nil {
		return nil, fmt.Errorf("--token: %w", err)
	}
	if tok.CAHash == "" {
		return nil, errors.New("--token: a server joins with the K10… token of <data-dir>/server/token of a server of the cluster, which carries the CA's hash")
	}
	ca := localCA
	if ca != nil {
		if err := tok.Verify(ca); err != nil {
			return nil, fmt.Errorf("--token: the data dir's server CA is not the cluster's (a data dir of another cluster?): %w", err)
		}
	} else if ca, err = jointoken.FetchCA(ctx, url, tok); err != nil {
		return nil, fmt.Errorf("--server: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("--server: %s serves no CA certificate", url)
	}
	return &clusterJoin{url: strings.TrimSuffix(url, "/"), tok: tok, client: &http.Client{
		Timeout:   time.Minute,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}},
	}}, nil
}

// errRefused: the server answered and refused; trying again will not help.
var errRefused = errors.New("refused")

func (j *clusterJoin) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, j.url+path, body)
	if err != nil {
		return err
	}
	req.SetBasicAuth(serverTokenUser, j.tok.Bearer())
	req.Header.Set("Content-Type", "application/json")
	resp, err := j.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		err := fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest {
			err = fmt.Errorf("%w: %w", errRefused, err)
		}
		return err
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out)
}

// retry calls f until it succeeds, is refused, or ctx ends; the server
// joined may still be starting, or its etcd busy with another learner.
func (j *clusterJoin) retry(ctx context.Context, what string, f func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	delay := time.Second
	for {
		err := f(ctx)
		if err == nil || errors.Is(err, errRefused) {
			return err
		}
		logger.Info("Cannot "+what+" yet; trying again", "server", j.url, "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// bootstrap fetches the shared files.
func (j *clusterJoin) bootstrap(ctx context.Context) (*bootstrapData, error) {
	var data bootstrapData
	err := j.retry(ctx, "fetch the cluster's CAs and keys", func(ctx context.Context) error {
		return j.do(ctx, http.MethodGet, ServerBootstrapPath, nil, &data)
	})
	return &data, err
}

// addLearner has the cluster make room for this server's etcd member.
func (j *clusterJoin) addLearner(ctx context.Context, name, peerURL string) (string, error) {
	var resp addMemberResponse
	err := j.retry(ctx, "add this server's etcd member", func(ctx context.Context) error {
		return j.do(ctx, http.MethodPost, EtcdMembersPath, addMemberRequest{Name: name, PeerURL: peerURL}, &resp)
	})
	return resp.InitialCluster, err
}

// clusterState is what Run needs of the cluster before it starts etcd.
type clusterState struct {
	// clustered: the etcd member is one of a cluster (peers on the node's
	// address, TLS).
	clustered bool
	// etcdName is the member's name, kept in etcdNameFile.
	etcdName string
	// initialCluster joins the member into an existing cluster.
	initialCluster string
}

// etcdNameFile, in <data-dir>/server/db, names the etcd member of a
// server of a cluster (<node name>-<8 hex digits>, made once, as k3s
// does); its presence keeps the member one of a cluster on every start,
// whatever the flags.
const etcdNameFile = "etcd-name"

// joinTimeout bounds the wait for the server joined (it may be starting).
var joinTimeout = 5 * time.Minute

// prepareCluster runs before the PKI: a joining server fetches the shared
// files into its data dir (on its first start) and has its etcd member
// added (until the member has data of its own).
func (s *Server) prepareCluster(ctx context.Context, token string) (clusterState, error) {
	logger := klog.FromContext(ctx)
	dbDir := filepath.Join(s.serverDir(), "db")
	_, err := os.Stat(filepath.Join(dbDir, etcdNameFile))
	st := clusterState{clustered: s.cfg.ClusterInit || s.cfg.JoinServer != "" || err == nil}
	if st.clustered && s.cfg.DatastoreEndpoint == "" {
		if st.etcdName, err = s.etcdName(dbDir); err != nil {
			return st, err
		}
	}
	if s.cfg.JoinServer == "" {
		return st, nil
	}
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	tlsDir := filepath.Join(s.serverDir(), "tls")
	localCA, err := os.ReadFile(filepath.Join(tlsDir, "server-ca.crt"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, err
	}
	_, keyErr := os.Stat(filepath.Join(tlsDir, "server-ca.key"))
	bootstrapped := err == nil && keyErr == nil
	j, err := newClusterJoin(ctx, s.cfg.JoinServer, token, localCA)
	if err != nil {
		return st, err
	}
	if !bootstrapped {
		logger.Info("Joining the cluster of a server", "server", s.cfg.JoinServer)
		data, err := j.bootstrap(ctx)
		if err != nil {
			return st, fmt.Errorf("join %s: %w", s.cfg.JoinServer, err)
		}
		if err := compareSettings(s.criticalSettings(), data.Settings); err != nil {
			return st, fmt.Errorf("join %s: %w", s.cfg.JoinServer, err)
		}
		if _, encrypts := data.Files[encryptionConfigShared]; s.cfg.SecretsEncryption && !encrypts {
			// A key of its own would make the Secrets it writes
			// unreadable to the other servers.
			return st, fmt.Errorf("join %s: --secrets-encryption: the cluster does not encrypt Secrets; join without it, then run `k1s secrets-encrypt enable` on the first server", s.cfg.JoinServer)
		}
		for _, f := range sharedFiles {
			b, ok := data.Files[f.name]
			if !ok {
				if f.optional {
					continue
				}
				return st, fmt.Errorf("join %s: the server sent no %s", s.cfg.JoinServer, f.name)
			}
			mode := os.FileMode(0o644)
			if strings.HasSuffix(f.name, ".key") || f.name == encryptionConfigShared {
				mode = 0o600
			}
			if err := pki.WriteFileAtomic(sharedFilePath(s.serverDir(), f.name), b, mode); err != nil {
				return st, err
			}
		}
		// The server token, for this server's join endpoints and its
		// agents: the cluster's.
		if err := writeJoinToken(s.serverDir(), j.tok); err != nil {
			return st, err
		}
	}
	if s.cfg.DatastoreEndpoint != "" {
		return st, nil
	}
	if _, err := os.Stat(filepath.Join(dbDir, "etcd", "member")); err == nil {
		return st, nil // a member already: it knows its cluster
	}
	peerURL := etcd.PeerURL(s.p.nodeIP, s.cfg.EtcdPeerPort)
	logger.Info("Adding this server's etcd member to the cluster", "name", st.etcdName, "peerURL", peerURL)
	if st.initialCluster, err = j.addLearner(ctx, st.etcdName, peerURL); err != nil {
		return st, fmt.Errorf("join %s: %w", s.cfg.JoinServer, err)
	}
	return st, nil
}

// etcdName reads the member's name, or makes and keeps one.
func (s *Server) etcdName(dbDir string) (string, error) {
	path := filepath.Join(dbDir, etcdNameFile)
	if b, err := os.ReadFile(path); err == nil {
		if name := strings.TrimSpace(string(b)); name != "" {
			return name, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	id := make([]byte, 4)
	if _, err := rand.Read(id); err != nil {
		return "", err
	}
	name := s.cfg.NodeName + "-" + hex.EncodeToString(id)
	if err := pki.WriteFileAtomic(path, []byte(name+"\n"), 0o600); err != nil {
		return "", err
	}
	return name, nil
}

// loadServerToken reads the server's join token (the server token).
func loadServerToken(serverDir string) (jointoken.Token, error) {
	data, err := os.ReadFile(filepath.Join(serverDir, joinTokenFiles[0]))
	if err != nil {
		return jointoken.Token{}, err
	}
	return jointoken.Parse(string(data))
}

// localURL is how this machine's clients reach the apiserver: the bind
// address, or loopback when it binds every address (k3s's).
func localURL(bind net.IP, port int) string {
	host := "127.0.0.1"
	if !bind.IsUnspecified() {
		host = bind.String()
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}
