// Package secretsencrypt owns k1s's encryption of Secrets at rest, k3s's
// --secrets-encryption and `k3s secrets-encrypt`: the
// EncryptionConfiguration k1s writes under
// <data-dir>/server/cred/encryption-config.json (an aescbc key, or a
// secretbox one, then identity so data written before stays readable),
// the rotation stage beside it in encryption-state.json, and the steps of
// `k1s secrets-encrypt`: status, enable, disable, prepare, rotate,
// reencrypt and rotate-keys.
//
// The apiserver reads the file at start and again whenever it changes
// (kube-apiserver's --encryption-provider-config-automatic-reload), so a
// step that needs the server to use the new file (reencrypt, rotate-keys)
// waits until the server reports the file's hash as loaded, in its
// apiserver_encryption_config_controller_last_config_info metric.
// Re-encryption rewrites every Secret unchanged through the API: the
// storage layer writes again what it read with a key other than the
// first.
//
// The file steps work on the server's data directory, so the command runs
// on a server; k3s's goes through a server endpoint and coordinates the
// servers of a cluster, which k1s does not.
package secretsencrypt
