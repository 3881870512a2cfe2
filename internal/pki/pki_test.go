package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/cert"
)

func testConfig(t *testing.T) Config {
	t.Helper()
	return Config{
		Dir:           filepath.Join(t.TempDir(), "tls"),
		Hostname:      "node-a",
		IPs:           []net.IP{net.ParseIP("192.0.2.10")},
		ServiceIP:     net.ParseIP("10.43.0.1"),
		SANs:          []string{"k1s.example.com", "198.51.100.7"},
		ClusterDomain: "corp.local",
	}
}

func mustEnsure(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	c, err := Ensure(cfg)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return c
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := cert.CertsFromFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if len(certs) != 1 {
		t.Fatalf("%s holds %d certificates, want 1", path, len(certs))
	}
	return certs[0]
}

func ipStrings(ips []net.IP) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	slices.Sort(out)
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// checkValidity asserts NotAfter is about now+validity and NotBefore is in the past.
func checkValidity(t *testing.T, name string, c *x509.Certificate, validity time.Duration) {
	t.Helper()
	want := time.Now().Add(validity)
	if d := c.NotAfter.Sub(want); d > time.Minute || d < -time.Minute {
		t.Errorf("%s: NotAfter %v, want about %v", name, c.NotAfter, want)
	}
	if !c.NotBefore.Before(time.Now()) {
		t.Errorf("%s: NotBefore %v is not in the past", name, c.NotBefore)
	}
}

func TestEnsureCAs(t *testing.T) {
	cfg := testConfig(t)
	c := mustEnsure(t, cfg)
	tests := []struct {
		name     string
		ca       *CA
		certFile string
		cnPrefix string
	}{
		{"server CA", c.ServerCA, filepath.Join(cfg.Dir, "server-ca.crt"), "k1s-server-ca@"},
		{"client CA", c.ClientCA, filepath.Join(cfg.Dir, "client-ca.crt"), "k1s-client-ca@"},
		{"etcd CA", c.EtcdCA, filepath.Join(cfg.Dir, "etcd", "server-ca.crt"), "etcd-server-ca@"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.ca.CertFile != tt.certFile {
				t.Errorf("CertFile = %s, want %s", tt.ca.CertFile, tt.certFile)
			}
			if want := strings.TrimSuffix(tt.certFile, ".crt") + ".key"; tt.ca.KeyFile != want {
				t.Errorf("KeyFile = %s, want %s", tt.ca.KeyFile, want)
			}
			onDisk := readCert(t, tt.certFile)
			if !onDisk.Equal(tt.ca.Cert) {
				t.Errorf("returned certificate differs from %s", tt.certFile)
			}
			if !strings.HasPrefix(onDisk.Subject.CommonName, tt.cnPrefix) {
				t.Errorf("CN = %q, want prefix %q", onDisk.Subject.CommonName, tt.cnPrefix)
			}
			if !onDisk.IsCA || !onDisk.BasicConstraintsValid {
				t.Errorf("IsCA=%v BasicConstraintsValid=%v, want both true", onDisk.IsCA, onDisk.BasicConstraintsValid)
			}
			if onDisk.KeyUsage&x509.KeyUsageCertSign == 0 {
				t.Errorf("KeyUsage %v lacks CertSign", onDisk.KeyUsage)
			}
			if err := onDisk.CheckSignatureFrom(onDisk); err != nil {
				t.Errorf("CA is not self-signed: %v", err)
			}
			checkValidity(t, tt.name, onDisk, CAValidity)
			pub, ok := tt.ca.Key.Public().(*ecdsa.PublicKey)
			if !ok || !pub.Equal(onDisk.PublicKey) {
				t.Errorf("CA key does not match its certificate")
			}
		})
	}
	if c.ServerCA.Cert.Equal(c.ClientCA.Cert) || c.ServerCA.Cert.Equal(c.EtcdCA.Cert) {
		t.Errorf("the three CAs must be distinct")
	}
}

func TestEnsureLeaves(t *testing.T) {
	cfg := testConfig(t)
	c := mustEnsure(t, cfg)
	serving := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.corp.local", "node-a", "k1s.example.com"}
	servingIPs := []string{"127.0.0.1", "::1", "192.0.2.10", "10.43.0.1", "198.51.100.7"}
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	tests := []struct {
		name  string
		ck    CertKey
		file  string
		ca    *CA
		cn    string
		org   []string
		dns   []string
		ips   []string
		usage []x509.ExtKeyUsage
	}{
		{"apiserver serving", c.APIServerServing, "serving-kube-apiserver", c.ServerCA, "kube-apiserver", nil, serving, servingIPs, server},
		{"admin", c.Admin, "client-admin", c.ClientCA, "system:admin", []string{"system:masters"}, nil, nil, client},
		{"controller", c.Controller, "client-controller", c.ClientCA, "system:kube-controller-manager", nil, nil, nil, client},
		{"scheduler", c.Scheduler, "client-scheduler", c.ClientCA, "system:kube-scheduler", nil, nil, nil, client},
		{"apiserver client", c.APIServerClient, "client-kube-apiserver", c.ClientCA, "system:k1s-apiserver", []string{"system:k1s-apiservers"}, nil, nil, client},
		{"auth proxy", c.AuthProxyClient, "client-auth-proxy", c.RequestHeaderCA, "system:auth-proxy", nil, nil, nil, client},
		{"etcd server", c.EtcdServer, "etcd/server-client", c.EtcdCA, "etcd-server", nil, []string{"localhost"}, []string{"127.0.0.1"},
			[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{"etcd client", c.EtcdClient, "etcd/client", c.EtcdCA, "etcd-client", nil, nil, nil, client},
		{"etcd peer", c.EtcdPeer, "etcd/peer-server-client", c.EtcdCA, "etcd-peer", nil, []string{"localhost", "node-a"}, []string{"127.0.0.1", "192.0.2.10"},
			[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if want := filepath.Join(cfg.Dir, tt.file+".crt"); tt.ck.CertFile != want {
				t.Errorf("CertFile = %s, want %s", tt.ck.CertFile, want)
			}
			if want := filepath.Join(cfg.Dir, tt.file+".key"); tt.ck.KeyFile != want {
				t.Errorf("KeyFile = %s, want %s", tt.ck.KeyFile, want)
			}
			leaf := readCert(t, tt.ck.CertFile)
			if err := leaf.CheckSignatureFrom(tt.ca.Cert); err != nil {
				t.Errorf("not signed by %s: %v", tt.ca.Cert.Subject.CommonName, err)
			}
			if leaf.IsCA {
				t.Errorf("leaf is a CA")
			}
			if leaf.Subject.CommonName != tt.cn {
				t.Errorf("CN = %q, want %q", leaf.Subject.CommonName, tt.cn)
			}
			if !slices.Equal(leaf.Subject.Organization, tt.org) {
				t.Errorf("O = %v, want %v", leaf.Subject.Organization, tt.org)
			}
			if got := sorted(leaf.DNSNames); !slices.Equal(got, sorted(tt.dns)) {
				t.Errorf("DNS SANs = %v, want %v", got, sorted(tt.dns))
			}
			if got := ipStrings(leaf.IPAddresses); !slices.Equal(got, sorted(tt.ips)) {
				t.Errorf("IP SANs = %v, want %v", got, sorted(tt.ips))
			}
			if !slices.Equal(leaf.ExtKeyUsage, tt.usage) {
				t.Errorf("ExtKeyUsage = %v, want %v", leaf.ExtKeyUsage, tt.usage)
			}
			if leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
				t.Errorf("KeyUsage %v lacks DigitalSignature", leaf.KeyUsage)
			}
			checkValidity(t, tt.name, leaf, LeafValidity)
			// The certificate verifies for its usage and pairs with the key on disk.
			pool := x509.NewCertPool()
			pool.AddCert(tt.ca.Cert)
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: tt.usage}); err != nil {
				t.Errorf("verify against CA: %v", err)
			}
			if _, err := tlsPair(tt.ck); err != nil {
				t.Errorf("certificate and key do not pair: %v", err)
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tlsPair(ck CertKey) (any, error) {
	return rest.TLSConfigFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CertFile: ck.CertFile, KeyFile: ck.KeyFile}})
}

func TestEnsureFileModes(t *testing.T) {
	cfg := testConfig(t)
	mustEnsure(t, cfg)
	var keys, certs int
	err := filepath.WalkDir(cfg.Dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch filepath.Ext(path) {
		case ".key":
			keys++
			if info.Mode().Perm() != 0o600 {
				t.Errorf("%s mode %v, want 0600", path, info.Mode().Perm())
			}
		case ".crt":
			certs++
			if info.Mode().Perm() != 0o644 {
				t.Errorf("%s mode %v, want 0644", path, info.Mode().Perm())
			}
		default:
			t.Errorf("unexpected file %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 4 CAs and 9 leaves.
	if keys != 13 || certs != 13 {
		t.Errorf("got %d keys and %d certificates, want 13 of each", keys, certs)
	}
	for _, dir := range []string{cfg.Dir, filepath.Join(cfg.Dir, "etcd")} {
		info, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o700 {
			t.Errorf("%s mode %v, want 0700", dir, info.Mode().Perm())
		}
	}
}

type fileState struct {
	data  []byte
	mtime time.Time
}

func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = fileState{data: data, mtime: info.ModTime()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// changed lists the files whose content or mtime differ, plus added or removed ones.
func changed(before, after map[string]fileState) []string {
	var out []string
	for name, b := range before {
		a, ok := after[name]
		if !ok || !bytes.Equal(a.data, b.data) || !a.mtime.Equal(b.mtime) {
			out = append(out, name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func TestEnsureReissue(t *testing.T) {
	tests := []struct {
		name string
		// change alters the config or the directory before the second Ensure.
		change func(t *testing.T, cfg *Config)
		want   []string
	}{
		{
			name:   "same config rewrites nothing",
			change: func(*testing.T, *Config) {},
		},
		{
			name: "same SANs in another order and duplicated rewrite nothing",
			change: func(_ *testing.T, cfg *Config) {
				cfg.SANs = []string{"198.51.100.7", "k1s.example.com", "k1s.example.com"}
			},
		},
		{
			name:   "a new DNS SAN re-issues only the serving certificate",
			change: func(_ *testing.T, cfg *Config) { cfg.SANs = append(cfg.SANs, "other.example.com") },
			want:   []string{"serving-kube-apiserver.crt", "serving-kube-apiserver.key"},
		},
		{
			name:   "a new IP SAN re-issues only the serving certificate",
			change: func(_ *testing.T, cfg *Config) { cfg.SANs = append(cfg.SANs, "2001:db8::1") },
			want:   []string{"serving-kube-apiserver.crt", "serving-kube-apiserver.key"},
		},
		{
			name:   "a new hostname re-issues only the serving and etcd peer certificates",
			change: func(_ *testing.T, cfg *Config) { cfg.Hostname = "node-b" },
			want:   []string{"serving-kube-apiserver.crt", "serving-kube-apiserver.key", "etcd/peer-server-client.crt", "etcd/peer-server-client.key"},
		},
		{
			name:   "a removed node IP re-issues only the serving and etcd peer certificates",
			change: func(_ *testing.T, cfg *Config) { cfg.IPs = nil },
			want:   []string{"serving-kube-apiserver.crt", "serving-kube-apiserver.key", "etcd/peer-server-client.crt", "etcd/peer-server-client.key"},
		},
		{
			name: "a leaf near expiry is re-issued",
			change: func(t *testing.T, cfg *Config) {
				replaceLeaf(t, cfg.Dir, "client-admin", "client-ca", time.Now().Add(30*24*time.Hour), "system:admin", []string{"system:masters"})
			},
			want: []string{"client-admin.crt", "client-admin.key"},
		},
		{
			name: "a leaf with the wrong subject is re-issued",
			change: func(t *testing.T, cfg *Config) {
				replaceLeaf(t, cfg.Dir, "client-scheduler", "client-ca", time.Now().Add(LeafValidity), "someone-else", nil)
			},
			want: []string{"client-scheduler.crt", "client-scheduler.key"},
		},
		{
			name: "a leaf signed by another CA is re-issued",
			change: func(t *testing.T, cfg *Config) {
				// The controller certificate, signed by the server CA instead of the client CA.
				replaceLeaf(t, cfg.Dir, "client-controller", "server-ca", time.Now().Add(LeafValidity), "system:kube-controller-manager", nil)
			},
			want: []string{"client-controller.crt", "client-controller.key"},
		},
		{
			name: "a leaf whose key is missing is re-issued",
			change: func(t *testing.T, cfg *Config) {
				if err := os.Remove(filepath.Join(cfg.Dir, "etcd", "client.key")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"etcd/client.crt", "etcd/client.key"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			mustEnsure(t, cfg)
			tt.change(t, &cfg)
			before := snapshot(t, cfg.Dir)
			// Make a rewrite visible in mtimes even on coarse clocks.
			time.Sleep(5 * time.Millisecond)
			c := mustEnsure(t, cfg)
			after := snapshot(t, cfg.Dir)
			got := changed(before, after)
			want := sorted(tt.want)
			if !slices.Equal(got, want) {
				t.Errorf("files rewritten = %v, want %v", got, want)
			}
			// Whatever was re-issued is valid and signed by the right CA.
			for _, ck := range []struct {
				ck CertKey
				ca *CA
			}{{c.APIServerServing, c.ServerCA}, {c.Admin, c.ClientCA}, {c.Controller, c.ClientCA}, {c.Scheduler, c.ClientCA}, {c.EtcdClient, c.EtcdCA}} {
				leaf := readCert(t, ck.ck.CertFile)
				if err := leaf.CheckSignatureFrom(ck.ca.Cert); err != nil {
					t.Errorf("%s: %v", ck.ck.CertFile, err)
				}
				if time.Until(leaf.NotAfter) < DefaultRenewBefore {
					t.Errorf("%s still expires at %v", ck.ck.CertFile, leaf.NotAfter)
				}
				if _, err := tlsPair(ck.ck); err != nil {
					t.Errorf("%s: key does not pair: %v", ck.ck.CertFile, err)
				}
			}
			if strings.Contains(tt.name, "SAN") && len(tt.want) > 0 {
				leaf := readCert(t, c.APIServerServing.CertFile)
				names := append(slices.Clone(leaf.DNSNames), ipStrings(leaf.IPAddresses)...)
				last := cfg.SANs[len(cfg.SANs)-1]
				if ip := net.ParseIP(last); ip != nil {
					last = ip.String()
				}
				if !slices.Contains(names, last) {
					t.Errorf("serving SANs %v lack %s", names, last)
				}
			}
		})
	}
}

// replaceLeaf writes dir/name.{crt,key} signed by the CA dir/caName, valid until notAfter.
func replaceLeaf(t *testing.T, dir, name, caName string, notAfter time.Time, cn string, org []string) {
	t.Helper()
	ca, err := LoadCA(filepath.Join(dir, caName+".crt"), filepath.Join(dir, caName+".key"))
	if err != nil {
		t.Fatal(err)
	}
	key, keyPEM, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: cn, Organization: org},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteKeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"), pemCert(der), keyPEM); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureKeepsCAsAcrossRuns(t *testing.T) {
	cfg := testConfig(t)
	first := mustEnsure(t, cfg)
	cfg.SANs = append(cfg.SANs, "new.example.com")
	second := mustEnsure(t, cfg)
	for _, pair := range [][2]*CA{{first.ServerCA, second.ServerCA}, {first.ClientCA, second.ClientCA}, {first.EtcdCA, second.EtcdCA}} {
		if !pair[0].Cert.Equal(pair[1].Cert) {
			t.Errorf("CA %s was replaced", pair[0].CertFile)
		}
	}
}

func TestEnsureDefaults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	c := mustEnsure(t, Config{Dir: dir})
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	leaf := readCert(t, c.APIServerServing.CertFile)
	for _, want := range []string{host, "kubernetes.default.svc.cluster.local"} {
		if !slices.Contains(leaf.DNSNames, want) {
			t.Errorf("serving DNS SANs %v lack %s", leaf.DNSNames, want)
		}
	}
	if got := ipStrings(leaf.IPAddresses); !slices.Equal(got, []string{"127.0.0.1", "::1"}) {
		t.Errorf("serving IP SANs = %v, want only loopback", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantFlags []string
	}{
		{"valid", Config{Dir: "/x", SANs: []string{"a"}}, nil},
		{"no dir", Config{}, []string{"--data-dir"}},
		{"empty SAN", Config{Dir: "/x", SANs: []string{"a", ""}}, []string{"--tls-san"}},
		{"both", Config{SANs: []string{""}}, []string{"--data-dir", "--tls-san"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.wantFlags) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors naming %v", tt.wantFlags)
			}
			for _, f := range tt.wantFlags {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("Validate() = %q, does not name %s", err, f)
				}
			}
			// Ensure refuses the same configuration and creates nothing.
			if tt.cfg.Dir != "" {
				return
			}
			if _, err := Ensure(tt.cfg); err == nil {
				t.Errorf("Ensure accepted an invalid config")
			}
		})
	}
}

func TestEnsureUnwritableDir(t *testing.T) {
	parent := t.TempDir()
	blocker := filepath.Join(parent, "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Ensure(Config{Dir: filepath.Join(blocker, "tls"), Hostname: "h"})
	if err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("Ensure under a file = %v, want an error naming --data-dir", err)
	}
}

func TestWriteKubeconfig(t *testing.T) {
	cfg := testConfig(t)
	c := mustEnsure(t, cfg)
	tests := []struct {
		name string
		mode os.FileMode
	}{
		{"private", 0o600},
		{"group readable", 0o640},
		{"world readable", 0o644},
	}
	path := filepath.Join(t.TempDir(), "sub", "dir", "admin.kubeconfig")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The same path is rewritten with each mode in turn.
			if err := WriteKubeconfig(path, "https://127.0.0.1:6443", c.ServerCA, c.Admin, tt.mode); err != nil {
				t.Fatalf("WriteKubeconfig: %v", err)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != tt.mode {
				t.Errorf("mode %v, want %v", info.Mode().Perm(), tt.mode)
			}
			kc, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatalf("load kubeconfig: %v", err)
			}
			ctx := kc.Contexts[kc.CurrentContext]
			if ctx == nil {
				t.Fatalf("current context %q missing", kc.CurrentContext)
			}
			cluster, auth := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
			if cluster == nil || auth == nil {
				t.Fatalf("context %+v names a missing cluster or user", ctx)
			}
			if cluster.Server != "https://127.0.0.1:6443" {
				t.Errorf("server = %s", cluster.Server)
			}
			if !bytes.Equal(cluster.CertificateAuthorityData, mustRead(t, c.ServerCA.CertFile)) {
				t.Errorf("embedded CA differs from %s", c.ServerCA.CertFile)
			}
			if !bytes.Equal(auth.ClientCertificateData, mustRead(t, c.Admin.CertFile)) {
				t.Errorf("embedded certificate differs from %s", c.Admin.CertFile)
			}
			if !bytes.Equal(auth.ClientKeyData, mustRead(t, c.Admin.KeyFile)) {
				t.Errorf("embedded key differs from %s", c.Admin.KeyFile)
			}
			rc, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				t.Fatalf("client config: %v", err)
			}
			if _, err := rest.TLSConfigFor(rc); err != nil {
				t.Errorf("TLS config from kubeconfig: %v", err)
			}
			assertNoTemp(t, filepath.Dir(path))
		})
	}
}

func TestWriteKubeconfigMissingFiles(t *testing.T) {
	cfg := testConfig(t)
	c := mustEnsure(t, cfg)
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name   string
		ca     *CA
		client CertKey
		want   string
	}{
		{"CA", &CA{CertFile: missing}, c.Admin, "read CA"},
		{"certificate", c.ServerCA, CertKey{CertFile: missing, KeyFile: c.Admin.KeyFile}, "read client certificate"},
		{"key", c.ServerCA, CertKey{CertFile: c.Admin.CertFile, KeyFile: missing}, "read client key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "kc")
			err := WriteKubeconfig(out, "https://x", tt.ca, tt.client, 0o600)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("WriteKubeconfig = %v, want %q wrapping ErrNotExist", err, tt.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("kubeconfig written despite the error")
			}
		})
	}
	// An unwritable destination names the flag.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteKubeconfig(filepath.Join(blocker, "kc"), "https://x", c.ServerCA, c.Admin, 0o600)
	if err == nil || !strings.Contains(err.Error(), "--write-kubeconfig") {
		t.Errorf("WriteKubeconfig under a file = %v, want an error naming --write-kubeconfig", err)
	}
}

func TestLoadCA(t *testing.T) {
	cfg := testConfig(t)
	c := mustEnsure(t, cfg)
	tests := []struct {
		name     string
		certFile string
		keyFile  string
		want     *CA
		wantErr  error
		errText  string
	}{
		{"server CA", c.ServerCA.CertFile, c.ServerCA.KeyFile, c.ServerCA, nil, ""},
		{"client CA", c.ClientCA.CertFile, c.ClientCA.KeyFile, c.ClientCA, nil, ""},
		{"etcd CA", c.EtcdCA.CertFile, c.EtcdCA.KeyFile, c.EtcdCA, nil, ""},
		{"missing", filepath.Join(cfg.Dir, "nope.crt"), filepath.Join(cfg.Dir, "nope.key"), nil, ErrNoCA, ""},
		{"key not beside the certificate", c.ServerCA.CertFile, c.ClientCA.KeyFile, nil, nil, "does not sit beside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, err := LoadCA(tt.certFile, tt.keyFile)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("LoadCA = %v, want %v", err, tt.wantErr)
				}
				return
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("LoadCA = %v, want an error containing %q", err, tt.errText)
				}
				return
			case err != nil:
				t.Fatalf("LoadCA: %v", err)
			}
			if !ca.Cert.Equal(tt.want.Cert) {
				t.Errorf("loaded certificate differs")
			}
			if ca.CertFile != tt.want.CertFile || ca.KeyFile != tt.want.KeyFile {
				t.Errorf("files = %s %s, want %s %s", ca.CertFile, ca.KeyFile, tt.want.CertFile, tt.want.KeyFile)
			}
			// The loaded key signs certificates that verify against the CA.
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			pemBytes, err := ca.Sign(key.Public(), LeafSpec{CommonName: "node:n1", Organization: []string{"system:nodes"}, Client: true})
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			certs, err := cert.ParseCertsPEM(pemBytes)
			if err != nil {
				t.Fatal(err)
			}
			pool := x509.NewCertPool()
			pool.AddCert(tt.want.Cert)
			if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("signed certificate does not verify: %v", err)
			}
			if certs[0].Subject.CommonName != "node:n1" || !slices.Equal(certs[0].Subject.Organization, []string{"system:nodes"}) {
				t.Errorf("subject = %v", certs[0].Subject)
			}
		})
	}
}

func TestLoadCAMissingCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")); !errors.Is(err, ErrNoCA) {
		t.Fatalf("LoadCA = %v, want ErrNoCA", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("LoadCA created %d files", len(entries))
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	tests := []struct {
		name     string
		existing []byte // nil: no file before
		data     []byte
		mode     os.FileMode
	}{
		{"new file in new directory", nil, []byte("hello"), 0o600},
		{"overwrite", []byte("old"), []byte("new content"), 0o644},
		{"same content, new mode", []byte("same"), []byte("same"), 0o640},
		{"empty", []byte("something"), []byte{}, 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "a", "b")
			path := filepath.Join(dir, "file")
			if tt.existing != nil {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, tt.existing, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFileAtomic(path, tt.data, tt.mode); err != nil {
				t.Fatalf("WriteFileAtomic: %v", err)
			}
			if got := mustRead(t, path); !bytes.Equal(got, tt.data) {
				t.Errorf("content = %q, want %q", got, tt.data)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != tt.mode {
				t.Errorf("mode %v, want %v", info.Mode().Perm(), tt.mode)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("directory holds %v, want only the file", names)
			}
		})
	}
}

func TestWriteFileAtomicSameContentKeepsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := WriteFileAtomic(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if err := WriteFileAtomic(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || !before.ModTime().Equal(after.ModTime()) {
		t.Errorf("an identical write replaced the file")
	}
}

func TestWriteFileAtomicFailureLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	// The target is a non-empty directory: the rename fails.
	target := filepath.Join(dir, "target")
	if err := os.MkdirAll(filepath.Join(target, "child"), 0o700); err != nil {
		t.Fatal(err)
	}
	err := WriteFileAtomic(target, []byte("data"), 0o600)
	if err == nil || !strings.Contains(err.Error(), target) {
		t.Fatalf("WriteFileAtomic over a directory = %v, want an error naming the path", err)
	}
	assertNoTemp(t, dir)
}
