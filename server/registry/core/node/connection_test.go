package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func newPair(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "system:k1s-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// TestFileCert: the apiserver's client certificate for the agents follows
// its files; a half-written renewal or a missing file keeps the last one.
func TestFileCert(t *testing.T) {
	dir := t.TempDir()
	f := &fileCert{certFile: filepath.Join(dir, "c.crt"), keyFile: filepath.Join(dir, "c.key")}
	if _, err := f.get(nil); err == nil {
		t.Fatal("no files: no error")
	}
	write := func(name string, data []byte, mod time.Time) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now().Add(-time.Hour)
	c1, k1 := newPair(t, 1)
	c2, k2 := newPair(t, 2)
	for i, step := range []struct {
		name       string
		cert, key  []byte // nil: unchanged
		remove     bool
		wantSerial int64
	}{
		{name: "first", cert: c1, key: k1, wantSerial: 1},
		{name: "the new key written, not yet its certificate", key: k2, wantSerial: 1},
		{name: "the new certificate written", cert: c2, wantSerial: 2},
		{name: "unchanged", wantSerial: 2},
		{name: "files gone", remove: true, wantSerial: 2},
	} {
		mod := base.Add(time.Duration(i) * time.Minute)
		if step.key != nil {
			write("c.key", step.key, mod)
		}
		if step.cert != nil {
			write("c.crt", step.cert, mod)
		}
		if step.remove {
			os.Remove(f.certFile)
		}
		got, err := f.get(nil)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got.Leaf.SerialNumber.Int64() != step.wantSerial {
			t.Errorf("%s: serial %d, want %d", step.name, got.Leaf.SerialNumber, step.wantSerial)
		}
	}
}
