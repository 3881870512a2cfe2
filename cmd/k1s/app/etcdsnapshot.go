package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/k1s/k1s/server/etcdsnapshot"
)

// etcdSnapshotOptions are the flags of `k1s etcd-snapshot` (k3s's).
type etcdSnapshotOptions struct {
	configFile        string
	dataDir           string
	nodeName          string
	dir               string
	name              string
	compress          bool
	etcdClientPort    int
	datastoreEndpoint string
	retention         int
	output            string
}

func (o *etcdSnapshotOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "the server's YAML config file (keys that are not flags of this command are skipped)", Value: DefaultConfigFile, EnvVars: env("CONFIG_FILE"), Destination: &o.configFile},
		&cli.StringFlag{Name: "data-dir", Aliases: []string{"d"}, Usage: "the server's data directory", Value: "/var/lib/k1s", EnvVars: env("DATA_DIR"), Destination: &o.dataDir},
		&cli.StringFlag{Name: "node-name", Usage: "node name in the snapshot's name (default: the hostname)", EnvVars: env("NODE_NAME"), Destination: &o.nodeName},
		&cli.StringFlag{Name: "etcd-snapshot-dir", Aliases: []string{"dir"}, Usage: "snapshot directory (default: <data-dir>/server/db/snapshots)", Destination: &o.dir},
		&cli.StringFlag{Name: "name", Usage: "base name of the snapshot (followed by the node name and the Unix time)", Value: etcdsnapshot.DefaultOnDemandName, Destination: &o.name},
		&cli.BoolFlag{Name: "etcd-snapshot-compress", Aliases: []string{"snapshot-compress"}, Usage: "compress the snapshot (zip)", Destination: &o.compress},
		&cli.IntFlag{Name: "etcd-client-port", Usage: "the server's embedded etcd client port (loopback)", Value: 2379, Destination: &o.etcdClientPort},
		&cli.StringFlag{Name: "datastore-endpoint", Usage: "set when the server uses an external datastore: snapshots are then refused", EnvVars: env("DATASTORE_ENDPOINT"), Destination: &o.datastoreEndpoint},
	}
}

// etcdSnapshotCommand is `k1s etcd-snapshot`: save, ls, delete, prune.
func etcdSnapshotCommand() *cli.Command {
	o := &etcdSnapshotOptions{}
	sub := func(name, usage string, action func(*cli.Context, *etcdSnapshotOptions) error, extra ...cli.Flag) *cli.Command {
		return &cli.Command{
			Name:  name,
			Usage: usage,
			Flags: append(o.flags(), extra...),
			Action: func(c *cli.Context) error {
				if err := loadConfig(c, o.configFile, c.IsSet("config"), true); err != nil {
					return err
				}
				if err := o.complete(); err != nil {
					return err
				}
				return action(c, o)
			},
		}
	}
	save := sub("save", "take a snapshot of the running server's etcd now", runSnapshotSave)
	ls := sub("ls", "list the snapshots", runSnapshotList,
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "list format: table or json", Value: "table", Destination: &o.output})
	ls.Aliases = []string{"list", "l"}
	del := sub("delete", "delete the named snapshots", runSnapshotDelete)
	del.ArgsUsage = "NAME..."
	prune := sub("prune", "delete the snapshots of --name past the newest --snapshot-retention", runSnapshotPrune,
		&cli.IntFlag{Name: "snapshot-retention", Usage: "snapshots of the name to keep", Value: etcdsnapshot.DefaultRetention, Destination: &o.retention})
	return &cli.Command{
		Name:        "etcd-snapshot",
		Usage:       "save, list, delete and prune snapshots of the embedded etcd",
		Subcommands: []*cli.Command{save, ls, del, prune},
	}
}

func (o *etcdSnapshotOptions) complete() error {
	if o.datastoreEndpoint != "" {
		return errors.New("etcd-snapshot: the server uses an external datastore (--datastore-endpoint); snapshots are of the embedded etcd only: back that datastore up with its own tools")
	}
	if o.dir == "" {
		o.dir = etcdsnapshot.DefaultDir(o.dataDir)
	}
	if o.nodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--node-name: %w", err)
		}
		o.nodeName = strings.ToLower(h)
	}
	if err := etcdsnapshot.ValidateName("--name", o.name); err != nil {
		return err
	}
	if o.etcdClientPort < 1 || o.etcdClientPort > 65535 {
		return fmt.Errorf("--etcd-client-port: %d is not a valid port", o.etcdClientPort)
	}
	return nil
}

// etcd is how `save` reaches the server's etcd: its loopback client port
// with the etcd client certificate of the data dir (k3s's way).
func (o *etcdSnapshotOptions) etcd() (etcdsnapshot.Etcd, error) {
	tls := filepath.Join(o.dataDir, "server", "tls", "etcd")
	e := etcdsnapshot.Etcd{
		Endpoint: "https://127.0.0.1:" + strconv.Itoa(o.etcdClientPort),
		CAFile:   filepath.Join(tls, "server-ca.crt"),
		CertFile: filepath.Join(tls, "client.crt"),
		KeyFile:  filepath.Join(tls, "client.key"),
	}
	for _, f := range []string{e.CAFile, e.CertFile, e.KeyFile} {
		if _, err := os.Stat(f); err != nil {
			return e, fmt.Errorf("--data-dir %s: no etcd client certificate (is it a k1s server's data dir?): %w", o.dataDir, err)
		}
	}
	return e, nil
}

func runSnapshotSave(c *cli.Context, o *etcdSnapshotOptions) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("etcd-snapshot save takes no arguments, got %q", c.Args().Slice())
	}
	e, err := o.etcd()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, 10*time.Minute)
	defer cancel()
	f, err := etcdsnapshot.Take(ctx, etcdsnapshot.SaveFrom(e), etcdsnapshot.Options{Dir: o.dir, Name: o.name, NodeName: o.nodeName, Compress: o.compress}, time.Now())
	if err != nil {
		return fmt.Errorf("etcd-snapshot save: %w (is the server running?)", err)
	}
	fmt.Fprintf(c.App.Writer, "Snapshot %s saved.\n", f.Path)
	return nil
}

// snapshotListItem is a snapshot as `ls -o json` prints it.
type snapshotListItem struct {
	Name       string    `json:"name"`
	Location   string    `json:"location"`
	Size       int64     `json:"size"`
	CreatedAt  time.Time `json:"createdAt"`
	Compressed bool      `json:"compressed"`
}

func runSnapshotList(c *cli.Context, o *etcdSnapshotOptions) error {
	files, err := etcdsnapshot.List(o.dir)
	if err != nil {
		return err
	}
	switch o.output {
	case "json":
		items := []snapshotListItem{}
		for _, f := range files {
			items = append(items, snapshotListItem{Name: f.Name, Location: "file://" + f.Path, Size: f.Size, CreatedAt: f.CreatedAt.UTC(), Compressed: f.Compressed})
		}
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(items)
	case "table", "":
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "Name\tLocation\tSize\tCreated")
		for _, f := range files {
			fmt.Fprintf(w, "%s\tfile://%s\t%d\t%s\n", f.Name, f.Path, f.Size, f.CreatedAt.Format(time.RFC3339))
		}
		return w.Flush()
	default:
		return fmt.Errorf("--output: %q is not table or json", o.output)
	}
}

func runSnapshotDelete(c *cli.Context, o *etcdSnapshotOptions) error {
	if c.Args().Len() == 0 {
		return errors.New("etcd-snapshot delete: name the snapshots to delete (see etcd-snapshot ls)")
	}
	deleted, err := etcdsnapshot.Delete(o.dir, c.Args().Slice())
	for _, n := range deleted {
		fmt.Fprintf(c.App.Writer, "Snapshot %s deleted.\n", n)
	}
	return err
}

func runSnapshotPrune(c *cli.Context, o *etcdSnapshotOptions) error {
	if o.retention < 1 {
		return fmt.Errorf("--snapshot-retention: %d must be at least 1", o.retention)
	}
	deleted, err := etcdsnapshot.Prune(o.dir, o.name+"-", o.retention)
	for _, n := range deleted {
		fmt.Fprintf(c.App.Writer, "Snapshot %s deleted.\n", n)
	}
	return err
}
