package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/k1s/k1s/tests/integration/framework"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// TestMain removes the binary built for this run, if one was.
func TestMain(m *testing.M) {
	code := m.Run()
	if os.Getenv("K1S_BIN") == "" && binPath != "" && binErr == nil {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// k1sBinary is $K1S_BIN, or the binary built once for this test run.
func k1sBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("K1S_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "k1s-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "k1s")
		cmd := exec.Command("go", "build", "-tags", "no_btrfs,no_devmapper,no_zfs,urfave_cli_no_docs,osusergo,netgo", "-o", binPath, "../../cmd/k1s")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("build k1s: %v\n%s", binErr, binPath)
	}
	return binPath
}

const crdManifest = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: A Widget is a test object.
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              size: {type: integer, description: How big the widget is.}
`

const appManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {greeting: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret}
stringData: {password: s3cret}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: k1s.local/testapp:1
        ports: [{containerPort: 8080}]
        envFrom: [{configMapRef: {name: web-config}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: 3}
`

// TestKubectl drives the embedded kubectl the way a user would.
func TestKubectl(t *testing.T) {
	s := framework.Start(t)
	bin := k1sBinary(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crd := write("crd.yaml", crdManifest)
	app := write("app.yaml", appManifest)
	kubectl := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"kubectl"}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := kubectl(args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	must("apply", "-f", crd)
	must("wait", "--for", "condition=established", "--timeout=60s", "crd/widgets.example.com")
	out := must("apply", "-f", app)
	for _, want := range []string{"configmap/web-config created", "secret/web-secret created", "deployment.apps/web created", "service/web created", "widget.example.com/w1 created"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	// Applying again changes nothing.
	if out := must("apply", "-f", app); !strings.Contains(out, "deployment.apps/web unchanged") {
		t.Errorf("second apply:\n%s", out)
	}

	if out := must("get", "deployment", "web", "-o", "yaml"); !strings.Contains(out, "image: k1s.local/testapp:1") || !strings.Contains(out, "replicas: 2") {
		t.Errorf("get -o yaml:\n%s", out)
	}
	if out := must("get", "widgets"); !strings.Contains(out, "w1") {
		t.Errorf("get widgets:\n%s", out)
	}
	if out := must("get", "svc", "web"); !strings.Contains(out, "ClusterIP") || !strings.Contains(out, "80/TCP") {
		t.Errorf("get svc:\n%s", out)
	}
	if out := must("explain", "pod.spec.containers"); !strings.Contains(out, "FIELDS") || !strings.Contains(out, "image") {
		t.Errorf("explain pod.spec.containers:\n%s", out)
	}
	if out := must("explain", "widget.spec"); !strings.Contains(out, "How big the widget is") {
		t.Errorf("explain widget.spec:\n%s", out)
	}
	if out := must("explain", "customresourcedefinition.spec.names"); !strings.Contains(out, "plural") {
		t.Errorf("explain customresourcedefinition.spec.names:\n%s", out)
	}
	// The v2 document (built on first request) has built-in and custom types.
	if out := must("get", "--raw", "/openapi/v2"); !strings.Contains(out, `"io.k8s.api.apps.v1.Deployment"`) || !strings.Contains(out, `"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"`) || !strings.Contains(out, "How big the widget is") {
		t.Errorf("/openapi/v2 lacks Deployment, CustomResourceDefinition or the Widget schema (%d bytes)", len(out))
	}
	if out := must("auth", "can-i", "create", "deployments"); strings.TrimSpace(out) != "yes" {
		t.Errorf("auth can-i as admin: %q", out)
	}
	if out, _ := kubectl("auth", "can-i", "create", "deployments", "--as", "bob"); strings.TrimSpace(out) != "no" {
		t.Errorf("auth can-i as bob: %q", out)
	}
	if out := must("auth", "whoami"); !strings.Contains(out, "system:admin") {
		t.Errorf("auth whoami:\n%s", out)
	}
	// Client-side validation against the served OpenAPI catches unknown fields.
	bad := write("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\nbogusField: 1\n")
	if out, err := kubectl("apply", "-f", bad); err == nil || !strings.Contains(out, "bogusField") {
		t.Errorf("apply with an unknown field must fail naming it: %v\n%s", err, out)
	}

	must("delete", "-f", app)
	if out, _ := kubectl("get", "deployment", "web"); !strings.Contains(out, "NotFound") {
		t.Errorf("deployment still there after delete:\n%s", out)
	}
}
