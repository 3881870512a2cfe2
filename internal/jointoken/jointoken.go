// Package jointoken is the join token's format, which the server writes and
// an agent reads: "K10<hash>::<token>", k3s's secure token layout, where
// <hash> is the hex SHA-256 of the CA bundle the server serves at /cacerts
// and <token> is a bootstrap token "<id>.<secret>" (kubeadm's format). The
// agent fetches the bundle without trust and sends its token only once the
// bundle's hash matches. A bare bootstrap token (no K10 prefix) carries no
// hash: the agent then needs the CA from elsewhere (--ca-file).
// FetchCA is that check, shared by a joining agent and a joining server.
package jointoken

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

const prefix = "K10"

// Token is a parsed join token.
type Token struct {
	// CAHash is the hex SHA-256 of the CA bundle; empty for a bare token.
	CAHash string
	// ID and Secret are the bootstrap token's parts.
	ID, Secret string
}

// Bearer is the credential sent to the apiserver.
func (t Token) Bearer() string { return t.ID + "." + t.Secret }

// String formats t.
func (t Token) String() string {
	if t.CAHash == "" {
		return t.Bearer()
	}
	return prefix + t.CAHash + "::" + t.Bearer()
}

// New makes a token for a CA bundle and a bootstrap token "<id>.<secret>".
func New(caBundle []byte, bootstrap string) (Token, error) {
	id, secret, err := splitBootstrap(bootstrap)
	if err != nil {
		return Token{}, err
	}
	return Token{CAHash: Hash(caBundle), ID: id, Secret: secret}, nil
}

// Hash is the hex SHA-256 of a CA bundle as it is served.
func Hash(caBundle []byte) string {
	sum := sha256.Sum256(caBundle)
	return hex.EncodeToString(sum[:])
}

// Parse reads a join token (surrounding white space ignored).
func Parse(s string) (Token, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Token{}, errors.New("the join token is empty")
	}
	var t Token
	if strings.HasPrefix(s, prefix) {
		hash, rest, ok := strings.Cut(strings.TrimPrefix(s, prefix), "::")
		if !ok {
			return Token{}, errors.New(`the join token starts with "K10" but has no "::" after the CA hash`)
		}
		if b, err := hex.DecodeString(hash); err != nil || len(b) != sha256.Size {
			return Token{}, errors.New("the join token's CA hash is not a hex SHA-256")
		}
		t.CAHash = strings.ToLower(hash)
		s = rest
	}
	id, secret, err := splitBootstrap(s)
	if err != nil {
		return Token{}, err
	}
	t.ID, t.Secret = id, secret
	return t, nil
}

func splitBootstrap(s string) (id, secret string, err error) {
	if !bootstraputil.IsValidBootstrapToken(s) {
		return "", "", fmt.Errorf("the join token's credentials are not a bootstrap token %q", bootstrapapi.BootstrapTokenPattern)
	}
	id, secret, _ = strings.Cut(s, ".")
	return id, secret, nil
}

// Verify reports whether caBundle is the one t was made for.
func (t Token) Verify(caBundle []byte) error {
	if t.CAHash == "" {
		return errors.New("the join token has no CA hash: give the server's CA with --ca-file")
	}
	if subtle.ConstantTimeCompare([]byte(Hash(caBundle)), []byte(t.CAHash)) != 1 {
		return errors.New("the server's CA does not match the join token's CA hash: wrong server, or a token of another cluster")
	}
	return nil
}

// CACertsPath is where a server serves its CA bundle to anyone (k3s's
// /cacerts).
const CACertsPath = "/cacerts"

// FetchCA fetches the CA bundle server serves at CACertsPath, without
// trusting the connection, and returns it once it matches t's hash.
// Nothing secret is sent.
func FetchCA(ctx context.Context, server string, t Token) ([]byte, error) {
	if t.CAHash == "" {
		return nil, errors.New("the token carries no CA hash (a bare bootstrap token): give the server's CA with --ca-file, or use the K10… token from the server's <data-dir>/server/token")
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // checked against the token below
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(server, "/")+CACertsPath, nil)
	if err != nil {
		return nil, fmt.Errorf("--server: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the server's CA from %s: %w", server, err)
	}
	defer resp.Body.Close()
	ca, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the server's CA from %s: status %d %v", server, resp.StatusCode, err)
	}
	if err := t.Verify(ca); err != nil {
		return nil, err
	}
	return ca, nil
}

// ClusterInfoName is the ConfigMap in kube-public that tells a joining
// agent the cluster's settings (any authenticated client may read it).
const ClusterInfoName = "k1s-cluster-info"

// Keys of the cluster-info ConfigMap.
const (
	ClusterInfoClusterCIDR    = "cluster-cidr"
	ClusterInfoServiceCIDR    = "service-cidr"
	ClusterInfoClusterDNS     = "cluster-dns"
	ClusterInfoClusterDomain  = "cluster-domain"
	ClusterInfoFlannelBackend = "flannel-backend"
	// ClusterInfoClientCA is the client CA bundle (PEM): a node checks
	// with it the apiserver's client certificate on its :10250.
	ClusterInfoClientCA = "client-ca.crt"
	// ClusterInfoNodeDNS is "false" when the server runs no cluster DNS
	// (--disable=coredns): nodes then run none either.
	ClusterInfoNodeDNS = "node-dns"
)
