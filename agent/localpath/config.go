package localpath

import (
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ProvisionerName is the provisioner of the local-path StorageClass, k3s's
// name, so that k3s manifests naming it keep working.
const ProvisionerName = "rancher.io/local-path"

// DefaultStoragePath is <data-dir>/storage under the default data dir.
const DefaultStoragePath = "/var/lib/k1s/storage"

// Config configures the provisioner of one node.
type Config struct {
	// NodeName is this node's name: the provisioner handles the claims
	// whose selected node it is. Required.
	NodeName string
	// StoragePath is the directory holding the node's volumes
	// (--default-local-storage-path). Default /var/lib/k1s/storage
	// (<data-dir>/storage).
	StoragePath string
}

// SetDefaults fills the zero fields with their defaults.
func (c *Config) SetDefaults() {
	if c.StoragePath == "" {
		c.StoragePath = DefaultStoragePath
	}
}

// Validate checks the configuration after defaulting; errors name the flag.
func (c *Config) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--node-name: %q is not a valid node name", c.NodeName))
	}
	if !filepath.IsAbs(c.StoragePath) {
		errs = append(errs, fmt.Errorf("--default-local-storage-path: %q must be an absolute path", c.StoragePath))
	} else if filepath.Clean(c.StoragePath) == "/" {
		errs = append(errs, errors.New("--default-local-storage-path: must not be /"))
	}
	return errors.Join(errs...)
}
