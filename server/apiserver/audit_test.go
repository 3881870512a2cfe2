package apiserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditConfigValidate(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badPolicy := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badPolicy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "audit.log")
	tests := []struct {
		name string
		cfg  AuditConfig
		want string // substring of the error; "" for none
	}{
		{"none", AuditConfig{}, ""},
		{"log and policy", AuditConfig{LogPath: log, PolicyFile: policy, Format: "json"}, ""},
		{"stdout, legacy", AuditConfig{LogPath: "-", PolicyFile: policy, Format: "legacy"}, ""},
		{"missing policy", AuditConfig{LogPath: log, PolicyFile: filepath.Join(dir, "none.yaml")}, "--audit-policy-file: "},
		{"policy that does not parse", AuditConfig{LogPath: log, PolicyFile: badPolicy}, "--audit-policy-file: "},
		{"bad format", AuditConfig{LogPath: log, PolicyFile: policy, Format: "xml"}, `--audit-log-format: "xml"`},
		{"negative max age", AuditConfig{LogPath: log, PolicyFile: policy, MaxAge: -1}, "--audit-log-maxage: -1"},
		{"negative max backups", AuditConfig{LogPath: log, PolicyFile: policy, MaxBackups: -1}, "--audit-log-maxbackup: -1"},
		{"negative max size", AuditConfig{LogPath: log, PolicyFile: policy, MaxSize: -1}, "--audit-log-maxsize: -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate: %v, want %q", err, tt.want)
			}
		})
	}
}
