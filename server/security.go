package server

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/klog/v2"

	"github.com/k1s/k1s/server/apiserver"
	"github.com/k1s/k1s/server/secretsencrypt"
)

// SecurityOptions are the apiserver's hardening settings: PodSecurity
// admission's configuration, Secrets encrypted at rest and the audit log.
type SecurityOptions struct {
	// PodSecurityAdmissionConfigFile is an AdmissionConfiguration whose
	// PodSecurity entry sets the default levels and the exemptions
	// (--pod-security-admission-config-file, k3s's). Default: none,
	// upstream's defaults (privileged everywhere, no exemptions).
	PodSecurityAdmissionConfigFile string
	// SecretsEncryption encrypts Secrets in etcd (--secrets-encryption,
	// k3s's) with the key of <data-dir>/server/cred/encryption-config.json,
	// written at the first start. A server whose data directory holds
	// that file uses it even without the flag, so secrets written
	// encrypted stay readable. Default false.
	SecretsEncryption bool
	// SecretsEncryptionProvider is the provider of the key written at the
	// first start: aescbc or secretbox (--secrets-encryption-provider,
	// k3s's). Default aescbc.
	SecretsEncryptionProvider string
	// Audit is the audit log (--audit-log-path, --audit-policy-file,
	// --audit-log-maxage, --audit-log-maxbackup, --audit-log-maxsize,
	// --audit-log-format). Default: none.
	Audit apiserver.AuditConfig
}

func (o *SecurityOptions) setDefaults() {
	if o.SecretsEncryptionProvider == "" {
		o.SecretsEncryptionProvider = secretsencrypt.ProviderAESCBC
	}
}

func (o *SecurityOptions) validate() []error {
	var errs []error
	if o.SecretsEncryption {
		if err := secretsencrypt.ValidateProvider(o.SecretsEncryptionProvider); err != nil {
			errs = append(errs, err)
		}
	}
	if f := o.PodSecurityAdmissionConfigFile; f != "" {
		if _, err := os.Stat(f); err != nil {
			errs = append(errs, fmt.Errorf("--pod-security-admission-config-file: %w", err))
		}
	}
	if err := o.Audit.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// encryptionConfig returns the EncryptionConfiguration the apiserver
// uses, writing it first with --secrets-encryption; "" when Secrets are
// stored unencrypted.
//
// A server joining a cluster (joining) gets the cluster's configuration
// with its CAs when the cluster encrypts Secrets (as k3s's bootstrap
// data); with --secrets-encryption it must have it, else a key of its own
// would make the other servers' Secrets unreadable to it and its own to
// them.
func (o *SecurityOptions) encryptionConfig(ctx context.Context, dataDir string, joining bool) (string, error) {
	path := secretsencrypt.ConfigPath(dataDir)
	if o.SecretsEncryption {
		if joining {
			if _, err := os.Stat(path); err != nil {
				return "", fmt.Errorf("--secrets-encryption: a joining server needs the cluster's key, which the cluster did not hand over: copy %s from a server of the cluster (%w)", path, err)
			}
		}
		return secretsencrypt.Ensure(dataDir, o.SecretsEncryptionProvider)
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("secrets encryption config: %w", err)
	}
	klog.FromContext(ctx).Info("Using the secrets encryption configuration of the data directory although --secrets-encryption is not set (secrets written encrypted stay readable); `k1s secrets-encrypt disable` stops encrypting", "path", path)
	return path, nil
}
