package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/k1s/k1s/controllers/deploy"
	"github.com/k1s/k1s/controllers/helm"
	"github.com/k1s/k1s/tests/integration/framework"
)

// testChart packages tests/testdata/charts/k1s-test into a .tgz in dir and
// returns its path.
func testChart(t *testing.T, dir string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	ch, err := loader.LoadDir(filepath.Join(filepath.Dir(here), "..", "testdata", "charts", "k1s-test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func writeManifest(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func cmYAML(name, ns, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  v: %q\n", name, ns, value)
}

// waitConfigMap waits until ns/name has data v == want ("" : exists at all;
// "-": is gone).
func waitConfigMap(t *testing.T, c kubernetes.Interface, ns, name, key, want string, timeout time.Duration) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if want == "-" {
			last = fmt.Sprint(err)
			return apierrors.IsNotFound(err), nil
		}
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = cm.Data[key]
		return want == "" || cm.Data[key] == want, nil
	})
	if err != nil {
		t.Fatalf("ConfigMap %s/%s %s: want %q, last %q", ns, name, key, want, last)
	}
}

func TestManifestsFolder(t *testing.T) {
	cfg := framework.Config(t)
	cfg.ControllerManager = framework.Controllers("serviceaccount-controller", "root-ca-certificate-publisher-controller", "namespace-controller", "helm-controller")
	dir := filepath.Join(cfg.DataDir, "server", "manifests")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeManifest(t, dir, "apps.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: m1\n---\n"+cmYAML("one", "m1", "1")+"---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nons\ndata:\n  v: \"x\"\n")
	writeManifest(t, dir, "broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n")
	writeManifest(t, dir, "refused.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Name\n")
	writeManifest(t, dir, "skipped.yaml", cmYAML("skipped", "default", "s"))
	writeManifest(t, dir, "skipped.yaml.skip", "")

	s := framework.StartWith(t, cfg)
	c := s.Client(t)
	dyn := s.Dynamic(t)
	ctx := context.Background()

	waitConfigMap(t, c, "m1", "one", "v", "1", 30*time.Second)
	waitConfigMap(t, c, "default", "nons", "v", "x", 5*time.Second) // no namespace: default

	// The packaged kube-dns Service, at --cluster-dns (coredns.yaml is
	// applied after apps.yaml: waited for).
	var svc *corev1.Service
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		svc, err = c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kube-dns Service: %v", err)
	}
	if svc.Spec.ClusterIP != "10.43.0.10" {
		t.Errorf("kube-dns clusterIP %s", svc.Spec.ClusterIP)
	}
	if _, err := os.Stat(filepath.Join(dir, "coredns.yaml")); err != nil {
		t.Errorf("packaged coredns.yaml not written: %v", err)
	}

	// Addons record each file.
	addons := dyn.Resource(deploy.AddonGVR).Namespace("kube-system")
	for name, applied := range map[string]bool{"apps": true, "coredns": true, "broken": false, "refused": false} {
		var sum, src string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			a, err := addons.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			sum, _, _ = unstructured.NestedString(a.Object, "spec", "checksum")
			src, _, _ = unstructured.NestedString(a.Object, "spec", "source")
			return (sum != "") == applied && strings.HasPrefix(src, dir), nil
		})
		if err != nil {
			t.Errorf("addon %s: checksum %q source %q (applied %v)", name, sum, src, applied)
		}
	}
	if _, err := addons.Get(ctx, "skipped", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("skipped file has an addon: %v", err)
	}
	if _, err := c.CoreV1().ConfigMaps("default").Get(ctx, "skipped", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("skipped ConfigMap applied: %v", err)
	}
	// The broken and refused files are reported as events on their Addons.
	for name, reason := range map[string]string{"broken": "ParseManifestFailed", "refused": "ApplyManifestFailed"} {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			evs, err := c.CoreV1().Events("kube-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
			return err == nil && len(evs.Items) > 0, nil
		})
		if err != nil {
			t.Errorf("no %s event for %s", reason, name)
		}
	}

	// A change is applied within seconds; a new file too.
	writeManifest(t, dir, "apps.yaml", cmYAML("one", "m1", "2"))
	waitConfigMap(t, c, "m1", "one", "v", "2", 10*time.Second)
	writeManifest(t, dir, "later.yml", cmYAML("later", "default", "l"))
	waitConfigMap(t, c, "default", "later", "v", "l", 10*time.Second)
	// Deleting a file deletes nothing.
	if err := os.Remove(filepath.Join(dir, "later.yml")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	waitConfigMap(t, c, "default", "later", "v", "l", time.Second)

	// A HelmChart in the folder, its chart inline.
	archive, err := os.ReadFile(testChart(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	chartYAML := func(greeting string) string {
		return fmt.Sprintf(`apiVersion: helm.cattle.io/v1
kind: HelmChart
metadata:
  name: web
  namespace: kube-system
spec:
  targetNamespace: apps
  createNamespace: true
  chartContent: %s
  valuesContent: |-
    greeting: %s
`, base64.StdEncoding.EncodeToString(archive), greeting)
	}
	writeManifest(t, dir, "web.yaml", chartYAML("hi"))
	waitConfigMap(t, c, "apps", "web-config", "greeting", "hi", 60*time.Second)
	waitConfigMap(t, c, "apps", "web-config", "chart", "k1s-test-0.1.0", time.Second)
	charts := dyn.Resource(helm.HelmChartGVR).Namespace("kube-system")
	waitCondition := func(wantStatus, wantReason string) {
		t.Helper()
		var last any
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			hc, err := charts.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(hc.Object, "status", "conditions")
			last = conds
			for _, x := range conds {
				m := x.(map[string]any)
				if m["type"] == "Failed" && m["status"] == wantStatus && m["reason"] == wantReason {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("HelmChart web: want Failed=%s %s, conditions %v", wantStatus, wantReason, last)
		}
	}
	waitCondition("False", "Installed")

	// An edit of valuesContent upgrades.
	writeManifest(t, dir, "web.yaml", chartYAML("bonjour"))
	waitConfigMap(t, c, "apps", "web-config", "greeting", "bonjour", 60*time.Second)
	waitCondition("False", "Upgraded")

	// A HelmChartConfig's values go over the chart's.
	writeManifest(t, dir, "web-config.yaml", `apiVersion: helm.cattle.io/v1
kind: HelmChartConfig
metadata:
  name: web
  namespace: kube-system
spec:
  valuesContent: |-
    extra: true
`)
	waitConfigMap(t, c, "apps", "web-extra", "present", "true", 60*time.Second)
	waitConfigMap(t, c, "apps", "web-config", "greeting", "bonjour", time.Second)

	// A chart file relative to the manifests folder; a missing one fails.
	chartsDir := filepath.Join(dir, "charts")
	tgz := testChart(t, chartsDir)
	writeManifest(t, dir, "local.yaml", fmt.Sprintf("apiVersion: helm.cattle.io/v1\nkind: HelmChart\nmetadata:\n  name: local\n  namespace: default\nspec:\n  chart: charts/%s\n", filepath.Base(tgz)))
	waitConfigMap(t, c, "default", "local-config", "greeting", "hello", 60*time.Second)

	// Deleting the HelmChart uninstalls its release.
	if err := charts.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConfigMap(t, c, "apps", "web-config", "greeting", "-", 60*time.Second)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := charts.Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("HelmChart web not removed after its uninstall")
	}
}
