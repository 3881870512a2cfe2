package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// The manifests folder of a running `k1s server`: a file dropped in
// appears within seconds, a change is applied, NAME.skip keeps NAME out,
// a broken file is reported while the others apply, a HelmChart installs
// the tests' chart and an edit upgrades it; --disable coredns on a restart
// removes the packaged coredns.yaml and the kube-dns Service.
func TestManifestsFolder(t *testing.T) {
	s := framework.NewServer(t)
	s.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	dir := filepath.Join(s.DataDir, "server", "manifests")

	put := func(name, content string) {
		t.Helper()
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	cm := func(name, value string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default\ndata:\n  v: %q\n", name, value)
	}
	wantCM := func(name, key, want string, within time.Duration) {
		t.Helper()
		waitCM(t, c, "default", name, key, want, within, s.Log)
	}

	// The packaged kube-dns Service is there.
	if _, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err != nil {
		waitErr := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
			return err == nil, nil
		})
		if waitErr != nil {
			t.Fatalf("kube-dns Service from coredns.yaml: %v", err)
		}
	}

	start := time.Now()
	put("first.yaml", cm("first", "1"))
	wantCM("first", "v", "1", 5*time.Second)
	t.Logf("a dropped manifest applied in %s", time.Since(start).Round(time.Millisecond))
	put("first.yaml", cm("first", "2"))
	wantCM("first", "v", "2", 5*time.Second)

	put("kept-out.yaml.skip", "")
	put("kept-out.yaml", cm("kept-out", "x"))
	put("broken.yaml", "kind: [\n")
	put("after-broken.yaml", cm("after-broken", "ok"))
	wantCM("after-broken", "v", "ok", 5*time.Second)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := c.CoreV1().Events("kube-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=broken,reason=ParseManifestFailed"})
		return err == nil && len(evs.Items) > 0, nil
	})
	if err != nil {
		t.Errorf("the broken file was not reported as an event")
	}
	if _, err := c.CoreV1().ConfigMaps("default").Get(ctx, "kept-out", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a .skip'd manifest was applied: %v", err)
	}
	if out, err := s.Kubectl(ctx, "get", "addons.k3s.cattle.io", "-n", "kube-system", "first", "-o", "jsonpath={.spec.checksum}"); err != nil || len(out) != 64 {
		t.Errorf("kubectl get addon first: %q %v", out, err)
	}

	// A HelmChart: the tests' chart, inline.
	_, here, _, _ := runtime.Caller(0)
	ch, err := loader.LoadDir(filepath.Join(filepath.Dir(here), "..", "testdata", "charts", "k1s-test"))
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	archive, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	helmChart := func(greeting string) string {
		return fmt.Sprintf("apiVersion: helm.cattle.io/v1\nkind: HelmChart\nmetadata:\n  name: hello\n  namespace: kube-system\nspec:\n  targetNamespace: default\n  chartContent: %s\n  valuesContent: |-\n    greeting: %s\n",
			base64.StdEncoding.EncodeToString(archive), greeting)
	}
	put("hello.yaml", helmChart("hi"))
	wantCM("hello-config", "greeting", "hi", 60*time.Second)
	put("hello.yaml", helmChart("bonjour"))
	wantCM("hello-config", "greeting", "bonjour", 60*time.Second)
	if out, err := s.Kubectl(ctx, "get", "helmchart", "-n", "kube-system", "hello", "-o", "jsonpath={.status.conditions[?(@.type=='Failed')].reason}"); err != nil || out != "Upgraded" {
		t.Errorf("HelmChart hello status: %q %v", out, err)
	}

	// --disable coredns removes the packaged file and its Service.
	if _, err := os.Stat(filepath.Join(dir, "coredns.yaml")); err != nil {
		t.Fatalf("coredns.yaml not staged: %v", err)
	}
	s.Stop(t)
	s.Args = append(s.Args, "--disable", "coredns")
	s.Start(t)
	c = s.Client(t)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("kube-dns Service kept with --disable coredns")
	}
	if _, err := os.Stat(filepath.Join(dir, "coredns.yaml")); !os.IsNotExist(err) {
		t.Errorf("coredns.yaml kept with --disable coredns: %v", err)
	}
	waitCM(t, c, "default", "first", "v", "2", time.Second, s.Log) // the rest stays
}

func waitCM(t *testing.T, c kubernetes.Interface, ns, name, key, want string, within time.Duration, log func() string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = cm.Data[key]
		return last == want, nil
	})
	if err != nil {
		t.Fatalf("ConfigMap %s/%s %s = %q, want %q within %s\n%s", ns, name, key, last, want, within, framework.LastLine(log()))
	}
}
