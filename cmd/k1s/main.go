// Command k1s is a whole Kubernetes cluster in one binary.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	// CronJob time zones must work on edge images without zoneinfo.
	_ "time/tzdata"

	// Before kubectl's packages: see the package comment.
	_ "github.com/k1s/k1s/internal/kubectltext"

	"github.com/k1s/k1s/cmd/k1s/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	go func() {
		// A second signal exits at once.
		<-ctx.Done()
		stop()
		hard := make(chan os.Signal, 1)
		signal.Notify(hard, syscall.SIGINT, syscall.SIGTERM)
		<-hard
		fmt.Fprintln(os.Stderr, "k1s: second signal, exiting now")
		os.Exit(1)
	}()
	if err := app.New().RunContext(ctx, os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "k1s: %v\n", err)
		os.Exit(1)
	}
}
