// Package manifests holds the manifests k1s packages, embedded in the
// binary: the top-level files are written at start to the server's
// manifests folder (<data-dir>/server/manifests), where the deploy
// controller applies them like any file an operator drops there; crds/
// holds the CustomResourceDefinitions k1s installs itself before it
// applies anything (k3s's Addon and ETCDSnapshotFile, helm-controller's
// HelmChart and HelmChartConfig).
//
// Packaged files are templates: %{NAME}% variables (k3s's syntax) are
// replaced with the server's settings when they are written, e.g.
// %{CLUSTER_DNS}% with --cluster-dns.
package manifests

import (
	"embed"
	"io/fs"
)

//go:embed *.yaml
var packaged embed.FS

//go:embed crds/*.yaml
var crds embed.FS

// Packaged returns the packaged manifests, one file each, named as they
// are written into the manifests folder. --disable NAME turns off NAME.yaml.
func Packaged() fs.FS { return packaged }

// CRDs returns the CustomResourceDefinitions k1s installs, one per file.
func CRDs() fs.FS {
	sub, err := fs.Sub(crds, "crds")
	if err != nil {
		// The directory is embedded above; fs.Sub fails only on a bad name.
		return crds
	}
	return sub
}
