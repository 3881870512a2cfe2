package secretsencrypt

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
)

// Providers (--secrets-encryption-provider, k3s's values).
const (
	ProviderAESCBC    = "aescbc"
	ProviderSecretbox = "secretbox"
)

// Rotation stages, k3s's names.
const (
	StageStart             = "start"
	StagePrepare           = "prepare"
	StageRotate            = "rotate"
	StageReencryptActive   = "reencrypt_active"
	StageReencryptFinished = "reencrypt_finished"
)

// ConfigPath is the EncryptionConfiguration of a data directory (k3s's path).
func ConfigPath(dataDir string) string {
	return filepath.Join(dataDir, "server", "cred", "encryption-config.json")
}

// StatePath holds the rotation stage.
func StatePath(dataDir string) string {
	return filepath.Join(dataDir, "server", "cred", "encryption-state.json")
}

// ValidateProvider reports a provider k1s does not write.
func ValidateProvider(p string) error {
	if p != ProviderAESCBC && p != ProviderSecretbox {
		return fmt.Errorf("--secrets-encryption-provider: %q is not aescbc or secretbox", p)
	}
	return nil
}

// Ensure writes the data directory's EncryptionConfiguration with a new
// key of provider, first, and identity, unless the file exists; it
// returns the file's path.
func Ensure(dataDir, provider string) (string, error) {
	if err := ValidateProvider(provider); err != nil {
		return "", err
	}
	path := ConfigPath(dataDir)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("secrets encryption config: %w", err)
	}
	key, err := newKey(provider, "")
	if err != nil {
		return "", err
	}
	cfg := &apiserverv1.EncryptionConfiguration{Resources: []apiserverv1.ResourceConfiguration{{
		Resources: []string{"secrets"},
		Providers: []apiserverv1.ProviderConfiguration{keyProvider(provider, key), {Identity: &apiserverv1.IdentityConfiguration{}}},
	}}}
	if err := writeConfig(path, cfg); err != nil {
		return "", err
	}
	if err := writeStage(dataDir, StageStart); err != nil {
		return "", err
	}
	return path, nil
}

// newKey is a random 32-byte key named as k3s names them: the provider's
// name and "key", then the time for every key after the first.
func newKey(provider, suffix string) (apiserverv1.Key, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return apiserverv1.Key{}, fmt.Errorf("new encryption key: %w", err)
	}
	name := provider + "key"
	if suffix != "" {
		name += "-" + suffix
	}
	return apiserverv1.Key{Name: name, Secret: base64.StdEncoding.EncodeToString(b)}, nil
}

func timeSuffix(now time.Time) string { return now.UTC().Format(time.RFC3339) }

func keyProvider(provider string, keys ...apiserverv1.Key) apiserverv1.ProviderConfiguration {
	if provider == ProviderSecretbox {
		return apiserverv1.ProviderConfiguration{Secretbox: &apiserverv1.SecretboxConfiguration{Keys: keys}}
	}
	return apiserverv1.ProviderConfiguration{AESCBC: &apiserverv1.AESConfiguration{Keys: keys}}
}

// readConfig reads the file and returns it with its secrets' providers.
func readConfig(path string) (*apiserverv1.EncryptionConfiguration, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("secrets encryption is not set up: %s does not exist (start the server with --secrets-encryption)", path)
		}
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	cfg := &apiserverv1.EncryptionConfiguration{}
	if err := json.Unmarshal(data, cfg); err != nil {
		return nil, nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if secretsProviders(cfg) == nil {
		return nil, nil, fmt.Errorf("%s has no providers for secrets", path)
	}
	return cfg, data, nil
}

// secretsProviders is the provider list of the secrets resource.
func secretsProviders(cfg *apiserverv1.EncryptionConfiguration) *[]apiserverv1.ProviderConfiguration {
	for i := range cfg.Resources {
		for _, r := range cfg.Resources[i].Resources {
			if r == "secrets" {
				return &cfg.Resources[i].Providers
			}
		}
	}
	return nil
}

// keyed returns the index of the first provider with keys (aescbc or
// secretbox), its name and its keys; -1 if none.
func keyed(providers []apiserverv1.ProviderConfiguration) (int, string, *[]apiserverv1.Key) {
	for i := range providers {
		switch p := providers[i]; {
		case p.AESCBC != nil:
			return i, ProviderAESCBC, &providers[i].AESCBC.Keys
		case p.Secretbox != nil:
			return i, ProviderSecretbox, &providers[i].Secretbox.Keys
		}
	}
	return -1, "", nil
}

func identityIndex(providers []apiserverv1.ProviderConfiguration) int {
	for i, p := range providers {
		if p.Identity != nil {
			return i
		}
	}
	return -1
}

// enabled: secrets are written with a key (the first provider has keys).
func enabled(providers []apiserverv1.ProviderConfiguration) bool {
	return len(providers) > 0 && providers[0].Identity == nil
}

// writeConfig writes cfg to path atomically (a file beside it renamed
// over it), readable by the owner only.
func writeConfig(path string, cfg *apiserverv1.EncryptionConfiguration) error {
	cfg.Kind = "EncryptionConfiguration"
	cfg.APIVersion = apiserverv1.SchemeGroupVersion.String()
	data, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode encryption config: %w", err)
	}
	return writeFile(path, data)
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// contentHash is the hash the apiserver reports for a file's content.
func contentHash(data []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(data)) }

type state struct {
	Stage string `json:"stage"`
}

func readStage(dataDir string) string {
	data, err := os.ReadFile(StatePath(dataDir))
	if err != nil {
		return StageStart
	}
	var s state
	if json.Unmarshal(data, &s) != nil || s.Stage == "" {
		return StageStart
	}
	return s.Stage
}

func writeStage(dataDir, stage string) error {
	data, _ := json.Marshal(state{Stage: stage})
	return writeFile(StatePath(dataDir), data)
}
