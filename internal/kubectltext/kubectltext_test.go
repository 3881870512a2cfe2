package kubectltext

import (
	"testing"

	"k8s.io/kubectl/pkg/util/i18n"
)

func TestRunsKubectl(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"k1s", "kubectl", "get", "pods"}, true},
		{[]string{"k1s", "-v=2", "kubectl"}, true},
		{[]string{"k1s", "server", "--node-name", "kubectl"}, false},
		{[]string{"k1s"}, false},
		{[]string{}, false},
		{[]string{"k1s", "images", "list"}, false},
	} {
		if got := RunsKubectl(tc.args); got != tc.want {
			t.Errorf("RunsKubectl(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// A process that does not run kubectl loads no translations: kubectl's
// texts come out as written, whatever the locale.
func TestNoTranslationsOutsideKubectl(t *testing.T) {
	t.Setenv("LANG", "de_DE.UTF-8")
	const text = "Display one or many resources" // translated in kubectl's de_DE catalogue
	if got := i18n.T(text); got != text {
		t.Errorf("i18n.T(%q) = %q: translations were loaded", text, got)
	}
}
