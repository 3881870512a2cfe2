// Package kubectltext loads kubectl's message translations only in a
// process that runs kubectl.
//
// kubectl's command packages translate their help texts in package
// variables, so the first of them to be initialised loads the translation
// catalogue (an in-memory zip for the user's locale): ~30 ms of every k1s
// start-up, `k1s server` included, for texts only `k1s kubectl` shows.
// Importing this package (before those: Go initialises packages in
// import-path order where it may, and github.com sorts before k8s.io)
// installs a loader that does nothing unless the command line runs
// kubectl. Then the help texts are kubectl's untranslated ones, which is
// what any process but kubectl ever printed of them.
package kubectltext

import (
	"os"

	"k8s.io/kubectl/pkg/util/i18n"
)

func init() {
	// An error means translations were loaded already: nothing to save.
	_ = i18n.SetLoadTranslationsFunc(func() error {
		if !RunsKubectl(os.Args) {
			return nil
		}
		return i18n.LoadTranslations("kubectl", nil)
	})
}

// RunsKubectl reports whether a k1s command line runs kubectl: its first
// argument that is not a flag is "kubectl".
func RunsKubectl(args []string) bool {
	for _, a := range args[min(1, len(args)):] {
		if len(a) > 0 && a[0] == '-' {
			continue
		}
		return a == "kubectl"
	}
	return false
}
