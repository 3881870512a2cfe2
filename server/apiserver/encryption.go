package apiserver

import (
	"time"

	encryptionconfigcontroller "k8s.io/apiserver/pkg/server/options/encryptionconfig/controller"
)

// EncryptionConfigPollPeriod is how often a reloadable
// EncryptionConfiguration is read again. Upstream polls every minute;
// k1s writes the file itself (`k1s secrets-encrypt rotate-keys`) and then
// waits for the server to take it, so it polls more often: reading a
// small file every few seconds costs nothing.
const EncryptionConfigPollPeriod = 5 * time.Second

func init() {
	// The library's poll period is a package variable, read when its
	// controller starts: set once, before any server runs.
	encryptionconfigcontroller.EncryptionConfigFileChangePollDuration = EncryptionConfigPollPeriod
}
