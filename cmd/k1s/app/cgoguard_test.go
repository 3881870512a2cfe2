package app

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// buildTags are the Makefile's.
const buildTags = "no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo"

// TestCgoBuildRefused checks the guard in cmd/k1s/cgo.go: with cgo on,
// with or without the Makefile's tags, the file is part of cmd/k1s and
// does not compile, saying how to build k1s; with cgo off it is not part
// of the build. (The file is compiled alone: a build of all of cmd/k1s
// with cgo would first compile every dependency with cgo, minutes.)
func TestCgoBuildRefused(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	run := func(cgo string, args ...string) (string, error) {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = ".." // cmd/k1s
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "CGO_ENABLED=") }), "CGO_ENABLED="+cgo)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, tc := range []struct {
		cgo, tags string
		guarded   bool
	}{
		{"1", buildTags, true},
		{"1", "", true},
		{"0", buildTags, false},
	} {
		out, err := run(tc.cgo, "list", "-tags", tc.tags, "-f", "{{.GoFiles}}", ".")
		if err != nil {
			t.Fatalf("CGO_ENABLED=%s go list -tags %q ./cmd/k1s: %v\n%s", tc.cgo, tc.tags, err, out)
		}
		if got := strings.Contains(out, "cgo.go"); got != tc.guarded || !strings.Contains(out, "main.go") {
			t.Errorf("CGO_ENABLED=%s -tags %q: cmd/k1s files %s; want cgo.go among them: %v", tc.cgo, tc.tags, strings.TrimSpace(out), tc.guarded)
		}
	}
	out, err := run("1", "build", "-o", os.DevNull, "cgo.go")
	if err == nil {
		t.Fatal("cmd/k1s/cgo.go compiled with cgo on; want a compile error")
	}
	if !strings.Contains(out, `"build k1s with CGO_ENABLED=0`) {
		t.Fatalf("cmd/k1s/cgo.go failed without the guard's message:\n%s", out)
	}
}
