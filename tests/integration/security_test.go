package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/server/apiserver"
	"github.com/k1s/k1s/server/secretsencrypt"
	"github.com/k1s/k1s/tests/integration/framework"
)

// warningCollector records the API warnings a client is sent.
type warningCollector struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningCollector) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningCollector) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

func warningClient(t *testing.T, cfg *rest.Config) (kubernetes.Interface, *warningCollector) {
	t.Helper()
	w := &warningCollector{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = w
	return kubernetes.NewForConfigOrDie(cfg), w
}

// privilegedPod breaks every baseline and restricted check the drill found
// admitted: hostPID, hostNetwork, a hostPath of /, a privileged container.
func privilegedPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			HostPID:     true,
			HostNetwork: true,
			Volumes:     []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
			Containers: []corev1.Container{{
				Name: "c", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				VolumeMounts:    []corev1.VolumeMount{{Name: "root", MountPath: "/host"}},
			}},
		},
	}
}

func createNamespace(t *testing.T, c kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	// The ServiceAccount admission plugin refuses pods until the
	// namespace's default service account exists.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("namespace %s: no default service account: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeTestFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func containsAll(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q does not contain %q", what, got, w)
		}
	}
}

// TestPodSecurity checks PodSecurity admission: namespace labels enforce
// and warn, the config file's defaults apply to unlabelled namespaces,
// its exemptions (namespace, user, runtime class) admit what the level
// refuses, and a namespace label change dry-runs the pods already there.
func TestPodSecurity(t *testing.T) {
	psaConfig := writeTestFile(t, "psa.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      enforce-version: latest
    exemptions:
      usernames: ["exempt-user"]
      runtimeClasses: ["exempt-rc"]
      namespaces: ["exempt-ns"]
`)
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers("serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller")
	cfg.PodSecurityAdmissionConfigFile = psaConfig
	s := framework.StartWith(t, cfg)
	admin, warnings := warningClient(t, s.RESTConfig(t))
	ctx := context.Background()

	createNamespace(t, admin, "restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	createNamespace(t, admin, "warned", map[string]string{"pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/warn": "baseline"})
	createNamespace(t, admin, "plain", nil)
	createNamespace(t, admin, "exempt-ns", nil)

	t.Run("enforce restricted refuses a privileged pod naming the checks", func(t *testing.T) {
		_, err := admin.CoreV1().Pods("restricted").Create(ctx, privilegedPod("p"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("create: %v, want Forbidden", err)
		}
		containsAll(t, "refusal", err.Error(), `violates PodSecurity "restricted:latest"`, "host namespaces (hostNetwork=true, hostPID=true)",
			`privileged (container "c" must not set securityContext.privileged=true)`, `volume "root" uses restricted volume type "hostPath"`)
	})
	t.Run("a workload in an enforced namespace is admitted with warnings", func(t *testing.T) {
		pod := privilegedPod("x")
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: pod.Spec},
		}}
		warnings.take()
		if _, err := admin.AppsV1().Deployments("restricted").Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("create deployment: %v", err)
		}
		containsAll(t, "warnings", strings.Join(warnings.take(), "\n"), `would violate PodSecurity "restricted:latest"`, "hostPID=true")
	})
	t.Run("warn baseline admits with warnings", func(t *testing.T) {
		warnings.take()
		if _, err := admin.CoreV1().Pods("warned").Create(ctx, privilegedPod("p"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
		containsAll(t, "warnings", strings.Join(warnings.take(), "\n"), `would violate PodSecurity "baseline:latest"`, "hostNetwork=true", `hostPath volumes (volume "root")`)
	})
	t.Run("config defaults apply to an unlabelled namespace", func(t *testing.T) {
		_, err := admin.CoreV1().Pods("plain").Create(ctx, privilegedPod("p"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("create: %v, want Forbidden", err)
		}
		containsAll(t, "refusal", err.Error(), `violates PodSecurity "baseline:latest"`)
		// A pod within baseline passes.
		ok := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fine"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := admin.CoreV1().Pods("plain").Create(ctx, ok, metav1.CreateOptions{}); err != nil {
			t.Fatalf("baseline pod: %v", err)
		}
	})
	t.Run("exempt namespace", func(t *testing.T) {
		if _, err := admin.CoreV1().Pods("exempt-ns").Create(ctx, privilegedPod("p"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create in exempt namespace: %v", err)
		}
	})
	t.Run("exempt user", func(t *testing.T) {
		exempt := kubernetes.NewForConfigOrDie(s.UserConfig(t, "exempt-user", "system:masters"))
		if _, err := exempt.CoreV1().Pods("plain").Create(ctx, privilegedPod("by-exempt-user"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create by exempt user: %v", err)
		}
		other := kubernetes.NewForConfigOrDie(s.UserConfig(t, "other-user", "system:masters"))
		if _, err := other.CoreV1().Pods("plain").Create(ctx, privilegedPod("by-other-user"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("create by another user: %v, want Forbidden", err)
		}
	})
	t.Run("exempt runtime class", func(t *testing.T) {
		if _, err := admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "exempt-rc"}, Handler: "runc"}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := privilegedPod("exempt-rc")
		pod.Spec.RuntimeClassName = ptr.To("exempt-rc")
		if _, err := admin.CoreV1().Pods("plain").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create with exempt runtime class: %v", err)
		}
	})
	t.Run("invalid level label is refused naming it", func(t *testing.T) {
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bad-level",
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": "strict"}}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("create: %v, want Invalid", err)
		}
		containsAll(t, "refusal", err.Error(), "pod-security.kubernetes.io/enforce", "strict")
	})
	t.Run("metrics", func(t *testing.T) {
		raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(`pod_security_evaluations_total{decision="deny",mode="enforce",policy_level="restricted"`)) {
			t.Error("no pod_security_evaluations_total for the refused pod in /metrics")
		}
	})
	t.Run("tightening a namespace warns about its pods", func(t *testing.T) {
		// The plugin lists the namespace's pods from its informer.
		deadline := time.Now().Add(30 * time.Second)
		for {
			ns, err := admin.CoreV1().Namespaces().Get(ctx, "warned", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
			warnings.take()
			if _, err := admin.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Fatalf("dry-run label update: %v", err)
			}
			got := strings.Join(warnings.take(), "\n")
			if strings.Contains(got, `existing pods in namespace "warned" violate the new PodSecurity enforce level "restricted:latest"`) {
				containsAll(t, "warnings", got, "p: host namespaces")
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no warning about the existing pod; warnings: %q", got)
			}
			time.Sleep(200 * time.Millisecond)
		}
		// Dry run: the label did not change.
		ns, err := admin.CoreV1().Namespaces().Get(ctx, "warned", metav1.GetOptions{})
		if err != nil || ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
			t.Fatalf("namespace after dry run: %v %v", ns.Labels, err)
		}
	})
}

// auditEvent is the part of an audit.k8s.io/v1 Event the test reads.
type auditEvent struct {
	Level     string                    `json:"level"`
	Stage     string                    `json:"stage"`
	Verb      string                    `json:"verb"`
	User      struct{ Username string } `json:"user"`
	ObjectRef *struct {
		Resource, Namespace, Name string
	} `json:"objectRef"`
	RequestObject  json.RawMessage   `json:"requestObject"`
	ResponseObject json.RawMessage   `json:"responseObject"`
	Annotations    map[string]string `json:"annotations"`
}

func readAudit(t *testing.T, path string) []auditEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line is not a JSON event: %v: %s", err, sc.Text())
		}
		out = append(out, e)
	}
	return out
}

// TestAuditLog checks the audit log: a Metadata rule records who did
// what to which object, a RequestResponse rule the bodies too,
// PodSecurity's audit annotations land in the event, and a missing
// policy file is refused naming the flag.
func TestAuditLog(t *testing.T) {
	policy := writeTestFile(t, "policy.yaml", `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps"]
- level: Metadata
`)
	logPath := filepath.Join(t.TempDir(), "audit", "audit.log")
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers("serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller")
	cfg.Audit = apiserver.AuditConfig{LogPath: logPath, PolicyFile: policy, MaxAge: 1, MaxBackups: 1, MaxSize: 10}

	t.Run("missing policy file", func(t *testing.T) {
		bad := cfg
		bad.Audit.PolicyFile = filepath.Join(t.TempDir(), "none.yaml")
		_, err := server.New(bad)
		if err == nil || !strings.Contains(err.Error(), "--audit-policy-file") || !strings.Contains(err.Error(), "none.yaml") {
			t.Fatalf("server.New: %v, want an error naming --audit-policy-file", err)
		}
	})

	s := framework.StartWith(t, cfg)
	ctx := context.Background()
	user := kubernetes.NewForConfigOrDie(s.UserConfig(t, "auditor-test", "system:masters"))
	if _, err := user.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := user.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited"},
		Data: map[string]string{"body-marker": "recorded-in-full"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, user, "audited", map[string]string{"pod-security.kubernetes.io/audit": "restricted"})
	if _, err := user.CoreV1().Pods("audited").Create(ctx, privilegedPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var sawGet, sawCreate, sawViolation bool
	for _, e := range readAudit(t, logPath) {
		if e.Stage == "RequestReceived" {
			t.Errorf("omitted stage recorded: %+v", e)
		}
		if e.User.Username != "auditor-test" || e.ObjectRef == nil {
			continue
		}
		switch {
		case e.Verb == "get" && e.ObjectRef.Resource == "namespaces" && e.ObjectRef.Name == "default":
			sawGet = true
			if e.Level != "Metadata" || e.RequestObject != nil || e.ResponseObject != nil {
				t.Errorf("namespace get at %s with bodies: %+v", e.Level, e)
			}
		case e.Verb == "create" && e.ObjectRef.Resource == "configmaps" && e.Stage == "ResponseComplete":
			sawCreate = true
			if e.Level != "RequestResponse" || !bytes.Contains(e.RequestObject, []byte("recorded-in-full")) || !bytes.Contains(e.ResponseObject, []byte("recorded-in-full")) {
				t.Errorf("configmap create without its bodies: %+v", e)
			}
		case e.Verb == "create" && e.ObjectRef.Resource == "pods" && e.ObjectRef.Namespace == "audited" && e.Stage == "ResponseComplete":
			if v := e.Annotations["pod-security.kubernetes.io/audit-violations"]; strings.Contains(v, `would violate PodSecurity "restricted:latest"`) {
				sawViolation = true
			} else {
				t.Errorf("pod create annotations %v", e.Annotations)
			}
		}
	}
	if !sawGet || !sawCreate || !sawViolation {
		t.Fatalf("audit log lacks events: get %v, configmap create %v, pod security violation %v", sawGet, sawCreate, sawViolation)
	}
}

// etcdClient reads the embedded etcd of a test server directly.
func etcdClient(t *testing.T, s *framework.Server) *clientv3.Client {
	t.Helper()
	dir := filepath.Join(s.DataDir, "server", "tls", "etcd")
	tlsCfg, err := transport.TLSInfo{CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key"), TrustedCAFile: filepath.Join(dir, "server-ca.crt")}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{fmt.Sprintf("https://127.0.0.1:%d", s.Config.EtcdClientPort)}, TLS: tlsCfg, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSecretsEncryption checks --secrets-encryption: a secret's value is
// not in etcd in plain text (its record starts with the aescbc prefix and
// key name) and the API reads it back; `secrets-encrypt rotate-keys`
// rewrites every secret with a new key and drops the old one, without a
// restart; disable and reencrypt store them in plain text again.
func TestSecretsEncryption(t *testing.T) {
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers("serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller")
	cfg.SecretsEncryption = true
	s := framework.StartWith(t, cfg)
	admin := s.Client(t)
	ctx := context.Background()
	const value = "plaintext-marker-7f3a9c"
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		StringData: map[string]string{"password": value}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	etcd := etcdClient(t, s)
	// every returns the etcd record of every secret.
	every := func() map[string][]byte {
		resp, err := etcd.Get(ctx, "/registry/secrets/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, kv := range resp.Kvs {
			out[string(kv.Key)] = kv.Value
		}
		return out
	}
	readBack := func() {
		t.Helper()
		got, err := admin.CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
		if err != nil || string(got.Data["password"]) != value {
			t.Fatalf("read back: %v %q", err, got.Data["password"])
		}
	}
	raw := every()["/registry/secrets/default/s"]
	if !bytes.HasPrefix(raw, []byte("k8s:enc:aescbc:v1:aescbckey:")) || bytes.Contains(raw, []byte(value)) {
		t.Fatalf("etcd record of the secret: %q, want aescbc-encrypted", raw)
	}
	readBack()

	var out bytes.Buffer
	tool := &secretsencrypt.Tool{DataDir: s.DataDir, Client: admin, Out: &out, LoadTimeout: time.Minute}
	if err := tool.Status(ctx); err != nil {
		t.Fatal(err)
	}
	containsAll(t, "status", out.String(), "Encryption Status: Enabled", "Current Rotation Stage: start", "All hashes match", "AES-CBC", "aescbckey")

	out.Reset()
	if err := tool.RotateKeys(ctx); err != nil {
		t.Fatalf("rotate-keys: %v\n%s", err, out.String())
	}
	data, err := os.ReadFile(secretsencrypt.ConfigPath(s.DataDir))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Resources []struct {
			Providers []struct {
				AESCBC *struct{ Keys []struct{ Name string } } `json:"aescbc"`
			}
		}
	}
	if err := json.Unmarshal(data, &file); err != nil || len(file.Resources) != 1 || file.Resources[0].Providers[0].AESCBC == nil {
		t.Fatalf("config after rotate-keys: %v %s", err, data)
	}
	keys := file.Resources[0].Providers[0].AESCBC.Keys
	if len(keys) != 1 || !strings.HasPrefix(keys[0].Name, "aescbckey-") {
		t.Fatalf("keys after rotate-keys %+v, want only the new one", keys)
	}
	prefix := []byte("k8s:enc:aescbc:v1:" + keys[0].Name + ":")
	all := every()
	if len(all) < 2 {
		t.Fatalf("only %d secrets in etcd", len(all))
	}
	for k, v := range all {
		if !bytes.HasPrefix(v, prefix) {
			t.Errorf("%s after rotate-keys: %.40q, want the prefix %q", k, v, prefix)
		}
	}
	readBack()
	out.Reset()
	if err := tool.Status(ctx); err != nil {
		t.Fatal(err)
	}
	containsAll(t, "status", out.String(), "Current Rotation Stage: reencrypt_finished", "All hashes match", keys[0].Name)

	// Disable, then reencrypt: stored in plain text again, still readable.
	if err := tool.Disable(); err != nil {
		t.Fatal(err)
	}
	if err := tool.Reencrypt(ctx, false); err != nil {
		t.Fatalf("reencrypt: %v", err)
	}
	raw = every()["/registry/secrets/default/s"]
	if bytes.HasPrefix(raw, []byte("k8s:enc:")) || !bytes.Contains(raw, []byte(value)) {
		t.Fatalf("etcd record after disable and reencrypt: %.60q, want plain", raw)
	}
	readBack()

	// Enabled again and restarted without the flag: the data directory's
	// file is still used, so what was written encrypted stays readable.
	if err := tool.Enable(); err != nil {
		t.Fatal(err)
	}
	if err := tool.Reencrypt(ctx, false); err != nil {
		t.Fatalf("reencrypt: %v", err)
	}
	if raw = every()["/registry/secrets/default/s"]; !bytes.HasPrefix(raw, prefix) {
		t.Fatalf("etcd record after enable and reencrypt: %.60q", raw)
	}
	s.Stop(t)
	restarted := s.Config
	restarted.SecretsEncryption = false
	s = framework.StartWith(t, restarted)
	admin = s.Client(t)
	readBack()
}

// TestSecretsEncryptionSecretbox: --secrets-encryption-provider=secretbox
// writes secrets with XSalsa20-Poly1305 under k3s's key name.
func TestSecretsEncryptionSecretbox(t *testing.T) {
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers("namespace-controller")
	cfg.SecretsEncryption = true
	cfg.SecretsEncryptionProvider = secretsencrypt.ProviderSecretbox
	s := framework.StartWith(t, cfg)
	ctx := context.Background()
	if _, err := s.Client(t).CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		StringData: map[string]string{"k": "secretbox-marker-91c2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := etcdClient(t, s).Get(ctx, "/registry/secrets/default/s")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get: %v", err)
	}
	if v := resp.Kvs[0].Value; !bytes.HasPrefix(v, []byte("k8s:enc:secretbox:v1:secretboxkey:")) || bytes.Contains(v, []byte("secretbox-marker-91c2")) {
		t.Fatalf("etcd record %.50q, want secretbox-encrypted", v)
	}
	got, err := s.Client(t).CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
	if err != nil || string(got.Data["k"]) != "secretbox-marker-91c2" {
		t.Fatalf("read back: %v", err)
	}
}
