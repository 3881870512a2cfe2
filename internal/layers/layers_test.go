// Package layers checks that k1s's packages import only downwards:
// cmd → server → controllers, agent → embed → internal. The node's code
// (agent, embed, internal) never reaches the control plane's, so that
// `k1s agent` runs it alone.
package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/k1s/k1s/"

// rank orders the top-level directories; a package may import a lower
// rank, and its own directory, only. agent and controllers share a rank
// but not each other. manifests (embedded data) sits with internal.
var rank = map[string]int{"internal": 0, "manifests": 0, "embed": 1, "agent": 2, "controllers": 2, "server": 3, "cmd": 4}

func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo",
		"-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}}", module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		top := strings.Split(pkg, "/")[0]
		r, ok := rank[top]
		if !ok {
			continue // tests/...
		}
		checked++
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			dtop := strings.Split(dep, "/")[0]
			dr, ok := rank[dtop]
			if !ok {
				t.Errorf("%s imports %s, outside the layers", pkg, dep)
				continue
			}
			if dr > r || (dr == r && dtop != top) {
				t.Errorf("%s imports %s: %s may not depend on %s", pkg, dep, top, dtop)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d packages checked; go list output:\n%s", checked, out)
	}
}
