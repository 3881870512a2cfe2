package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/keyutil"
)

// SigningKeyBits is the size of RSA keys made by LoadOrCreateSigningKey.
const SigningKeyBits = 2048

// LoadOrCreateSigningKey returns the service-account signing key stored at
// path. When the file does not exist it generates an RSA 2048-bit key, writes
// it as PKCS#1 PEM with mode 0600 (creating the directory with mode 0700 if
// needed) and returns it; created reports whether that happened. An existing
// file may hold an RSA or ECDSA private key in any PEM form keyutil parses.
func LoadOrCreateSigningKey(path string) (key crypto.Signer, created bool, err error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, err := parseSigningKey(data)
		if err != nil {
			return nil, false, fmt.Errorf("service account signing key %s: %w", path, err)
		}
		return key, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("read service account signing key: %w", err)
	}

	rsaKey, err := rsa.GenerateKey(rand.Reader, SigningKeyBits)
	if err != nil {
		return nil, false, fmt.Errorf("generate service account signing key: %w", err)
	}
	pemBytes, err := keyutil.MarshalPrivateKeyToPEM(rsaKey)
	if err != nil {
		return nil, false, fmt.Errorf("encode service account signing key: %w", err)
	}
	if err := writeFileAtomic(path, pemBytes, 0o600); err != nil {
		return nil, false, fmt.Errorf("write service account signing key: %w", err)
	}
	return rsaKey, true, nil
}

func parseSigningKey(data []byte) (crypto.Signer, error) {
	parsed, err := keyutil.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("parse PEM private key: %w", err)
	}
	switch k := parsed.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	default:
		return nil, fmt.Errorf("unsupported private key type %T (want RSA or ECDSA)", parsed)
	}
}

// LoadPublicKeys reads every RSA and ECDSA public key from the PEM file at
// path. Private keys in the file contribute their public half, so the signing
// key file itself is a valid input.
func LoadPublicKeys(path string) ([]crypto.PublicKey, error) {
	keys, err := keyutil.PublicKeysFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load service account public keys: %w", err)
	}
	out := make([]crypto.PublicKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	return out, nil
}

// writeFileAtomic writes data to a temporary file beside path and renames it
// into place, so a crash never leaves a half-written key behind.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op once renamed
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
