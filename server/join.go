package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/internal/bootstraptoken"
	"github.com/k1s/k1s/internal/jointoken"
	"github.com/k1s/k1s/internal/pki"
)

// joinInfo keeps what agents need to join: the node join token (written to
// <data-dir>/server/token and node-token, its bootstrap token stored as a
// Secret in kube-system) and the cluster-info ConfigMap.
type joinInfo struct {
	client   kubernetes.Interface
	dir      string // <data-dir>/server
	caFile   string
	settings map[string]string
	retry    time.Duration
	// bearer is the "<id>.<secret>" a new token takes (--token on a new
	// cluster's server); empty: a random one.
	bearer string
	// agentBearer is the agent token's "<id>.<secret>" (--agent-token):
	// a bootstrap token of its own that lets agents join and never a
	// server. Empty: agents join with the server token, which
	// <data-dir>/server/agent-token then holds too, as in k3s.
	agentBearer string
}

func (j *joinInfo) Run(ctx context.Context) error {
	for {
		err := j.ensure(ctx)
		if err == nil {
			break
		}
		klog.FromContext(ctx).V(2).Info("Join token not in place yet", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(j.retry):
		}
	}
	<-ctx.Done()
	return nil
}

func (j *joinInfo) ensure(ctx context.Context) error {
	tok, err := j.token()
	if err != nil {
		return err
	}
	if err := j.ensureSecret(ctx, serverToken(tok)); err != nil {
		return err
	}
	if err := j.ensureAgentToken(ctx, tok); err != nil {
		return err
	}
	return j.ensureClusterInfo(ctx)
}

// token reads the join token, or makes one: a new bootstrap token with the
// CA bundle's hash. An existing token whose CA hash is stale (the CA was
// replaced) keeps its bootstrap token and gets the new hash.
func (j *joinInfo) token() (jointoken.Token, error) {
	ca, err := os.ReadFile(j.caFile)
	if err != nil {
		return jointoken.Token{}, fmt.Errorf("read the server CA: %w", err)
	}
	path := filepath.Join(j.dir, "token")
	var bearer string
	if data, err := os.ReadFile(path); err == nil {
		old, perr := jointoken.Parse(string(data))
		if perr != nil {
			return jointoken.Token{}, fmt.Errorf("%s: %w", path, perr)
		}
		bearer = old.Bearer()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return jointoken.Token{}, err
	} else if bearer = j.bearer; bearer == "" {
		if bearer, err = bootstraptoken.Generate(); err != nil {
			return jointoken.Token{}, err
		}
	}
	tok, err := jointoken.New(ca, bearer)
	if err != nil {
		return jointoken.Token{}, err
	}
	if err := writeJoinToken(j.dir, tok); err != nil {
		return jointoken.Token{}, err
	}
	return tok, nil
}

// agentTokenFile is <data-dir>/server/agent-token: the token agents join
// with (k3s's file).
const agentTokenFile = "agent-token"

// agentToken is the bootstrap token behind --agent-token: like the server
// token's, it authenticates agents in the k1s node group; the server join
// endpoints (cluster.go) take only the server token.
func agentToken(tok jointoken.Token) bootstraptoken.Token {
	return bootstraptoken.Token{
		ID:          tok.ID,
		Secret:      tok.Secret,
		Description: "k1s agent join token (--agent-token, <data-dir>/server/agent-token)",
		Usages:      []string{bootstraptoken.UsageAuthentication},
		Groups:      []string{bootstraptoken.DefaultGroup},
	}
}

// ensureAgentToken writes <data-dir>/server/agent-token: the agent token
// (its bootstrap Secret stored first) or, without --agent-token, the
// server token. A previous agent token that was replaced loses its
// Secret, so agents can no longer join with it.
func (j *joinInfo) ensureAgentToken(ctx context.Context, server jointoken.Token) error {
	path := filepath.Join(j.dir, agentTokenFile)
	var old jointoken.Token
	if data, err := os.ReadFile(path); err == nil {
		old, _ = jointoken.Parse(string(data))
	}
	tok := server
	if j.agentBearer != "" {
		ca, err := os.ReadFile(j.caFile)
		if err != nil {
			return fmt.Errorf("read the server CA: %w", err)
		}
		agent, err := jointoken.New(ca, j.agentBearer)
		if err != nil {
			return fmt.Errorf("--agent-token: %w", err)
		}
		if agent.ID == server.ID {
			return fmt.Errorf("--agent-token: the agent token has the server token's id %q: give it an id of its own", agent.ID)
		}
		if err := j.ensureSecret(ctx, agentToken(agent)); err != nil {
			return fmt.Errorf("store the agent token: %w", err)
		}
		tok = agent
	}
	if old.ID != "" && old.ID != tok.ID && old.ID != server.ID {
		name := bootstraptoken.SecretName(old.ID)
		if err := j.client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete the replaced agent token's secret %s: %w", name, err)
		}
	}
	if cur, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(cur)) == tok.String() {
		return nil
	}
	return pki.WriteFileAtomic(path, []byte(tok.String()+"\n"), 0o600)
}

// joinTokenFiles are the files in <data-dir>/server holding the join
// token, "token" first: the server reads that one at start.
var joinTokenFiles = []string{"token", "node-token"}

// writeJoinToken writes tok to the join token files that differ.
func writeJoinToken(serverDir string, tok jointoken.Token) error {
	for _, name := range joinTokenFiles {
		p := filepath.Join(serverDir, name)
		if cur, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(cur)) == tok.String() {
			continue
		}
		if err := pki.WriteFileAtomic(p, []byte(tok.String()+"\n"), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// serverToken is the bootstrap token behind the server's join token: it
// does not expire, authenticates (and nothing else), and puts its bearer
// in the k1s node group.
func serverToken(tok jointoken.Token) bootstraptoken.Token {
	return bootstraptoken.Token{
		ID:          tok.ID,
		Secret:      tok.Secret,
		Description: "k1s node join token (<data-dir>/server/token)",
		Usages:      []string{bootstraptoken.UsageAuthentication},
		Groups:      []string{bootstraptoken.DefaultGroup},
	}
}

// ensureSecret stores a bootstrap token's Secret when missing.
func (j *joinInfo) ensureSecret(ctx context.Context, bt bootstraptoken.Token) error {
	secret, err := bootstraptoken.ToSecret(bt)
	if err != nil {
		return err
	}
	secrets := j.client.CoreV1().Secrets(metav1.NamespaceSystem)
	_, err = secrets.Get(ctx, secret.Name, metav1.GetOptions{})
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	_, err = secrets.Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// RotateJoinToken replaces the server's join token (`k1s token rotate`):
// it stores the new token's bootstrap Secret, rewrites
// <dataDir>/server/token and node-token, and deletes the old token's
// Secret, so agents joining with the old token are refused. bearer is the
// new "<id>.<secret>", or "" for a random one. A server started later
// reads the new token from its file and keeps it. Agents that have joined
// hold certificates and need no token. It runs where the server's data
// dir is, as the user who may write it.
func RotateJoinToken(ctx context.Context, client kubernetes.Interface, dataDir, bearer string) (jointoken.Token, error) {
	serverDir := filepath.Join(dataDir, "server")
	path := filepath.Join(serverDir, joinTokenFiles[0])
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return jointoken.Token{}, fmt.Errorf("--data-dir: no join token at %s: rotate on the server, with its --data-dir", path)
	}
	if err != nil {
		return jointoken.Token{}, fmt.Errorf("--data-dir: %w", err)
	}
	old, err := jointoken.Parse(string(data))
	if err != nil {
		return jointoken.Token{}, fmt.Errorf("%s: %w", path, err)
	}
	// The CA whose bundle the apiserver serves at /cacerts (pki.Ensure
	// keeps it as <data-dir>/server/tls/server-ca.crt).
	ca, err := os.ReadFile(filepath.Join(serverDir, "tls", "server-ca.crt"))
	if err != nil {
		return jointoken.Token{}, fmt.Errorf("read the server CA: %w", err)
	}
	if bearer == "" {
		if bearer, err = bootstraptoken.Generate(); err != nil {
			return jointoken.Token{}, err
		}
	}
	tok, err := jointoken.New(ca, bearer)
	if err != nil {
		return jointoken.Token{}, fmt.Errorf("--new-token: %w", err)
	}
	if tok.ID == old.ID {
		return jointoken.Token{}, fmt.Errorf("--new-token: the new token has the current token's id %q", old.ID)
	}
	secret, err := bootstraptoken.ToSecret(serverToken(tok))
	if err != nil {
		return jointoken.Token{}, err
	}
	secrets := client.CoreV1().Secrets(metav1.NamespaceSystem)
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return jointoken.Token{}, fmt.Errorf("--new-token: a bootstrap token with id %q exists already", tok.ID)
		}
		return jointoken.Token{}, fmt.Errorf("store the new join token: %w", err)
	}
	if err := writeJoinToken(serverDir, tok); err != nil {
		// Leave no token behind that nothing names.
		if derr := secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
			return jointoken.Token{}, errors.Join(err, fmt.Errorf("delete the new token's secret %s: %w", secret.Name, derr))
		}
		return jointoken.Token{}, err
	}
	// agent-token follows when it is the server token (no --agent-token).
	agentPath := filepath.Join(serverDir, agentTokenFile)
	if cur, err := os.ReadFile(agentPath); err == nil && strings.TrimSpace(string(cur)) == old.String() {
		if err := pki.WriteFileAtomic(agentPath, []byte(tok.String()+"\n"), 0o600); err != nil {
			return tok, fmt.Errorf("the join token is rotated, but %s still holds the old one: %w", agentPath, err)
		}
	}
	oldName := bootstraptoken.SecretName(old.ID)
	if err := secrets.Delete(ctx, oldName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return tok, fmt.Errorf("the join token is rotated, but the old token's secret %s is left: %w", oldName, err)
	}
	return tok, nil
}

// ensureClusterInfo writes the settings agents read and lets every
// authenticated client read them.
func (j *joinInfo) ensureClusterInfo(ctx context.Context) error {
	cms := j.client.CoreV1().ConfigMaps(metav1.NamespacePublic)
	cur, err := cms.Get(ctx, jointoken.ClusterInfoName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: jointoken.ClusterInfoName}, Data: j.settings}, metav1.CreateOptions{})
	case err == nil && !equalMaps(cur.Data, j.settings):
		cur = cur.DeepCopy()
		cur.Data = j.settings
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("cluster-info ConfigMap: %w", err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "k1s:cluster-info-reader", Namespace: metav1.NamespacePublic},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{jointoken.ClusterInfoName}, Verbs: []string{"get"}}},
	}
	if _, err := j.client.RbacV1().Roles(metav1.NamespacePublic).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "k1s:cluster-info-reader", Namespace: metav1.NamespacePublic},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}},
	}
	if _, err := j.client.RbacV1().RoleBindings(metav1.NamespacePublic).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
