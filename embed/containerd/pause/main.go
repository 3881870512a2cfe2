// Command pause is the process of k1s's pod sandbox image
// (k1s.local/pause:3.10): it holds the pod's namespaces open, reaps the
// zombies of the pod's processes when it is their pid 1, and exits 0 on
// SIGINT or SIGTERM. It imports only os/signal and syscall to stay small;
// one runs in every pod (the image sets GOMAXPROCS=1: it never needs more).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}
