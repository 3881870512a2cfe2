package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/util/keyutil"
)

func TestLoadOrCreateSigningKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nested", "service.key")

	key, created, err := LoadOrCreateSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Error("created = false on first call")
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok || rsaKey.N.BitLen() != SigningKeyBits {
		t.Fatalf("key = %T, want %d-bit RSA", key, SigningKeyBits)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode = %o, want 600", perm)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the key (no temp files)", len(entries))
	}

	again, created, err := LoadOrCreateSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if created {
		t.Error("created = true on second call")
	}
	if !rsaKey.Equal(again) {
		t.Error("reloaded key differs from the created one")
	}

	pubs, err := LoadPublicKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(pubs) != 1 || mustKeyID(t, pubs[0]) != mustKeyID(t, rsaKey.Public()) {
		t.Errorf("LoadPublicKeys = %v, want the key's public half", pubs)
	}
}

func TestLoadOrCreateSigningKeyExisting(t *testing.T) {
	_, _, ec1 := testKeys(t)
	ecPEM, err := keyutil.MarshalPrivateKeyToPEM(ec1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		content []byte
		wantEC  bool
		wantErr string
	}{
		{name: "ecdsa key", content: ecPEM, wantEC: true},
		{name: "garbage", content: []byte("not a key"), wantErr: "parse PEM private key"},
		{name: "public key only", content: []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), wantErr: "service account signing key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sa.key")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			key, created, err := LoadOrCreateSigningKey(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				if data, _ := os.ReadFile(path); string(data) != string(tc.content) {
					t.Error("unparseable key file was overwritten")
				}
				return
			}
			if err != nil || created {
				t.Fatalf("err=%v created=%v", err, created)
			}
			if _, ok := key.(*ecdsa.PrivateKey); ok != tc.wantEC {
				t.Errorf("key type %T", key)
			}
		})
	}
}
