package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/k1s/k1s/internal/bootstraptoken"
	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/server"
)

// defaultDataDir is the data dir of `k1s server` when none is given.
const defaultDataDir = "/var/lib/k1s"

// tokenOptions are the flags shared by the `k1s token` commands that
// reach the cluster.
type tokenOptions struct {
	kubeconfig string
	dataDir    string
	// dataDirSet: --data-dir (or K1S_DATA_DIR) was given.
	dataDirSet bool
}

func (o *tokenOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "kubeconfig", Usage: "admin kubeconfig (default: $KUBECONFIG, /etc/k1s/k1s.yaml, then <data-dir>/server/cred/admin.kubeconfig)", Destination: &o.kubeconfig},
		&cli.StringFlag{Name: "data-dir", Aliases: []string{"d"}, Usage: "the server's data directory (default: the config file's data-dir, else " + defaultDataDir + ")", EnvVars: env("DATA_DIR"), Destination: &o.dataDir},
	}
}

// resolve fills the data dir: the flag, else the data-dir key of the
// server's config file, else the default.
func (o *tokenOptions) resolve(c *cli.Context) {
	o.dataDirSet = c.IsSet("data-dir")
	if o.dataDirSet {
		return
	}
	file := DefaultConfigFile
	if f := os.Getenv("K1S_CONFIG_FILE"); f != "" {
		file = f
	}
	o.dataDir = configuredDataDir(file)
	o.dataDirSet = o.dataDir != ""
	if o.dataDir == "" {
		o.dataDir = defaultDataDir
	}
}

// configuredDataDir is the data-dir key of a `k1s server` config file, or
// "" when there is none (or no readable file).
func configuredDataDir(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var values map[string]any
	if yaml.Unmarshal(data, &values) != nil {
		return ""
	}
	d, _ := values["data-dir"].(string)
	return d
}

// restConfig finds the admin kubeconfig as `k1s kubectl` does: --kubeconfig,
// $KUBECONFIG, /etc/k1s/k1s.yaml, the data dir's, ~/.kube/k1s.yaml; an
// explicit --data-dir puts its own first.
func (o *tokenOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.kubeconfig != "" {
		rules.ExplicitPath = o.kubeconfig
	} else if os.Getenv("KUBECONFIG") == "" {
		inDataDir := filepath.Join(o.dataDir, "server", "cred", "admin.kubeconfig")
		candidates := []string{"/etc/k1s/k1s.yaml", inDataDir}
		if o.dataDirSet {
			candidates = []string{inDataDir, "/etc/k1s/k1s.yaml"}
		}
		if home, err := os.UserHomeDir(); err == nil {
			candidates = append(candidates, filepath.Join(home, ".kube", "k1s.yaml"))
		}
		path := pickKubeconfig(nil, candidates)
		if path == "" {
			return nil, fmt.Errorf("--kubeconfig: no admin kubeconfig found (looked for %s); give --kubeconfig or --data-dir, or set $KUBECONFIG",
				strings.Join(candidates, ", "))
		}
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return cfg, nil
}

func (o *tokenOptions) client() (kubernetes.Interface, *rest.Config, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return client, cfg, nil
}

// tokenCommand is `k1s token`: bootstrap tokens to join nodes with.
func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "manage bootstrap tokens, which join agents (kubeadm's format, stored as Secrets in kube-system)",
		Description: "Tokens are bootstrap tokens <id>.<secret> ([a-z0-9]{6}.[a-z0-9]{16}) kept as Secrets bootstrap-token-<id> of type " +
			"bootstrap.kubernetes.io/token in kube-system; the server deletes them once they expire. `create` and `rotate` print the " +
			"token as `k1s agent --token` takes it: K10<sha256 of the cluster CA bundle>::<id>.<secret>. The commands reach the cluster " +
			"with the admin kubeconfig, found as `k1s kubectl` finds it.",
		Subcommands: []*cli.Command{
			tokenCreateCommand(),
			tokenListCommand(),
			tokenDeleteCommand(),
			tokenGenerateCommand(),
			tokenRotateCommand(),
		},
	}
}

func tokenCreateCommand() *cli.Command {
	o := &tokenOptions{}
	var (
		ttl         time.Duration
		description string
		usages      = cli.NewStringSlice(bootstraptoken.DefaultUsages()...)
		groups      = cli.NewStringSlice(bootstraptoken.DefaultGroup)
	)
	return &cli.Command{
		Name:      "create",
		Usage:     "create a bootstrap token and print it as a join token",
		ArgsUsage: "[TOKEN]",
		Description: "Creates the token TOKEN (<id>.<secret>), or a random one, and prints it with the cluster CA's hash, " +
			"ready for `k1s agent --token`.",
		Flags: append(o.flags(),
			&cli.DurationFlag{Name: "ttl", Usage: "time before the token expires and is deleted (0: never)", Value: bootstraptoken.DefaultTTL, Destination: &ttl},
			&cli.StringFlag{Name: "description", Usage: "what the token is for", Destination: &description},
			&cli.StringSliceFlag{Name: "usages", Usage: "what the token may be used for: authentication, signing", Value: usages},
			&cli.StringSliceFlag{Name: "groups", Usage: "extra groups the token authenticates in (system:bootstrappers:...)", Value: groups},
		),
		Action: func(c *cli.Context) error {
			o.resolve(c)
			if err := flagAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 1 {
				return fmt.Errorf("k1s token create takes at most one TOKEN, got %d arguments", c.NArg())
			}
			bearer := c.Args().First()
			if bearer == "" {
				var err error
				if bearer, err = bootstraptoken.Generate(); err != nil {
					return err
				}
			}
			id, secret, err := bootstraptoken.Split(bearer)
			if err != nil {
				return fmt.Errorf("TOKEN: %w", err)
			}
			if ttl < 0 {
				return fmt.Errorf("--ttl: %s is negative (0 means never)", ttl)
			}
			tok := bootstraptoken.Token{ID: id, Secret: secret, Description: description,
				Usages: splitList(c.StringSlice("usages")), Groups: splitList(c.StringSlice("groups"))}
			if err := bootstraptoken.ValidateUsages(tok.Usages); err != nil {
				return fmt.Errorf("--usages: %w", err)
			}
			if !c.IsSet("groups") && !slices.Contains(tok.Usages, bootstraptoken.UsageAuthentication) {
				// The default group only goes with a token that authenticates.
				tok.Groups = nil
			}
			if err := bootstraptoken.ValidateGroups(tok.Groups, tok.Usages); err != nil {
				return fmt.Errorf("--groups: %w", err)
			}
			if ttl > 0 {
				tok.Expires = time.Now().Add(ttl)
			}
			client, cfg, err := o.client()
			if err != nil {
				return err
			}
			join, err := createToken(c.Context, client, tok, caBundle(client.CoreV1().RESTClient(), cfg))
			if err != nil {
				return err
			}
			if join.CAHash == "" {
				fmt.Fprintln(c.App.ErrWriter, "warning: the cluster's CA bundle could not be read: the token carries no CA hash, and agents need --ca-file")
			}
			fmt.Fprintln(c.App.Writer, join.String())
			return nil
		},
	}
}

// flagAfterArgs reports an argument that looks like a flag: urfave/cli
// takes flags only before the arguments.
func flagAfterArgs(c *cli.Context) error {
	for _, a := range c.Args().Slice() {
		if strings.HasPrefix(a, "-") {
			return fmt.Errorf("%s: flags go before the arguments (k1s token %s [flags] args...)", strings.SplitN(a, "=", 2)[0], c.Command.Name)
		}
	}
	return nil
}

// createToken stores tok and returns it as a join token with the hash of
// the CA bundle ca (no hash when ca is empty).
func createToken(ctx context.Context, client kubernetes.Interface, tok bootstraptoken.Token, ca func(context.Context) []byte) (jointoken.Token, error) {
	secret, err := bootstraptoken.ToSecret(tok)
	if err != nil {
		return jointoken.Token{}, err
	}
	if _, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return jointoken.Token{}, fmt.Errorf("TOKEN: a bootstrap token with id %q exists already", tok.ID)
		}
		return jointoken.Token{}, fmt.Errorf("create the bootstrap token %q: %w", tok.ID, err)
	}
	join := jointoken.Token{ID: tok.ID, Secret: tok.Secret}
	if b := ca(ctx); len(b) > 0 {
		join.CAHash = jointoken.Hash(b)
	}
	return join, nil
}

// caBundle returns the bundle an agent will check the token against: the
// one the apiserver serves at /cacerts (read here over the kubeconfig's
// trusted connection), else the kubeconfig's CA, which is the same for
// k1s's own kubeconfigs.
func caBundle(client rest.Interface, cfg *rest.Config) func(context.Context) []byte {
	return func(ctx context.Context) []byte {
		if body, err := client.Get().AbsPath("/cacerts").DoRaw(ctx); err == nil && len(body) > 0 {
			return body
		}
		if len(cfg.CAData) > 0 {
			return cfg.CAData
		}
		if cfg.CAFile != "" {
			if b, err := os.ReadFile(cfg.CAFile); err == nil {
				return b
			}
		}
		return nil
	}
}

func tokenListCommand() *cli.Command {
	o := &tokenOptions{}
	return &cli.Command{
		Name:  "list",
		Usage: "list the bootstrap tokens",
		Flags: o.flags(),
		Action: func(c *cli.Context) error {
			o.resolve(c)
			if c.NArg() > 0 {
				return fmt.Errorf("k1s token list takes no arguments, got %q", c.Args().Slice())
			}
			client, _, err := o.client()
			if err != nil {
				return err
			}
			return listTokens(c.Context, client, c.App.Writer, c.App.ErrWriter, time.Now())
		},
	}
}

// listTokens prints kubeadm's columns; a malformed token Secret is
// reported on errw and skipped.
func listTokens(ctx context.Context, client kubernetes.Interface, w, errw io.Writer, now time.Time) error {
	list, err := client.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String(),
	})
	if err != nil {
		return fmt.Errorf("list bootstrap tokens: %w", err)
	}
	items := list.Items
	slices.SortFunc(items, func(a, b corev1.Secret) int { return strings.Compare(a.Name, b.Name) })
	tw := tabwriter.NewWriter(w, 10, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "TOKEN\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
	for i := range items {
		t, err := bootstraptoken.FromSecret(&items[i])
		if err != nil {
			fmt.Fprintf(errw, "warning: %v\n", err)
			continue
		}
		ttl, expires := "<forever>", "<never>"
		if !t.Expires.IsZero() {
			expires = t.Expires.Format(time.RFC3339)
			ttl = "<expired>"
			if !t.Expired(now) {
				ttl = duration.ShortHumanDuration(t.Expires.Sub(now))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Bearer(), ttl, expires, orNone(strings.Join(t.Usages, ",")),
			orNone(t.Description), orNone(strings.Join(t.Groups, ",")))
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func tokenDeleteCommand() *cli.Command {
	o := &tokenOptions{}
	return &cli.Command{
		Name:      "delete",
		Usage:     "delete bootstrap tokens (the server's own join token is replaced with rotate instead)",
		ArgsUsage: "ID|TOKEN...",
		Flags:     o.flags(),
		Action: func(c *cli.Context) error {
			o.resolve(c)
			if c.NArg() == 0 {
				return errors.New("k1s token delete: name at least one token id or token")
			}
			if err := flagAfterArgs(c); err != nil {
				return err
			}
			var ids []string
			for _, arg := range c.Args().Slice() {
				id, err := tokenID(arg)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			serverID := ""
			if data, err := os.ReadFile(filepath.Join(o.dataDir, "server", "token")); err == nil {
				if t, err := jointoken.Parse(string(data)); err == nil {
					serverID = t.ID
				}
			}
			client, _, err := o.client()
			if err != nil {
				return err
			}
			var errs []error
			for _, id := range ids {
				if id == serverID {
					errs = append(errs, fmt.Errorf("bootstrap token %q is the server's join token (%s): `k1s token rotate` replaces it",
						id, filepath.Join(o.dataDir, "server", "token")))
					continue
				}
				err := client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(c.Context, bootstraptoken.SecretName(id), metav1.DeleteOptions{})
				switch {
				case apierrors.IsNotFound(err):
					errs = append(errs, fmt.Errorf("bootstrap token %q not found", id))
				case err != nil:
					errs = append(errs, fmt.Errorf("delete bootstrap token %q: %w", id, err))
				default:
					fmt.Fprintf(c.App.Writer, "bootstrap token %q deleted\n", id)
				}
			}
			return errors.Join(errs...)
		},
	}
}

// tokenID reads a token id, a token "<id>.<secret>" or a join token
// "K10<hash>::<id>.<secret>"; its error never repeats a secret.
func tokenID(arg string) (string, error) {
	if bootstraputil.IsValidBootstrapTokenID(arg) {
		return arg, nil
	}
	t, err := jointoken.Parse(arg)
	if err != nil {
		return "", fmt.Errorf("ID|TOKEN: an argument is neither a token id %s nor a token: %w", bootstrapapi.BootstrapTokenIDPattern, err)
	}
	return t.ID, nil
}

func tokenGenerateCommand() *cli.Command {
	return &cli.Command{
		Name:  "generate",
		Usage: "print a new random bootstrap token (<id>.<secret>); nothing is stored",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("k1s token generate takes no arguments, got %q", c.Args().Slice())
			}
			tok, err := bootstraptoken.Generate()
			if err != nil {
				return err
			}
			fmt.Fprintln(c.App.Writer, tok)
			return nil
		},
	}
}

func tokenRotateCommand() *cli.Command {
	o := &tokenOptions{}
	var newToken string
	return &cli.Command{
		Name:  "rotate",
		Usage: "replace the server's join token (<data-dir>/server/token and node-token) and print the new one",
		Description: "Run on the server, as the user that runs it. The old token stops working at once; agents that have " +
			"joined keep working (they hold certificates). A restarted server keeps the new token.",
		Flags: append(o.flags(),
			&cli.StringFlag{Name: "new-token", Usage: "the new token <id>.<secret> (default: a random one)", Destination: &newToken},
		),
		Action: func(c *cli.Context) error {
			o.resolve(c)
			if c.NArg() > 0 {
				return fmt.Errorf("k1s token rotate takes no arguments, got %q", c.Args().Slice())
			}
			if newToken != "" {
				if _, _, err := bootstraptoken.Split(newToken); err != nil {
					return fmt.Errorf("--new-token: %w", err)
				}
			}
			client, _, err := o.client()
			if err != nil {
				return err
			}
			tok, err := server.RotateJoinToken(c.Context, client, o.dataDir, newToken)
			if tok.ID != "" {
				fmt.Fprintln(c.App.Writer, tok.String())
			}
			return err
		},
	}
}
