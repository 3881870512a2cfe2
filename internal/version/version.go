// Package version reports the k1s version and the Kubernetes version it
// implements. Both are stamped at build time with -ldflags -X (see the
// Makefile): k1s's own into this package, Kubernetes' into
// k8s.io/component-base/version so the apiserver's /version and
// `k1s kubectl version` agree with `k1s --version`.
package version

import (
	"fmt"
	"runtime"

	kubeversion "k8s.io/component-base/version"
)

// Set with -ldflags "-X github.com/k1s/k1s/internal/version.Version=...".
var (
	Version   = "v0.0.0-dev"
	GitCommit = "unknown"
)

// String is the one-line version report of `k1s --version`.
func String() string {
	kv := kubeversion.Get()
	return fmt.Sprintf("%s (%s) kubernetes %s %s/%s %s", Version, shortCommit(), kv.GitVersion, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

func shortCommit() string {
	if len(GitCommit) > 8 {
		return GitCommit[:8]
	}
	return GitCommit
}
