package pki

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLeavesListsEveryFile: Leaves and CANames name exactly the
// certificates Ensure and IssueNodeCerts write.
func TestLeavesListsEveryFile(t *testing.T) {
	cfg := testConfig(t)
	c := mustEnsure(t, cfg)
	nodeDir := filepath.Join(filepath.Dir(cfg.Dir), "node")
	if _, err := c.IssueNodeCerts(nodeDir, "n1", "n1", nil); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range CANames {
		want = append(want, filepath.Join(cfg.Dir, name+".crt"))
	}
	for _, l := range Leaves {
		dir := cfg.Dir
		if l.Node {
			dir = nodeDir
		}
		want = append(want, filepath.Join(dir, l.Name+".crt"))
		if _, err := os.Stat(filepath.Join(dir, l.Name+".key")); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
	}
	var got []string
	for _, dir := range []string{cfg.Dir, nodeDir} {
		err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
			if strings.HasSuffix(path, ".crt") {
				got = append(got, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("certificate files\n got %v\nwant %v", got, want)
	}
	if s := Services(); !slices.Equal(s, []string{"api-server", "admin", "controller-manager", "scheduler", "auth-proxy", "etcd", "kubelet", "kube-proxy"}) {
		t.Errorf("Services() = %v", s)
	}
}

func TestInspect(t *testing.T) {
	now := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, tc := range []struct {
		name     string
		nb, na   time.Time
		ca       bool
		usages   []x509.ExtKeyUsage
		want     Status
		wantUses string
	}{
		{"ok", now.Add(-day), now.Add(365 * day), false, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, StatusOK, "ServerAuth,ClientAuth"},
		{"ninety-one days left", now.Add(-day), now.Add(91 * day), false, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, StatusOK, "ClientAuth"},
		{"within ninety days", now.Add(-day), now.Add(89 * day), false, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, StatusWarning, "ClientAuth"},
		{"ten minutes left", now.Add(-time.Hour), now.Add(10 * time.Minute), false, nil, StatusWarning, ""},
		{"expired", now.Add(-2 * day), now.Add(-day), false, nil, StatusExpired, ""},
		{"expires now", now.Add(-day), now, false, nil, StatusExpired, ""},
		{"not yet valid", now.Add(day), now.Add(2 * day), false, nil, StatusNotYetValid, ""},
		{"CA", now.Add(-day), now.Add(3650 * day), true, nil, StatusOK, "CertSign"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, _, err := newKey()
			if err != nil {
				t.Fatal(err)
			}
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
				NotBefore: tc.nb, NotAfter: tc.na, ExtKeyUsage: tc.usages, IsCA: tc.ca, BasicConstraintsValid: tc.ca}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "c.crt")
			if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := Inspect(path, now)
			if err != nil {
				t.Fatal(err)
			}
			if in.Status != tc.want || strings.Join(in.Usages, ",") != tc.wantUses || in.Subject != "CN=system:node:n1,O=system:nodes" || !in.NotAfter.Equal(tc.na) {
				t.Errorf("Inspect = %+v, want status %s usages %q", in, tc.want, tc.wantUses)
			}
		})
	}
	if _, err := Inspect(filepath.Join(t.TempDir(), "missing.crt"), now); err == nil {
		t.Errorf("Inspect of a missing file: no error")
	}
}

// TestRenewBefore: Ensure and IssueNodeCerts issue again every leaf with
// less than RenewBefore left, never a CA; RenewalDue says when.
func TestRenewBefore(t *testing.T) {
	cfg := testConfig(t)
	nodeDir := filepath.Join(filepath.Dir(cfg.Dir), "node")
	files := func(c *Cluster) map[string]*x509.Certificate {
		t.Helper()
		nc, err := c.IssueNodeCerts(nodeDir, "n1", "n1", nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*x509.Certificate{}
		for _, ck := range []CertKey{c.APIServerServing, c.Admin, c.Controller, c.Scheduler, c.APIServerClient, c.EtcdServer, c.EtcdClient, nc.Client, nc.Proxy, nc.Serving,
			{CertFile: c.ServerCA.CertFile}, {CertFile: c.ClientCA.CertFile}, {CertFile: c.EtcdCA.CertFile}} {
			out[ck.CertFile] = readCert(t, ck.CertFile)
		}
		return out
	}
	first := files(mustEnsure(t, cfg))
	for _, tc := range []struct {
		name        string
		renewBefore time.Duration
		renewed     bool
	}{
		{"default: a year left is plenty", 0, false},
		{"just under the time left: not yet", LeafValidity - time.Hour - time.Minute, false},
		{"more than the life: every leaf", LeafValidity + time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg.RenewBefore = tc.renewBefore
			before := files(mustEnsure(t, Config{Dir: cfg.Dir, Hostname: cfg.Hostname, IPs: cfg.IPs, ServiceIP: cfg.ServiceIP, SANs: cfg.SANs, ClusterDomain: cfg.ClusterDomain}))
			after := files(mustEnsure(t, cfg))
			for path, c := range after {
				ca := c.IsCA
				if same := c.Equal(before[path]); same == (tc.renewed && !ca) {
					t.Errorf("%s: renewed %v, want %v", path, !same, tc.renewed && !ca)
				}
				if ca && !c.Equal(first[path]) {
					t.Errorf("%s: a CA was issued again", path)
				}
				due, err := RenewalDue(path, tc.renewBefore)
				if err != nil {
					t.Fatal(err)
				}
				want := c.NotAfter.Add(-tc.renewBefore)
				if tc.renewBefore == 0 {
					want = c.NotAfter.Add(-DefaultRenewBefore)
				}
				if !due.Equal(want) {
					t.Errorf("%s: RenewalDue = %s, want %s", path, due, want)
				}
			}
		})
	}
}
