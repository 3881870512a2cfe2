// Package pki owns the cluster's certificate authorities, the serving and
// client certificates derived from them, and the kubeconfig files written for
// the admin and the built-in components.
//
// Everything lives under one directory (normally <data-dir>/server/tls). The
// first start creates it; later starts reuse every file and only re-issue a
// leaf whose SANs no longer match the configuration or that is close to
// expiry. CAs are valid for 10 years, leaves for 1 year.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

const (
	// CAValidity is how long a generated certificate authority is valid.
	CAValidity = 10 * 365 * 24 * time.Hour
	// LeafValidity is how long a generated serving or client certificate is valid.
	LeafValidity = 365 * 24 * time.Hour
	// DefaultRenewBefore is how close to its expiry a leaf is re-issued
	// (Config.RenewBefore's default; k3s's 90 days).
	DefaultRenewBefore = 90 * 24 * time.Hour
)

// CA is a certificate authority whose key is on disk.
type CA struct {
	Cert     *x509.Certificate
	Key      crypto.Signer
	CertFile string
	KeyFile  string
}

// CertKey names a certificate and its key on disk.
type CertKey struct {
	CertFile string
	KeyFile  string
}

// loadOrCreateCA reads the CA at dir/name.{crt,key}, or creates it.
func loadOrCreateCA(dir, name, commonName string) (*CA, error) {
	ca := &CA{
		CertFile: filepath.Join(dir, name+".crt"),
		KeyFile:  filepath.Join(dir, name+".key"),
	}
	if ok, _ := cert.CanReadCertAndKey(ca.CertFile, ca.KeyFile); ok {
		certs, err := cert.CertsFromFile(ca.CertFile)
		if err != nil {
			return nil, fmt.Errorf("read CA certificate %s: %w", ca.CertFile, err)
		}
		key, err := keyutil.PrivateKeyFromFile(ca.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("read CA key %s: %w", ca.KeyFile, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("CA key %s is not a signing key", ca.KeyFile)
		}
		ca.Cert, ca.Key = certs[0], signer
		return ca, nil
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", commonName, now.Unix())},
		NotBefore:             now.Add(-time.Hour).UTC(),
		NotAfter:              now.Add(CAValidity).UTC(),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA %s: %w", name, err)
	}
	caCert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if err := WriteKeyPair(ca.CertFile, ca.KeyFile, pemCert(der), keyPEM); err != nil {
		return nil, err
	}
	ca.Cert, ca.Key = caCert, key
	return ca, nil
}

// LoadCA reads a CA certificate and its key.
func LoadCA(certFile, keyFile string) (*CA, error) {
	if ok, _ := cert.CanReadCertAndKey(certFile, keyFile); !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoCA, certFile)
	}
	dir := filepath.Dir(certFile)
	name := strings.TrimSuffix(filepath.Base(certFile), ".crt")
	if filepath.Join(dir, name+".key") != keyFile {
		return nil, fmt.Errorf("CA key %s does not sit beside %s", keyFile, certFile)
	}
	return loadOrCreateCA(dir, name, "")
}

// LeafSpec describes a certificate signed by a CA.
type LeafSpec struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	Server       bool
	Client       bool
}

// ensureLeaf writes dir/name.{crt,key} signed by ca unless a matching
// certificate with at least renewBefore (0: DefaultRenewBefore) left is
// already there.
func (ca *CA) ensureLeaf(dir, name string, spec LeafSpec, renewBefore time.Duration) (CertKey, error) {
	if renewBefore == 0 {
		renewBefore = DefaultRenewBefore
	}
	ck := CertKey{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	if ok, _ := cert.CanReadCertAndKey(ck.CertFile, ck.KeyFile); ok {
		certs, err := cert.CertsFromFile(ck.CertFile)
		if err == nil && leafMatches(certs[0], ca, spec, renewBefore) {
			return ck, nil
		}
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return ck, err
	}
	der, err := ca.sign(key.Public(), spec)
	if err != nil {
		return ck, fmt.Errorf("issue certificate %s: %w", name, err)
	}
	return ck, WriteKeyPair(ck.CertFile, ck.KeyFile, pemCert(der), keyPEM)
}

// Sign issues a certificate for pub. It is used for node certificates that
// are not kept in the PKI directory.
func (ca *CA) Sign(pub crypto.PublicKey, spec LeafSpec) ([]byte, error) {
	der, err := ca.sign(pub, spec)
	if err != nil {
		return nil, err
	}
	return pemCert(der), nil
}

func (ca *CA) sign(pub crypto.PublicKey, spec LeafSpec) ([]byte, error) {
	now := time.Now()
	var usage []x509.ExtKeyUsage
	if spec.Server {
		usage = append(usage, x509.ExtKeyUsageServerAuth)
	}
	if spec.Client {
		usage = append(usage, x509.ExtKeyUsageClientAuth)
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		DNSNames:     spec.DNSNames,
		IPAddresses:  spec.IPs,
		NotBefore:    now.Add(-time.Hour).UTC(),
		NotAfter:     now.Add(LeafValidity).UTC(),
		KeyUsage:     x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
	return x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
}

func leafMatches(c *x509.Certificate, ca *CA, spec LeafSpec, renewBefore time.Duration) bool {
	if time.Until(c.NotAfter) < renewBefore {
		return false
	}
	if c.CheckSignatureFrom(ca.Cert) != nil {
		return false
	}
	if c.Subject.CommonName != spec.CommonName || !sameStrings(c.Subject.Organization, spec.Organization) {
		return false
	}
	if !sameStrings(c.DNSNames, spec.DNSNames) {
		return false
	}
	var have, want []string
	for _, ip := range c.IPAddresses {
		have = append(have, ip.String())
	}
	for _, ip := range spec.IPs {
		want = append(want, ip.String())
	}
	return sameStrings(have, want)
}

func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func newKey() (crypto.Signer, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: keyutil.ECPrivateKeyBlockType, Bytes: der}), nil
}

func newSerial() *big.Int {
	n, err := rand.Int(rand.Reader, big.NewInt(math.MaxInt64))
	if err != nil {
		// crypto/rand does not fail on Linux; fall back to the clock.
		return big.NewInt(time.Now().UnixNano())
	}
	return n.Add(n, big.NewInt(1))
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der})
}

// WriteKeyPair replaces a certificate and its key: both are written to
// temporary files first, then renamed into place, the key first, so that
// a crash never leaves a certificate without its key and a reader that
// watches the files (a server reloading its certificate) sees them
// mismatched for as short a time as can be.
func WriteKeyPair(certFile, keyFile string, certPEM, keyPEM []byte) error {
	keyTmp, err := writeTemp(keyFile, keyPEM, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(keyTmp)
	certTmp, err := writeTemp(certFile, certPEM, 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(certTmp)
	if err := os.Rename(keyTmp, keyFile); err != nil {
		return fmt.Errorf("write %s: %w", keyFile, err)
	}
	if err := os.Rename(certTmp, certFile); err != nil {
		return fmt.Errorf("write %s: %w", certFile, err)
	}
	return nil
}

// WriteFileAtomic writes data to path through a temporary file and a rename,
// creating the parent directory, so readers never see a partial file.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return os.Chmod(path, mode)
	}
	tmp, err := writeTemp(path, data, mode)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeTemp writes data, synced, to a new temporary file beside path (its
// directory made if missing) and returns its name.
func writeTemp(path string, data []byte, mode os.FileMode) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	err = tmp.Chmod(mode)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return tmp.Name(), nil
}

// ErrNoCA is returned when a CA was expected on disk and is missing.
var ErrNoCA = errors.New("certificate authority not found")
