package network

import (
	"context"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// inNewNetns runs f on a thread of its own in a new network namespace, so
// that the commands it starts change only that namespace's iptables. The
// thread is never returned to the runtime: it ends with the goroutine.
func inNewNetns(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("iptables-restore"); err != nil {
		t.Skip("iptables-restore not installed")
	}
	done := make(chan struct{})
	var skip string
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			skip = "unshare: " + err.Error()
			return
		}
		f()
	}()
	<-done
	if skip != "" {
		t.Skip(skip)
	}
}

func TestMasqueradeRealIPTables(t *testing.T) {
	var saved1, saved2, saved3 string
	var errs []error
	inNewNetns(t, func() {
		ctx := context.Background()
		save := func() string {
			out, err := ExecRunner(ctx, nil, "iptables-save", "-t", "nat")
			if err != nil {
				errs = append(errs, err)
			}
			return string(out)
		}
		_, pod, _ := net.ParseCIDR("10.42.0.0/24")
		_, cluster, _ := net.ParseCIDR("10.42.0.0/16")
		if err := EnsureMasquerade(ctx, ExecRunner, pod, cluster); err != nil {
			errs = append(errs, err)
			return
		}
		// Twice: still one jump.
		if err := EnsureMasquerade(ctx, ExecRunner, pod, cluster); err != nil {
			errs = append(errs, err)
			return
		}
		saved1 = save()
		_, pod2, _ := net.ParseCIDR("10.42.5.0/24")
		if err := EnsureMasquerade(ctx, ExecRunner, pod2, cluster); err != nil {
			errs = append(errs, err)
			return
		}
		saved2 = save()
		if err := DeleteMasquerade(ctx, ExecRunner); err != nil {
			errs = append(errs, err)
		}
		saved3 = save()
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := strings.Count(saved1, "-A POSTROUTING -m comment --comment \"k1s pod masquerade\" -j K1S-POSTROUTING"); n != 1 {
		t.Errorf("jumps = %d, want 1:\n%s", n, saved1)
	}
	for _, want := range []string{
		"-A K1S-POSTROUTING -s 10.42.0.0/24 -d 10.42.0.0/16 -m comment --comment \"k1s: pod to cluster, no masquerade\" -j RETURN",
		"-A K1S-POSTROUTING -s 10.42.0.0/24 -m comment --comment \"k1s: pod to outside the cluster\" -j MASQUERADE",
	} {
		if !strings.Contains(saved1, want) {
			t.Errorf("missing %q in:\n%s", want, saved1)
		}
	}
	if strings.Contains(saved2, "10.42.0.0/24") || !strings.Contains(saved2, "-s 10.42.5.0/24 -m comment") {
		t.Errorf("rules not replaced for the new CIDR:\n%s", saved2)
	}
	if strings.Contains(saved3, "K1S") {
		t.Errorf("rules left after DeleteMasquerade:\n%s", saved3)
	}
}
