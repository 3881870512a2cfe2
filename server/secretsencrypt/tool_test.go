package secretsencrypt

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// layout is the secrets' providers as "aescbc[k1,k2] identity".
func layout(t *testing.T, dataDir string) string {
	t.Helper()
	cfg, _, err := readConfig(ConfigPath(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, p := range *secretsProviders(cfg) {
		names := func(keys []apiserverv1.Key) string {
			var n []string
			for _, k := range keys {
				n = append(n, k.Name)
			}
			return "[" + strings.Join(n, ",") + "]"
		}
		switch {
		case p.AESCBC != nil:
			parts = append(parts, "aescbc"+names(p.AESCBC.Keys))
		case p.Secretbox != nil:
			parts = append(parts, "secretbox"+names(p.Secretbox.Keys))
		case p.Identity != nil:
			parts = append(parts, "identity")
		}
	}
	return strings.Join(parts, " ")
}

func TestEnsure(t *testing.T) {
	for _, provider := range []string{ProviderAESCBC, ProviderSecretbox} {
		t.Run(provider, func(t *testing.T) {
			dir := t.TempDir()
			path, err := Ensure(dir, provider)
			if err != nil {
				t.Fatal(err)
			}
			if want := provider + "[" + provider + "key] identity"; layout(t, dir) != want {
				t.Errorf("layout %q, want %q", layout(t, dir), want)
			}
			st, err := os.Stat(path)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("file mode: %v %v", st, err)
			}
			before, _ := os.ReadFile(path)
			var parsed map[string]any
			if err := json.Unmarshal(before, &parsed); err != nil || parsed["kind"] != "EncryptionConfiguration" || parsed["apiVersion"] != "apiserver.config.k8s.io/v1" {
				t.Fatalf("file %s: %v", before, err)
			}
			// A second start keeps the key.
			if _, err := Ensure(dir, provider); err != nil {
				t.Fatal(err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("Ensure rewrote an existing file")
			}
		})
	}
	if _, err := Ensure(t.TempDir(), "aesgcm"); err == nil || !strings.Contains(err.Error(), "--secrets-encryption-provider") {
		t.Errorf("Ensure aesgcm: %v, want the flag named", err)
	}
}

func TestSteps(t *testing.T) {
	dir := t.TempDir()
	if _, err := Ensure(dir, ProviderAESCBC); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tool := &Tool{DataDir: dir, Clock: clocktesting.NewFakeClock(now)}
	newKey := "aescbckey-2026-01-02T03:04:05Z"
	steps := []struct {
		name   string
		run    func() error
		want   string // layout after
		stage  string
		errSub string
	}{
		{"rotate before prepare", tool.Rotate, "aescbc[aescbckey] identity", StageStart, "run `k1s secrets-encrypt prepare` first"},
		{"disable", tool.Disable, "identity aescbc[aescbckey]", StageStart, ""},
		{"enable", tool.Enable, "aescbc[aescbckey] identity", StageStart, ""},
		{"prepare", tool.Prepare, "aescbc[aescbckey," + newKey + "] identity", StagePrepare, ""},
		{"prepare twice", tool.Prepare, "aescbc[aescbckey," + newKey + "] identity", StagePrepare, "stage prepare"},
		{"rotate", tool.Rotate, "aescbc[" + newKey + ",aescbckey] identity", StageRotate, ""},
	}
	for _, s := range steps {
		err := s.run()
		if s.errSub == "" && err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.errSub != "" && (err == nil || !strings.Contains(err.Error(), s.errSub)) {
			t.Fatalf("%s: %v, want %q", s.name, err, s.errSub)
		}
		if got := layout(t, dir); got != s.want {
			t.Errorf("%s: layout %q, want %q", s.name, got, s.want)
		}
		if got := readStage(dir); got != s.stage {
			t.Errorf("%s: stage %q, want %q", s.name, got, s.stage)
		}
	}
	// Without a server, reencrypt and status say so rather than guess.
	tool.LoadTimeout = time.Second
	if err := tool.Reencrypt(context.Background(), false); err == nil || !strings.Contains(err.Error(), "no admin kubeconfig") {
		t.Errorf("reencrypt without a server: %v", err)
	}
	var out bytes.Buffer
	tool.Out = &out
	if err := tool.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Encryption Status: Enabled", "Current Rotation Stage: rotate", "Server Encryption Hashes: unknown", " *      AES-CBC   " + newKey, "        AES-CBC   aescbckey\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status %q lacks %q", out.String(), want)
		}
	}
}

func TestMissingConfig(t *testing.T) {
	tool := &Tool{DataDir: t.TempDir()}
	if err := tool.Enable(); err == nil || !strings.Contains(err.Error(), "--secrets-encryption") {
		t.Errorf("enable without a file: %v", err)
	}
}

func TestLabel(t *testing.T) {
	tests := []struct{ line, name, want string }{
		{`apiserver_encryption_config_controller_last_config_info{apiserver_id_hash="sha256:aa",hash="sha256:bb"} 1`, "hash", "sha256:bb"},
		{`apiserver_encryption_config_controller_last_config_info{apiserver_id_hash="sha256:aa",hash="sha256:bb"} 1`, "apiserver_id_hash", "sha256:aa"},
		{`metric 1`, "hash", ""},
	}
	for _, tt := range tests {
		if got, _ := label(tt.line, tt.name); got != tt.want {
			t.Errorf("label(%q, %q) = %q, want %q", tt.line, tt.name, got, tt.want)
		}
	}
}
