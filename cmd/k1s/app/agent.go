package app

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/agent/standalone"
)

// agentOptions are the flags of `k1s agent`.
type agentOptions struct {
	cfg        standalone.Config
	configFile string
	labels     cli.StringSlice
	taints     cli.StringSlice
	extIPs     cli.StringSlice
	extDNS     cli.StringSlice
}

func agentCommand() *cli.Command {
	return newAgentCommand(func(ctx context.Context, cfg standalone.Config) error {
		a, err := standalone.New(cfg)
		if err != nil {
			return err
		}
		return a.Run(ctx)
	})
}

// newAgentCommand is `k1s agent`, handing its configuration to run.
func newAgentCommand(run func(context.Context, standalone.Config) error) *cli.Command {
	o := &agentOptions{}
	return &cli.Command{
		Name:  "agent",
		Usage: "join a k1s server as another node (containerd, the node agent, the service proxy and DNS; no etcd, no apiserver)",
		Description: "Joins the server at --server with a join token (the server's <data-dir>/server/token, or a bootstrap token from " +
			"`k1s token create` with --ca-file), gets the node's certificates through certificate signing requests, and runs the node. " +
			"Flags may also come from the config file (keys are flag names) and K1S_* environment variables.",
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "YAML file whose keys are flag names", Value: DefaultConfigFile, EnvVars: env("CONFIG_FILE"), Destination: &o.configFile},
			&cli.StringFlag{Name: "server", Aliases: []string{"s"}, Usage: "the server's URL, https://HOST:6443: the first contact; the agent then learns every server of the cluster and fails over between them", EnvVars: []string{"K1S_URL"}, Destination: &o.cfg.Server},
			&cli.StringFlag{Name: "token", Aliases: []string{"t"}, Usage: "join token", EnvVars: []string{"K1S_TOKEN"}, Destination: &o.cfg.Token},
			&cli.StringFlag{Name: "token-file", Usage: "file holding the join token", EnvVars: []string{"K1S_TOKEN_FILE"}, Destination: &o.cfg.TokenFile},
			&cli.StringFlag{Name: "ca-file", Usage: "the server's CA bundle, for a token that carries no CA hash", EnvVars: env("CA_FILE"), Destination: &o.cfg.CAFile},
			&cli.StringFlag{Name: "data-dir", Aliases: []string{"d"}, Usage: "directory holding all state", Value: "/var/lib/k1s", EnvVars: env("DATA_DIR"), Destination: &o.cfg.DataDir},
			&cli.StringFlag{Name: "default-local-storage-path", Usage: "directory of this node's local-path volumes (default <data-dir>/storage)", EnvVars: env("DEFAULT_LOCAL_STORAGE_PATH"), Destination: &o.cfg.DefaultLocalStoragePath},
			&cli.StringFlag{Name: "run-dir", Usage: "directory of containerd's state and socket (a second node on one machine needs its own)", Value: "/run/k1s", EnvVars: env("RUN_DIR"), Destination: &o.cfg.RunDir},
			&cli.StringFlag{Name: "node-name", Usage: "this node's name (default: the hostname)", EnvVars: env("NODE_NAME"), Destination: &o.cfg.NodeName},
			&cli.BoolFlag{Name: "with-node-id", Usage: "append a random id, kept in the data dir, to the node name", EnvVars: env("WITH_NODE_ID"), Destination: &o.cfg.WithNodeID},
			&cli.StringFlag{Name: "node-ip", Usage: "this node's IP (default: the default route's interface address)", EnvVars: env("NODE_IP"), Destination: &o.cfg.NodeIP},
			&cli.StringSliceFlag{Name: "node-label", Usage: "label the node gets at registration, key=value (repeatable)", EnvVars: env("NODE_LABEL"), Destination: &o.labels},
			&cli.StringSliceFlag{Name: "node-taint", Usage: "taint the node gets at registration, key=value:Effect (repeatable)", EnvVars: env("NODE_TAINT"), Destination: &o.taints},
			&cli.StringFlag{Name: "container-runtime-endpoint", Usage: "CRI socket of an external container runtime; empty runs the embedded containerd", EnvVars: env("CONTAINER_RUNTIME_ENDPOINT"), Destination: &o.cfg.ContainerRuntimeEndpoint},
			&cli.StringFlag{Name: "pod-manifests", Usage: "static pod directory (default <data-dir>/agent/pod-manifests)", Destination: &o.cfg.PodManifests},
			&cli.StringFlag{Name: "resolv-conf", Usage: "host resolver file (default /etc/resolv.conf)", EnvVars: env("RESOLV_CONF"), Destination: &o.cfg.ResolvConf},
			&cli.BoolFlag{Name: "disable-kube-proxy", Usage: "run no service proxy on this node", EnvVars: env("DISABLE_KUBE_PROXY"), Destination: &o.cfg.DisableKubeProxy},
			&cli.StringFlag{Name: "container-log-max-size", Usage: "size at which a container log is rotated", Value: "10Mi", Destination: &o.cfg.ContainerLogMaxSize},
			&cli.IntFlag{Name: "container-log-max-files", Usage: "log files kept per container", Value: 5, Destination: &o.cfg.ContainerLogMaxFiles},
			&cli.IntFlag{Name: "read-only-port", Usage: "unauthenticated read-only agent API port (0: off)", Value: 0, Destination: &o.cfg.ReadOnlyPort},
			&cli.StringSliceFlag{Name: "node-external-ip", Usage: "this node's external IP addresses (repeatable); servicelb advertises them as load-balancer ingress", EnvVars: env("NODE_EXTERNAL_IP"), Destination: &o.extIPs},
			&cli.StringSliceFlag{Name: "node-external-dns", Usage: "this node's external DNS names (repeatable)", EnvVars: env("NODE_EXTERNAL_DNS"), Destination: &o.extDNS},
			&cli.IntFlag{Name: "max-pods", Usage: "pods this node takes (capacity and allocatable); k3s's --kubelet-arg=max-pods=N", Value: 110, Hidden: true, Destination: &o.cfg.MaxPods},
			&cli.StringFlag{Name: "private-registry", Usage: "k3s's registries.yaml: mirrors, credentials and TLS of image registries for the embedded containerd (a missing file configures none)", Value: DefaultPrivateRegistry, EnvVars: env("PRIVATE_REGISTRY"), Destination: &o.cfg.PrivateRegistry},
		}, append(passthroughFlags(agentPassthrough()), o.cfg.NodeFlags.CLIFlags()...)...), unsupportedFlags(agentUnsupported())...),
		Action: func(c *cli.Context) error {
			if err := loadConfigFile(c, o.configFile, c.IsSet("config")); err != nil {
				return err
			}
			if err := checkUnsupported(c, agentUnsupported()); err != nil {
				return err
			}
			if err := applyPassthrough(c, agentPassthrough()); err != nil {
				return err
			}
			if c.Args().Len() > 0 {
				return fmt.Errorf("k1s agent takes no arguments, got %q", c.Args().Slice())
			}
			o.cfg.NodeLabels = splitList(o.labels.Value())
			o.cfg.NodeTaints = splitList(o.taints.Value())
			o.cfg.NodeExternalIPs = splitList(o.extIPs.Value())
			o.cfg.NodeExternalDNS = splitList(o.extDNS.Value())
			if _, err := standalone.New(o.cfg); err != nil {
				return err
			}
			return run(klog.NewContext(c.Context, klog.Background()), o.cfg)
		},
	}
}
