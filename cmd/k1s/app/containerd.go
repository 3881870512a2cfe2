package app

import (
	"github.com/urfave/cli/v2"

	"github.com/k1s/k1s/embed/containerd"
)

// containerdCommand is the hidden `k1s containerd ...`: containerd's own
// command line, which k1s re-executes itself with to run its embedded
// containerd as a child process.
func containerdCommand() *cli.Command {
	return &cli.Command{
		Name:            containerd.DaemonCommand,
		Usage:           "run the embedded containerd (started by k1s itself)",
		Hidden:          true,
		SkipFlagParsing: true,
		HideHelp:        true,
		Action: func(c *cli.Context) error {
			return containerd.RunDaemon(c.Context, append([]string{"containerd"}, c.Args().Slice()...))
		},
	}
}
