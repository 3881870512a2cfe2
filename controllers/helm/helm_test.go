package helm

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

func TestValues(t *testing.T) {
	spec := &HelmChartSpec{
		ValuesContent: "a: 1\nnested:\n  x: chart\n  z: chart\n",
		Values:        &apiextensionsv1.JSON{Raw: []byte(`{"b": "values"}`)},
		Set:           map[string]intstr.IntOrString{"c": intstr.FromInt32(3), "d": intstr.FromString("007"), "e": intstr.FromString("true")},
	}
	cfg := &HelmChartConfigSpec{ValuesContent: "nested:\n  z: config\nb: config\n"}
	got, err := values(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	nested := got["nested"].(map[string]any)
	if got["a"] != float64(1) && got["a"] != int64(1) && got["a"] != 1 {
		t.Errorf("a = %#v", got["a"])
	}
	if nested["x"] != "chart" || nested["z"] != "config" || got["b"] != "config" {
		t.Errorf("merge: %#v", got)
	}
	if got["c"] != int64(3) || got["d"] != "007" || got["e"] != true {
		t.Errorf("set: c=%#v d=%#v e=%#v", got["c"], got["d"], got["e"])
	}
	if _, err := values(&HelmChartSpec{ValuesContent: "a: [\n"}, nil); err == nil || !strings.Contains(err.Error(), "spec.valuesContent") {
		t.Errorf("bad valuesContent: %v", err)
	}
}

func TestLocate(t *testing.T) {
	manifests, static := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(manifests, "c.tgz"), []byte("local"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(static, "traefik.tgz"), []byte("static"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		spec    HelmChartSpec
		archive string
		repo    string
		err     string
	}{
		{"inline", HelmChartSpec{ChartContent: base64.StdEncoding.EncodeToString([]byte("inline")), Chart: "ignored"}, "inline", "", ""},
		{"bad base64", HelmChartSpec{ChartContent: "!!"}, "", "", "spec.chartContent"},
		{"relative file", HelmChartSpec{Chart: "c.tgz"}, "local", "", ""},
		{"escape refused", HelmChartSpec{Chart: "../../etc/passwd"}, "", "", "not found"},
		{"k3s static URL", HelmChartSpec{Chart: "https://%{KUBERNETES_API}%/static/charts/traefik.tgz"}, "static", "", ""},
		{"static URL with a host", HelmChartSpec{Chart: "https://10.0.0.1:6443/static/charts/traefik.tgz"}, "static", "", ""},
		{"repo", HelmChartSpec{Chart: "nginx", Repo: "https://charts.example"}, "", "nginx", ""},
		{"oci", HelmChartSpec{Chart: "oci://registry.example/charts/x"}, "", "oci://registry.example/charts/x", ""},
		{"missing", HelmChartSpec{Chart: "nope.tgz"}, "", "", "not found"},
		{"none", HelmChartSpec{}, "", "", "required"},
	}
	for _, c := range cases {
		src, err := locate(&c.spec, manifests, static)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || string(src.archive) != c.archive || src.repo != c.repo {
			t.Errorf("%s: %q %q %v", c.name, src.archive, src.repo, err)
		}
	}
}

// fakeReleaser keeps releases in memory.
type fakeReleaser struct {
	releases map[string]*release.Release
	calls    []string
	fail     error
}

func (f *fakeReleaser) Current(_ context.Context, r ReleaseRef) (*release.Release, error) {
	return f.releases[r.Namespace+"/"+r.Name], nil
}

func (f *fakeReleaser) put(r ReleaseRef, vals map[string]any, verb string) (*release.Release, error) {
	f.calls = append(f.calls, verb+" "+r.Namespace+"/"+r.Name)
	key := r.Namespace + "/" + r.Name
	version := 1
	if old := f.releases[key]; old != nil {
		version = old.Version + 1
	}
	status := release.StatusDeployed
	if f.fail != nil {
		status = release.StatusFailed
	}
	f.releases[key] = &release.Release{Name: r.Name, Namespace: r.Namespace, Version: version, Config: vals, Info: &release.Info{Status: status}}
	return f.releases[key], f.fail
}

func (f *fakeReleaser) Install(_ context.Context, r ReleaseRef, _ *chart.Chart, vals map[string]any) (*release.Release, error) {
	return f.put(r, vals, "install")
}

func (f *fakeReleaser) Upgrade(_ context.Context, r ReleaseRef, _ *chart.Chart, vals map[string]any) (*release.Release, error) {
	return f.put(r, vals, "upgrade")
}

func (f *fakeReleaser) Uninstall(_ context.Context, r ReleaseRef) error {
	f.calls = append(f.calls, "uninstall "+r.Namespace+"/"+r.Name)
	delete(f.releases, r.Namespace+"/"+r.Name)
	return nil
}

func (f *fakeReleaser) Fetch(context.Context, string, string, string, *HelmChartSpec) (*chart.Chart, error) {
	return nil, errors.New("no network in tests")
}

func testArchive(t *testing.T) string {
	t.Helper()
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "t", Version: "0.1.0"},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("kind: ConfigMap")}}}
	p, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func helmChart(name, archive, valuesContent, policy string) *unstructured.Unstructured {
	spec := map[string]any{"chartContent": archive, "valuesContent": valuesContent, "targetNamespace": "apps"}
	if policy != "" {
		spec["failurePolicy"] = policy
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.cattle.io/v1", "kind": "HelmChart",
		"metadata": map[string]any{"name": name, "namespace": "kube-system"},
		"spec":     spec,
	}}
}

type fixture struct {
	c   *Controller
	rel *fakeReleaser
	dyn *dynamicfake.FakeDynamicClient
	rec *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) (*fixture, context.Context) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		HelmChartGVR: "HelmChartList", HelmChartConfigGVR: "HelmChartConfigList"}, objs...)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	rel := &fakeReleaser{releases: map[string]*release.Release{}}
	rec := record.NewFakeRecorder(100)
	c, err := New(Config{ManifestsDir: t.TempDir(), StaticDir: t.TempDir()}, dyn, factory, rel, rec, testingclock.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches")
	}
	return &fixture{c: c, rel: rel, dyn: dyn, rec: rec}, ctx
}

// sync waits until the informer has the client's latest HelmChart, then
// syncs it once.
func (f *fixture) sync(t *testing.T, ctx context.Context, name string) error {
	t.Helper()
	obj, err := f.dyn.Resource(HelmChartGVR).Namespace("kube-system").Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		deadline := time.Now().Add(5 * time.Second)
		for {
			cached, err := f.c.charts.ByNamespace("kube-system").Get(name)
			if err == nil && equality.Semantic.DeepEqual(cached.(*unstructured.Unstructured).Object, obj.Object) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("informer did not catch up with %s", name)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return f.c.sync(ctx, "kube-system/"+name)
}

func (f *fixture) get(t *testing.T, ctx context.Context, name string) *HelmChart {
	t.Helper()
	u, err := f.dyn.Resource(HelmChartGVR).Namespace("kube-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc := &HelmChart{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hc); err != nil {
		t.Fatal(err)
	}
	return hc
}

func TestSyncLifecycle(t *testing.T) {
	archive := testArchive(t)
	f, ctx := newFixture(t, helmChart("web", archive, "greeting: hi", ""))

	// First sync adds the finalizer, the second installs.
	for range 3 {
		if err := f.sync(t, ctx, "web"); err != nil {
			t.Fatal(err)
		}
	}
	hc := f.get(t, ctx, "web")
	if len(hc.Finalizers) != 1 || hc.Finalizers[0] != Finalizer {
		t.Errorf("finalizers %v", hc.Finalizers)
	}
	if strings.Join(f.rel.calls, ",") != "install apps/web" {
		t.Errorf("calls %v, want one install", f.rel.calls)
	}
	if !hasCondition(hc, "False", "Installed") || hc.Annotations[AnnotationConfigHash] == "" {
		t.Errorf("status %+v annotations %v", hc.Status, hc.Annotations)
	}

	// New values: one upgrade.
	u, _ := f.dyn.Resource(HelmChartGVR).Namespace("kube-system").Get(ctx, "web", metav1.GetOptions{})
	_ = unstructured.SetNestedField(u.Object, "greeting: bonjour", "spec", "valuesContent")
	if _, err := f.dyn.Resource(HelmChartGVR).Namespace("kube-system").Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := f.sync(t, ctx, "web"); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(f.rel.calls, ",") != "install apps/web,upgrade apps/web" {
		t.Errorf("calls %v", f.rel.calls)
	}
	if got := f.rel.releases["apps/web"].Config["greeting"]; got != "bonjour" {
		t.Errorf("upgraded values %v", got)
	}

	// Deletion: uninstall, finalizer removed.
	u, _ = f.dyn.Resource(HelmChartGVR).Namespace("kube-system").Get(ctx, "web", metav1.GetOptions{})
	now := metav1.Now()
	u.SetDeletionTimestamp(&now)
	if _, err := f.dyn.Resource(HelmChartGVR).Namespace("kube-system").Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(t, ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(strings.Join(f.rel.calls, ","), "uninstall apps/web") {
		t.Errorf("calls %v", f.rel.calls)
	}
	if hc := f.get(t, ctx, "web"); len(hc.Finalizers) != 0 {
		t.Errorf("finalizer kept: %v", hc.Finalizers)
	}
}

func TestSyncFailurePolicies(t *testing.T) {
	for _, c := range []struct {
		policy  string
		wantErr bool
	}{{"abort", false}, {"retry", true}, {"", true}} {
		f, ctx := newFixture(t, helmChart("web", testArchive(t), "", c.policy))
		f.rel.fail = errors.New("boom")
		_ = f.sync(t, ctx, "web") // finalizer
		err := f.sync(t, ctx, "web")
		if (err != nil) != c.wantErr {
			t.Errorf("policy %q: err %v", c.policy, err)
		}
		hc := f.get(t, ctx, "web")
		if !hasCondition(hc, "True", "InstallFailed") {
			t.Errorf("policy %q: status %+v", c.policy, hc.Status)
		}
		calls := len(f.rel.calls)
		_ = f.sync(t, ctx, "web")
		if c.policy == "abort" && len(f.rel.calls) != calls {
			t.Errorf("abort retried: %v", f.rel.calls)
		}
		if c.policy == "" && !strings.Contains(strings.Join(f.rel.calls, ","), "uninstall") {
			t.Errorf("reinstall policy did not uninstall the failed release: %v", f.rel.calls)
		}
	}
}

func hasCondition(hc *HelmChart, status, reason string) bool {
	for _, c := range hc.Status.Conditions {
		if c.Type == ConditionFailed && string(c.Status) == status && c.Reason == reason {
			return true
		}
	}
	return false
}
