package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"

	"github.com/k1s/k1s/agent/join"
	"github.com/k1s/k1s/embed/containerd"
	"github.com/k1s/k1s/internal/pki"
)

// certificateCommand is `k1s certificate check|rotate`, k3s's: the
// certificates of a server's or an agent's data directory.
func certificateCommand() *cli.Command {
	var dataDir, configFile string
	var services cli.StringSlice
	common := func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "data-dir", Aliases: []string{"d"}, Usage: "k1s's data directory (default: the config file's data-dir, else /var/lib/k1s)", Value: containerd.DefaultDataDir, EnvVars: env("DATA_DIR"), Destination: &dataDir},
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "the server's or agent's config file, read for its data-dir", Value: DefaultConfigFile, EnvVars: env("CONFIG_FILE"), Destination: &configFile},
			&cli.StringSliceFlag{Name: "service", Aliases: []string{"s"}, Usage: "only these services' certificates (" + strings.Join(pki.Services(), ", ") + "; repeatable)", Destination: &services},
		}
	}
	setup := func(c *cli.Context) (string, []string, error) {
		if c.Args().Len() > 0 {
			return "", nil, fmt.Errorf("k1s certificate %s takes no arguments, got %q", c.Command.Name, c.Args().Slice())
		}
		dir := dataDir
		if !c.IsSet("data-dir") {
			d, err := configDataDir(configFile, c.IsSet("config"))
			if err != nil {
				return "", nil, err
			}
			if d != "" {
				dir = d
			}
		}
		svcs := splitList(services.Value())
		for _, s := range svcs {
			if !slices.Contains(pki.Services(), s) {
				return "", nil, fmt.Errorf("--service: %q is not one of %s", s, strings.Join(pki.Services(), ", "))
			}
		}
		return dir, svcs, nil
	}
	var output string
	return &cli.Command{
		Name:  "certificate",
		Usage: "check or renew the certificates in the data directory",
		Subcommands: []*cli.Command{
			{
				Name:  "check",
				Usage: "list the certificates with their subject, expiry and time left; warn within 90 days of expiry",
				Flags: append(common(), &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "text or table", Value: "text", Destination: &output}),
				Action: func(c *cli.Context) error {
					dir, svcs, err := setup(c)
					if err != nil {
						return err
					}
					if output != "text" && output != "table" {
						return fmt.Errorf("--output: %q is not text or table", output)
					}
					return checkCerts(c.App.Writer, dir, svcs, output, time.Now())
				},
			},
			{
				Name:  "rotate",
				Usage: "renew the leaf certificates (not the CAs) at the next start; run it with k1s stopped",
				Description: "On a server, backs up the chosen services' certificates and keys to <data-dir>/server/tls-<time> and removes " +
					"them: the next `k1s server` issues new ones from the CAs. On an agent, backs up the node's certificates to " +
					"<data-dir>/agent/tls-<time> and has the next `k1s agent` renew them with certificate signing requests, as the node " +
					"(no token needed). The certificates of a running k1s renew themselves before they expire.",
				Flags: common(),
				Action: func(c *cli.Context) error {
					dir, svcs, err := setup(c)
					if err != nil {
						return err
					}
					return rotateCerts(c.App.Writer, dir, svcs, time.Now())
				},
			},
		},
	}
}

// configDataDir is the data-dir key of the config file at path ("" when
// it has none; a missing default file is not an error).
func configDataDir(path string, explicit bool) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !explicit {
			return "", nil
		}
		return "", fmt.Errorf("--config: %w", err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		return "", fmt.Errorf("--config %s: not a YAML map of flag names to values: %w", path, err)
	}
	d, _ := values["data-dir"].(string)
	return d, nil
}

// certFile is one certificate of a data directory.
type certFile struct {
	service string // "" for a CA
	cert    string // path
	key     string // path; "" for a CA this node does not hold the key of
	// byCSR: a joined agent's, issued by the server through a
	// certificate signing request (renewed by `k1s agent` itself).
	byCSR bool
}

// certFiles lists the certificates of dataDir that exist, those of
// services only when any are named (CAs then not), and whether dataDir
// is a server's.
func certFiles(dataDir string, services []string) ([]certFile, bool, error) {
	serverTLS := filepath.Join(dataDir, "server", "tls")
	nodeTLS := filepath.Join(dataDir, "agent", "tls")
	_, err := os.Stat(serverTLS)
	isServer := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	var all []certFile
	if isServer {
		for _, name := range pki.CANames {
			all = append(all, certFile{cert: filepath.Join(serverTLS, name+".crt"), key: filepath.Join(serverTLS, name+".key")})
		}
	} else {
		// A joined agent holds the server's CAs, not their keys.
		all = append(all, certFile{cert: filepath.Join(nodeTLS, "server-ca.crt")}, certFile{cert: filepath.Join(nodeTLS, "client-ca.crt")})
	}
	for _, l := range pki.Leaves {
		dir := serverTLS
		if l.Node {
			dir = nodeTLS
		} else if !isServer {
			continue
		}
		all = append(all, certFile{service: l.Service, cert: filepath.Join(dir, l.Name+".crt"), key: filepath.Join(dir, l.Name+".key"), byCSR: !isServer})
	}
	var out []certFile
	for _, f := range all {
		if len(services) > 0 && !slices.Contains(services, f.service) {
			continue
		}
		if _, err := os.Stat(f.cert); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, false, err
		}
		out = append(out, f)
	}
	return out, isServer, nil
}

// checkCerts prints each certificate of dataDir (k3s's lines, or a
// table) as of now.
func checkCerts(w io.Writer, dataDir string, services []string, output string, now time.Time) error {
	files, _, err := certFiles(dataDir, services)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no certificates under %s (--data-dir: a k1s server's or agent's data directory)", dataDir)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	if output == "table" {
		fmt.Fprintln(tw, "FILENAME\tSERVICE\tSUBJECT\tUSAGES\tEXPIRES\tRESIDUAL TIME\tSTATUS")
	}
	for _, f := range files {
		rel, _ := filepath.Rel(dataDir, f.cert)
		in, err := pki.Inspect(f.cert, now)
		if err != nil {
			fmt.Fprintf(tw, "%s: cannot read: %v\n", rel, err)
			continue
		}
		service := f.service
		if service == "" {
			service = "(CA)"
		}
		usages := strings.Join(in.Usages, ",")
		if output == "table" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", rel, service, in.Subject, usages,
				in.NotAfter.UTC().Format("Jan 02, 2006 15:04 MST"), residual(in.NotAfter.Sub(now)), in.Status)
			continue
		}
		expires := in.NotAfter.UTC().Format(time.RFC3339)
		switch in.Status {
		case pki.StatusNotYetValid:
			fmt.Fprintf(tw, "%s: certificate %s (%s) is not valid before %s\n", rel, in.Subject, usages, in.NotBefore.UTC().Format(time.RFC3339))
		case pki.StatusExpired:
			fmt.Fprintf(tw, "%s: certificate %s (%s) expired at %s\n", rel, in.Subject, usages, expires)
		case pki.StatusWarning:
			fmt.Fprintf(tw, "%s: certificate %s (%s) will expire within %d days at %s (%s left)\n", rel, in.Subject, usages,
				int(pki.DefaultRenewBefore.Hours()/24), expires, residual(in.NotAfter.Sub(now)))
		default:
			fmt.Fprintf(tw, "%s: certificate %s (%s) is ok, expires at %s (%s left)\n", rel, in.Subject, usages, expires, residual(in.NotAfter.Sub(now)))
		}
	}
	return tw.Flush()
}

// residual is a time left in its largest unit: 364d, 5h, 9m, 0m; -2d
// once past.
func residual(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%s%dd", sign, int(d.Hours()/24))
	case d >= time.Hour:
		return fmt.Sprintf("%s%dh", sign, int(d.Hours()))
	}
	return fmt.Sprintf("%s%dm", sign, int(d.Minutes()))
}

// rotateCerts backs up the leaf certificates of services (all when none
// is named) and makes the next start renew them: a server's are removed
// (it issues them again from its CAs), a joined agent's are marked for
// renewal by join.RenewFile.
func rotateCerts(w io.Writer, dataDir string, services []string, now time.Time) error {
	files, isServer, err := certFiles(dataDir, services)
	if err != nil {
		return err
	}
	files = slices.DeleteFunc(files, func(f certFile) bool { return f.service == "" })
	if len(files) == 0 {
		return fmt.Errorf("no leaf certificates to rotate under %s (--data-dir, --service)", dataDir)
	}
	if isServer {
		if err := checkServerStopped(dataDir); err != nil {
			return err
		}
	}
	role := "agent"
	if isServer {
		role = "server"
	}
	backup := filepath.Join(dataDir, role, fmt.Sprintf("tls-%d", now.Unix()))
	var done []string
	for _, f := range files {
		for _, path := range []string{f.cert, f.key} {
			rel, err := filepath.Rel(dataDir, path)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return err
			}
			if err := pki.WriteFileAtomic(filepath.Join(backup, rel), data, 0o600); err != nil {
				return fmt.Errorf("back up %s: %w", path, err)
			}
		}
		if !slices.Contains(done, f.service) {
			done = append(done, f.service)
		}
	}
	for _, f := range files {
		if f.byCSR {
			marker := filepath.Join(filepath.Dir(f.cert), join.RenewFile)
			if err := pki.WriteFileAtomic(marker, []byte("renew the node's certificates at the next start\n"), 0o600); err != nil {
				return err
			}
			continue
		}
		for _, path := range []string{f.cert, f.key} {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	fmt.Fprintf(w, "Rotating certificates of %s\n", strings.Join(done, ", "))
	fmt.Fprintf(w, "Backed up the certificates to %s; restart k1s %s to renew them\n", backup, role)
	return nil
}

// checkServerStopped refuses while a k1s server runs on dataDir: its
// embedded etcd holds a lock on its database (a server on an external
// datastore cannot be told).
func checkServerStopped(dataDir string) error {
	db := filepath.Join(dataDir, "server", "db", "etcd", "member", "snap", "db")
	f, err := os.Open(db)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return errors.New("k1s server is running on this data directory: stop it first (its certificates renew themselves while it runs)")
		}
		return fmt.Errorf("lock %s: %w", db, err)
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
