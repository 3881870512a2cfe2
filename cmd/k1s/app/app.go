// Package app builds the k1s command line: `k1s server`, `k1s agent`,
// `k1s kubectl`, `k1s token` and the other subcommands, with flags, a YAML
// config file whose keys are the flag names, and K1S_* environment
// variables.
package app

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/internal/version"
)

// DefaultConfigFile is read when --config is not given and the file exists.
const DefaultConfigFile = "/etc/k1s/config.yaml"

// New returns the k1s command line application.
func New() *cli.App {
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version"}
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprintf(c.App.Writer, "k1s version %s\n", version.String())
	}
	return &cli.App{
		Name:                 "k1s",
		Usage:                "a whole Kubernetes cluster in one binary",
		Version:              version.Version,
		EnableBashCompletion: false,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "v", Usage: "log verbosity (klog level)", EnvVars: []string{"K1S_LOG_LEVEL"}},
			&cli.StringFlag{Name: "vmodule", Usage: "per-file log verbosity (klog)"},
		},
		Before: setupLogging,
		Commands: []*cli.Command{
			serverCommand(),
			agentCommand(),
			kubectlCommand(),
			containerdCommand(),
			imagesCommand(),
			killallCommand(),
			tokenCommand(),
			certificateCommand(),
			etcdSnapshotCommand(),
			secretsEncryptCommand(),
		},
	}
}

// setupLogging configures klog from the global flags.
func setupLogging(c *cli.Context) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("v", fmt.Sprint(c.Int("v"))); err != nil {
		return fmt.Errorf("--v: %w", err)
	}
	if vm := c.String("vmodule"); vm != "" {
		if err := fs.Set("vmodule", vm); err != nil {
			return fmt.Errorf("--vmodule: %w", err)
		}
	}
	return nil
}

// loadConfigFile applies a YAML config file to the command's flags: each key
// is a flag name; a flag given on the command line or by its environment
// variable wins over the file. A missing default file is not an error.
func loadConfigFile(c *cli.Context, path string, explicit bool) error {
	return loadConfig(c, path, explicit, false)
}

// loadConfig is loadConfigFile; with ignoreUnknown, keys that are not
// flags of the command are skipped (`k1s etcd-snapshot` reads the
// server's file, as k3s's does).
func loadConfig(c *cli.Context, path string, explicit, ignoreUnknown bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) && !explicit {
			return nil
		}
		return fmt.Errorf("--config: %w", err)
	}
	var values map[string]yaml.Node
	if err := yaml.Unmarshal(data, &values); err != nil {
		return fmt.Errorf("--config %s: not a YAML map of flag names to values: %w", path, err)
	}
	known := map[string]cli.Flag{}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			known[n] = f
		}
	}
	for key, node := range values {
		f, ok := known[key]
		if !ok && ignoreUnknown {
			continue
		}
		if !ok {
			return fmt.Errorf("--config %s: unknown key %q (keys are the flag names of `k1s %s`)", path, key, c.Command.Name)
		}
		if c.IsSet(key) {
			continue
		}
		// Values are taken as written, as on the command line: a mode 0644
		// stays 0644 (not YAML 1.1's octal 420) and 1000000 does not
		// become 1e+06.
		var items []string
		switch node.Kind {
		case yaml.ScalarNode:
			if node.ShortTag() == "!!null" {
				continue
			}
			items = []string{node.Value}
		case yaml.SequenceNode:
			for _, it := range node.Content {
				if it.Kind != yaml.ScalarNode {
					return fmt.Errorf("--config %s: key %q: list items must be plain values", path, key)
				}
				items = append(items, it.Value)
			}
		default:
			return fmt.Errorf("--config %s: key %q: not a value or a list of values", path, key)
		}
		if !takesList(f) && len(items) > 1 {
			return fmt.Errorf("--config %s: key %q takes one value", path, key)
		}
		for _, it := range items {
			if err := c.Set(key, it); err != nil {
				return fmt.Errorf("--config %s: key %q: %w", path, key, err)
			}
		}
	}
	return nil
}

// splitList flattens comma-separated list flag values.
func splitList(in []string) []string {
	var out []string
	for _, v := range in {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// env names a flag's K1S_* environment variable.
func env(name string) []string { return []string{"K1S_" + name} }
