package containerd

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// TestMain lets the test binary stand in for k1s: started as
// `<test binary> containerd ...` it runs the daemon, as `k1s containerd`
// does, so Run can re-execute it.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == DaemonCommand {
		if err := RunDaemon(context.Background(), append([]string{"containerd"}, os.Args[2:]...)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
