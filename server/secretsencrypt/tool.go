package secretsencrypt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Tool runs the steps of `k1s secrets-encrypt` on a server's data
// directory. Not safe for concurrent use (nor are two commands at once).
type Tool struct {
	// DataDir is the server's data directory. Required.
	DataDir string
	// Client is an admin client of the running server; the steps that
	// need the server (status's loaded hash, reencrypt, rotate-keys) use
	// it. Nil: those report that they need it.
	Client kubernetes.Interface
	// Out receives the report. Default io.Discard.
	Out io.Writer
	// Clock names new keys. Default the real clock.
	Clock clock.Clock
	// LoadTimeout bounds the wait for the server to load a new file.
	// Default 2 minutes (the server polls it every 5 s; at start it reads it).
	LoadTimeout time.Duration
}

func (t *Tool) out() io.Writer {
	if t.Out == nil {
		return io.Discard
	}
	return t.Out
}

func (t *Tool) now() time.Time {
	if t.Clock == nil {
		return time.Now()
	}
	return t.Clock.Now()
}

func (t *Tool) path() string { return ConfigPath(t.DataDir) }

// Status prints whether secrets are encrypted, the rotation stage,
// whether the running server uses the file, and the keys.
func (t *Tool) Status(ctx context.Context) error {
	cfg, data, err := readConfig(t.path())
	if err != nil {
		return err
	}
	providers := *secretsProviders(cfg)
	w := t.out()
	state := "Disabled"
	if enabled(providers) {
		state = "Enabled"
	}
	fmt.Fprintf(w, "Encryption Status: %s\n", state)
	fmt.Fprintf(w, "Current Rotation Stage: %s\n", readStage(t.DataDir))
	switch loaded, err := t.loadedHash(ctx); {
	case err != nil:
		fmt.Fprintf(w, "Server Encryption Hashes: unknown (%v)\n", err)
	case loaded == contentHash(data):
		fmt.Fprintln(w, "Server Encryption Hashes: All hashes match")
	default:
		fmt.Fprintln(w, "Server Encryption Hashes: the server has not loaded the current file yet (it reads it within seconds, or on restart)")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Active\tKey Type\tName")
	fmt.Fprintln(tw, "------\t--------\t----")
	first := true
	for _, p := range providers {
		var kind string
		var keys []apiserverv1.Key
		switch {
		case p.AESCBC != nil:
			kind, keys = "AES-CBC", p.AESCBC.Keys
		case p.Secretbox != nil:
			kind, keys = "XSalsa20-POLY1305", p.Secretbox.Keys
		case p.Identity != nil:
			kind, keys = "Identity", []apiserverv1.Key{{Name: "identity"}}
		default:
			continue
		}
		for _, k := range keys {
			mark := ""
			if first {
				mark = " *"
			}
			first = false
			fmt.Fprintf(tw, "%s\t%s\t%s\n", mark, kind, k.Name)
		}
	}
	return tw.Flush()
}

// Enable makes new and rewritten secrets encrypted again: the keyed
// provider goes first. The server takes it when it reads the file
// again (within seconds) or on restart; existing secrets stay as they
// are until reencrypt.
func (t *Tool) Enable() error {
	return t.edit(func(providers *[]apiserverv1.ProviderConfiguration) error {
		i, _, _ := keyed(*providers)
		if i < 0 {
			return errors.New("the file has no aescbc or secretbox keys to enable")
		}
		moveFirst(providers, i)
		return nil
	}, StageStart, "Secrets encryption enabled: new and rewritten secrets are encrypted once the server reads the file (within seconds, or restart k1s); run `k1s secrets-encrypt reencrypt` to encrypt the existing ones")
}

// Disable makes new and rewritten secrets stored unencrypted: identity
// goes first; the keys stay, so encrypted secrets stay readable.
func (t *Tool) Disable() error {
	return t.edit(func(providers *[]apiserverv1.ProviderConfiguration) error {
		i := identityIndex(*providers)
		if i < 0 {
			*providers = append(*providers, apiserverv1.ProviderConfiguration{Identity: &apiserverv1.IdentityConfiguration{}})
			i = len(*providers) - 1
		}
		moveFirst(providers, i)
		return nil
	}, StageStart, "Secrets encryption disabled: new and rewritten secrets are stored unencrypted once the server reads the file (within seconds, or restart k1s); run `k1s secrets-encrypt reencrypt` to decrypt the existing ones")
}

// Prepare adds a new key after the active ones (k3s's first step of a
// rotation): the server can read data written with it before it writes
// with it.
func (t *Tool) Prepare() error {
	if s := readStage(t.DataDir); s != StageStart && s != StageReencryptFinished {
		return fmt.Errorf("prepare: the rotation is at stage %s; it must be at %s or %s", s, StageStart, StageReencryptFinished)
	}
	return t.edit(func(providers *[]apiserverv1.ProviderConfiguration) error {
		_, name, keys := keyed(*providers)
		if keys == nil {
			return errors.New("the file has no aescbc or secretbox keys")
		}
		k, err := newKey(name, timeSuffix(t.now()))
		if err != nil {
			return err
		}
		*keys = append(*keys, k)
		return nil
	}, StagePrepare, "New encryption key added; restart k1s (or wait for it to read the file), then run `k1s secrets-encrypt rotate`")
}

// Rotate makes the key prepare added the one secrets are written with.
func (t *Tool) Rotate() error {
	if s := readStage(t.DataDir); s != StagePrepare {
		return fmt.Errorf("rotate: the rotation is at stage %s; run `k1s secrets-encrypt prepare` first", s)
	}
	return t.edit(func(providers *[]apiserverv1.ProviderConfiguration) error {
		_, _, keys := keyed(*providers)
		if keys == nil || len(*keys) < 2 {
			return errors.New("the file has no prepared key")
		}
		k := *keys
		*keys = append([]apiserverv1.Key{k[len(k)-1]}, k[:len(k)-1]...)
		return nil
	}, StageRotate, "Encryption keys rotated; restart k1s (or wait for it to read the file), then run `k1s secrets-encrypt reencrypt`")
}

// Reencrypt waits until the server uses the current file, rewrites every
// Secret with its first provider, and then, unless skipDelete, drops the
// keys other than the one in use.
func (t *Tool) Reencrypt(ctx context.Context, skipDelete bool) error {
	_, data, err := readConfig(t.path())
	if err != nil {
		return err
	}
	if err := t.waitLoaded(ctx, contentHash(data)); err != nil {
		return err
	}
	if err := writeStage(t.DataDir, StageReencryptActive); err != nil {
		return err
	}
	n, err := t.rewriteSecrets(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(t.out(), "Reencrypted %d secrets\n", n)
	if !skipDelete {
		if err := t.dropOldKeys(ctx); err != nil {
			return err
		}
	}
	return writeStage(t.DataDir, StageReencryptFinished)
}

// RotateKeys rotates without restarts (k3s's rotate-keys): a new key
// first, every Secret rewritten with it, the old keys dropped.
func (t *Tool) RotateKeys(ctx context.Context) error {
	cfg, _, err := readConfig(t.path())
	if err != nil {
		return err
	}
	providers := secretsProviders(cfg)
	i, name, keys := keyed(*providers)
	if keys == nil {
		return errors.New("rotate-keys: the file has no aescbc or secretbox keys")
	}
	k, err := newKey(name, timeSuffix(t.now()))
	if err != nil {
		return err
	}
	*keys = append([]apiserverv1.Key{k}, *keys...)
	// Rotating keys encrypts: the keyed provider goes first.
	moveFirst(providers, i)
	if err := writeStage(t.DataDir, StageRotate); err != nil {
		return err
	}
	if err := writeConfig(t.path(), cfg); err != nil {
		return err
	}
	fmt.Fprintf(t.out(), "New encryption key %s written; waiting for the server to use it\n", k.Name)
	return t.Reencrypt(ctx, false)
}

// edit applies change to the secrets' providers, writes the file and
// the stage.
func (t *Tool) edit(change func(*[]apiserverv1.ProviderConfiguration) error, stage, done string) error {
	cfg, _, err := readConfig(t.path())
	if err != nil {
		return err
	}
	if err := change(secretsProviders(cfg)); err != nil {
		return err
	}
	if err := writeConfig(t.path(), cfg); err != nil {
		return err
	}
	if err := writeStage(t.DataDir, stage); err != nil {
		return err
	}
	fmt.Fprintln(t.out(), done)
	return nil
}

// dropOldKeys keeps only the key secrets are written with (and
// identity), and waits for the server to load that file.
func (t *Tool) dropOldKeys(ctx context.Context) error {
	cfg, _, err := readConfig(t.path())
	if err != nil {
		return err
	}
	providers := secretsProviders(cfg)
	if !enabled(*providers) {
		// Disabled: keys still read what was not rewritten; keep them.
		return nil
	}
	_, _, keys := keyed(*providers)
	if len(*keys) <= 1 {
		return nil
	}
	dropped := len(*keys) - 1
	*keys = (*keys)[:1]
	if err := writeConfig(t.path(), cfg); err != nil {
		return err
	}
	_, data, err := readConfig(t.path())
	if err != nil {
		return err
	}
	if err := t.waitLoaded(ctx, contentHash(data)); err != nil {
		return err
	}
	fmt.Fprintf(t.out(), "Removed %d old encryption keys\n", dropped)
	return nil
}

// moveFirst moves providers[i] to the front.
func moveFirst(providers *[]apiserverv1.ProviderConfiguration, i int) {
	p := *providers
	if i <= 0 {
		return
	}
	moved := p[i]
	copy(p[1:i+1], p[:i])
	p[0] = moved
}

// rewriteSecrets updates every Secret unchanged, which the storage layer
// writes again with the first provider when it was read with another.
func (t *Tool) rewriteSecrets(ctx context.Context) (int, error) {
	if t.Client == nil {
		return 0, errors.New("reencrypt needs the running server (no admin kubeconfig found)")
	}
	logger := klog.FromContext(ctx)
	n := 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := t.Client.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return n, fmt.Errorf("list secrets: %w", err)
		}
		for i := range list.Items {
			if err := t.rewrite(ctx, &list.Items[i]); err != nil {
				return n, err
			}
			n++
			logger.V(4).Info("Secret reencrypted", "secret", klog.KObj(&list.Items[i]))
		}
		if list.Continue == "" {
			return n, nil
		}
		opts.Continue = list.Continue
	}
}

func (t *Tool) rewrite(ctx context.Context, s *corev1.Secret) error {
	for attempt := 0; ; attempt++ {
		_, err := t.Client.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err) && attempt < 5:
			// Changed meanwhile: that write already used the first provider,
			// but rewrite the latest anyway.
			if s, err = t.Client.CoreV1().Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{}); err != nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("reencrypt secret %s/%s: %w", s.Namespace, s.Name, err)
			}
		default:
			return fmt.Errorf("reencrypt secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
}

// configInfoMetric is the apiserver's metric naming the hash of the
// encryption configuration it uses.
const configInfoMetric = "apiserver_encryption_config_controller_last_config_info"

// loadedHash is the hash of the encryption configuration the server uses.
func (t *Tool) loadedHash(ctx context.Context) (string, error) {
	if t.Client == nil {
		return "", errors.New("no admin kubeconfig found to ask the server")
	}
	raw, err := t.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("read the server's metrics: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, configInfoMetric+"{") {
			continue
		}
		if h, ok := label(line, "hash"); ok {
			return h, nil
		}
	}
	return "", errors.New("the server uses no encryption configuration (was it started with --secrets-encryption?)")
}

// waitLoaded waits until the server uses the configuration of hash.
func (t *Tool) waitLoaded(ctx context.Context, hash string) error {
	if t.Client == nil {
		return errors.New("no admin kubeconfig found to ask the server whether it uses the new file")
	}
	timeout := t.LoadTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		h, err := t.loadedHash(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		last = fmt.Errorf("the server still uses %s, not %s", h, hash)
		return h == hash, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the server to load %s: %w (%v)", t.path(), err, last)
	}
	return nil
}

// label is the value of a label of a metric line in the text format.
func label(line, name string) (string, bool) {
	open := strings.IndexByte(line, '{')
	end := strings.LastIndexByte(line, '}')
	if open < 0 || end < open {
		return "", false
	}
	for _, kv := range strings.Split(line[open+1:end], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == name {
			return strings.Trim(v, `"`), true
		}
	}
	return "", false
}
