package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/k1s/k1s/agent/dns"
	"github.com/k1s/k1s/agent/network"
	"github.com/k1s/k1s/agent/proxy"
	"github.com/k1s/k1s/embed/containerd"
	"github.com/k1s/k1s/embed/containerd/killall"
)

// killallCommand is `k1s killall`: stop everything k1s started on this
// machine and leave the data directory as it is.
func killallCommand() *cli.Command {
	var dataDir, runDir string
	return &cli.Command{
		Name:  "killall",
		Usage: "stop k1s and everything it started (pods, shims, containerd, mounts, pod networking); keeps the data dir",
		Description: "Stops the running k1s, then every pod through containerd (a temporary one when k1s is not running), " +
			"kills shims and containers left over by pid, unmounts what k1s mounted under /run/k1s and <data-dir>/agent, " +
			"deletes the pod network namespaces, the cni0 bridge and its veths, the iptables chains named CNI-*, KUBE-* and K1S-*, " +
			"the service proxy's nftables tables (ip and ip6 k1s-proxy) and the cluster DNS link (k1s-dns). " +
			"Safe to run when nothing is running.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data-dir", Aliases: []string{"d"}, Usage: "k1s's data directory", Value: containerd.DefaultDataDir, EnvVars: []string{"K1S_DATA_DIR"}, Destination: &dataDir},
			&cli.StringFlag{Name: "run-dir", Usage: "the node's run directory (k1s agent --run-dir)", Value: "/run/k1s", EnvVars: []string{"K1S_RUN_DIR"}, Destination: &runDir},
		},
		Action: func(c *cli.Context) error {
			if os.Geteuid() != 0 {
				return errors.New("k1s killall must run as root")
			}
			ctrd, err := containerd.New(containerd.Config{DataDir: dataDir, State: filepath.Join(runDir, "containerd")})
			if err != nil {
				return err
			}
			cfg := ctrd.Config()
			err = killall.Run(c.Context, killall.Config{
				DataDir: cfg.DataDir,
				State:   cfg.State,
				Socket:  cfg.Socket,
				PidFile: cfg.PidFile,
			}, killall.NewSystem(ctrd.StartExisting))
			if err != nil {
				return fmt.Errorf("killall: %w", err)
			}
			// The service proxy's rules outlive k1s on purpose (Service
			// traffic keeps flowing across a restart); killall takes them.
			if err := proxy.Cleanup(c.Context, proxy.DefaultTable); err != nil {
				return fmt.Errorf("killall: %w", err)
			}
			// And the link carrying the cluster DNS address, and the pod
			// network's VXLAN device and routes to other nodes.
			if err := dns.RemoveLink(dns.DefaultLinkName); err != nil {
				return fmt.Errorf("killall: %w", err)
			}
			if err := network.RemoveOverlay("k1s.1"); err != nil {
				return fmt.Errorf("killall: %w", err)
			}
			// The emptied state and run directories go too (as k3s's
			// killall removes /run/k3s); anything left in them stays.
			_ = os.Remove(cfg.State)
			_ = os.Remove(runDir)
			return nil
		},
	}
}
