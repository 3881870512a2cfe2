package app

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/plugin"
)

func kubectlCommand() *cli.Command {
	return &cli.Command{
		Name:            "kubectl",
		Usage:           "run kubectl against this cluster (the admin kubeconfig is found automatically)",
		SkipFlagParsing: true,
		HideHelp:        true,
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if path := findKubeconfig(args); path != "" {
				os.Setenv("KUBECONFIG", path)
			}
			streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
			cmd := kubectlcmd.NewDefaultKubectlCommandWithArgs(kubectlcmd.KubectlOptions{
				PluginHandler: kubectlcmd.NewDefaultPluginHandler(plugin.ValidPluginFilenamePrefixes),
				Arguments:     append([]string{"kubectl"}, args...),
				ConfigFlags: genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag().
					WithDiscoveryBurst(300).WithDiscoveryQPS(50.0).WithWarningPrinter(streams),
				IOStreams: streams,
			})
			cmd.SetArgs(args)
			if err := cmd.ExecuteContext(c.Context); err != nil {
				// kubectl has printed the error already.
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}

// findKubeconfig picks the kubeconfig the way `k3s kubectl` does: an explicit
// --kubeconfig or $KUBECONFIG wins; otherwise the admin kubeconfig written by
// `k1s server` (/etc/k1s/k1s.yaml), then the one in the default data dir.
func findKubeconfig(args []string) string {
	candidates := []string{"/etc/k1s/k1s.yaml", filepath.Join("/var/lib/k1s", "server", "cred", "admin.kubeconfig")}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".kube", "k1s.yaml"))
	}
	return pickKubeconfig(args, candidates)
}

// pickKubeconfig returns "" when args or $KUBECONFIG name a kubeconfig,
// else the first candidate that can be opened ("" if none).
func pickKubeconfig(args, candidates []string) string {
	for _, a := range args {
		if a == "--kubeconfig" || strings.HasPrefix(a, "--kubeconfig=") {
			return ""
		}
	}
	if os.Getenv("KUBECONFIG") != "" {
		return ""
	}
	for _, p := range candidates {
		if f, err := os.Open(p); err == nil {
			f.Close()
			return p
		}
	}
	return ""
}
