package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/server/secretsencrypt"
)

// secretsEncryptOptions are the flags of `k1s secrets-encrypt` (k3s's).
type secretsEncryptOptions struct {
	configFile string
	dataDir    string
	skip       bool
}

func (o *secretsEncryptOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "the server's YAML config file (keys that are not flags of this command are skipped)", Value: DefaultConfigFile, EnvVars: env("CONFIG_FILE"), Destination: &o.configFile},
		&cli.StringFlag{Name: "data-dir", Aliases: []string{"d"}, Usage: "the server's data directory", Value: "/var/lib/k1s", EnvVars: env("DATA_DIR"), Destination: &o.dataDir},
	}
}

// tool is the steps on the data directory, with an admin client of the
// running server from the data directory's admin kubeconfig when there
// is one.
func (o *secretsEncryptOptions) tool(c *cli.Context) (*secretsencrypt.Tool, error) {
	t := &secretsencrypt.Tool{DataDir: o.dataDir, Out: c.App.Writer}
	kubeconfig := filepath.Join(o.dataDir, "server", "cred", "admin.kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		return t, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig %s: %w", kubeconfig, err)
	}
	if t.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("admin kubeconfig %s: %w", kubeconfig, err)
	}
	return t, nil
}

// secretsEncryptCommand is `k1s secrets-encrypt`: status, enable,
// disable, prepare, rotate, reencrypt, rotate-keys. It works on this
// server's data directory (and its running apiserver), not through a
// server endpoint as k3s's does.
func secretsEncryptCommand() *cli.Command {
	o := &secretsEncryptOptions{}
	sub := func(name, usage string, action func(*cli.Context, *secretsencrypt.Tool) error, extra ...cli.Flag) *cli.Command {
		return &cli.Command{
			Name:  name,
			Usage: usage,
			Flags: append(o.flags(), extra...),
			Action: func(c *cli.Context) error {
				if err := loadConfig(c, o.configFile, c.IsSet("config"), true); err != nil {
					return err
				}
				if c.Args().Len() > 0 {
					return fmt.Errorf("k1s secrets-encrypt %s takes no arguments, got %q", name, c.Args().Slice())
				}
				t, err := o.tool(c)
				if err != nil {
					return err
				}
				ctx := klog.NewContext(c.Context, klog.Background())
				c.Context = ctx
				return action(c, t)
			},
		}
	}
	return &cli.Command{
		Name:  "secrets-encrypt",
		Usage: "control the encryption of Secrets at rest (servers started with --secrets-encryption)",
		Subcommands: []*cli.Command{
			sub("status", "print whether secrets are encrypted, the rotation stage and the keys", func(c *cli.Context, t *secretsencrypt.Tool) error { return t.Status(c.Context) }),
			sub("enable", "encrypt new and rewritten secrets (the server takes it within seconds, or at restart)", func(_ *cli.Context, t *secretsencrypt.Tool) error { return t.Enable() }),
			sub("disable", "store new and rewritten secrets unencrypted (the server takes it within seconds, or at restart)", func(_ *cli.Context, t *secretsencrypt.Tool) error { return t.Disable() }),
			sub("prepare", "add a new key, not yet used to write", func(_ *cli.Context, t *secretsencrypt.Tool) error { return t.Prepare() }),
			sub("rotate", "write with the key prepare added", func(_ *cli.Context, t *secretsencrypt.Tool) error { return t.Rotate() }),
			sub("reencrypt", "rewrite every secret with the active key, then drop the other keys", func(c *cli.Context, t *secretsencrypt.Tool) error { return t.Reencrypt(c.Context, o.skip) },
				&cli.BoolFlag{Name: "skip", Usage: "keep the keys no longer used", Destination: &o.skip}),
			sub("rotate-keys", "a new key, every secret rewritten with it and the old keys dropped, without restarting the server", func(c *cli.Context, t *secretsencrypt.Tool) error { return t.RotateKeys(c.Context) }),
		},
	}
}
