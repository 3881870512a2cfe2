package deploy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

// fakeObjects records what is applied and deleted; names in refuse fail.
type fakeObjects struct {
	applied, deleted []string
	refuse           map[string]bool
}

func (f *fakeObjects) Apply(_ context.Context, obj *unstructured.Unstructured) error {
	if f.refuse[obj.GetName()] {
		return errors.New("refused by the apiserver")
	}
	if obj.GetNamespace() == "" && obj.GetKind() != "Namespace" {
		obj.SetNamespace("default")
	}
	f.applied = append(f.applied, obj.GetKind()+":"+objectName(obj))
	return nil
}

func (f *fakeObjects) Delete(_ context.Context, obj *unstructured.Unstructured) error {
	f.deleted = append(f.deleted, obj.GetKind()+":"+objectName(obj))
	return nil
}

func (f *fakeObjects) Established(context.Context, string) error { return nil }

func configMap(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: v\n"
}

type harness struct {
	dir      string
	objects  *fakeObjects
	recorder *record.FakeRecorder
	c        *Controller
	dyn      *dynamicfake.FakeDynamicClient
}

func newHarness(t *testing.T, files map[string]string, disabled ...string) *harness {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{dir: dir, objects: &fakeObjects{refuse: map[string]bool{}}, recorder: record.NewFakeRecorder(100)}
	h.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{AddonGVR: "AddonList"})
	c, err := New(Config{Dir: dir, Disabled: disabled}, h.objects, h.dyn, h.recorder, testingclock.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *harness) addon(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	a, err := h.dyn.Resource(AddonGVR).Namespace(metav1.NamespaceSystem).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return a
}

func TestSyncAppliesEachFile(t *testing.T) {
	h := newHarness(t, map[string]string{
		"a.yaml":         configMap("a1") + "---\n# comment only\n---\n" + configMap("a2"),
		"broken.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n",
		"c.yaml":         configMap("c"),
		"c.yaml.skip":    "",
		"notes.txt":      configMap("txt"),
		".hidden.yaml":   configMap("hidden"),
		"sub/d.json":     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","namespace":"kube-system"}}`,
		"list.yml":       "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: ns1\n",
		"refused.yaml":   configMap("bad") + "---\n" + configMap("good"),
		"noname.yaml":    "apiVersion: v1\nkind: ConfigMap\n",
		"z-last.yaml.bk": configMap("backup"),
	})
	h.objects.refuse["bad"] = true
	h.c.Sync(context.Background(), true)

	want := []string{"ConfigMap:default/a1", "ConfigMap:default/a2", "Namespace:ns1", "ConfigMap:default/good", "ConfigMap:kube-system/d"}
	if !slices.Equal(h.objects.applied, want) {
		t.Errorf("applied %v, want %v", h.objects.applied, want)
	}
	for name, applied := range map[string]bool{"a": true, "list": true, "d": true, "broken": false, "refused": false, "noname": false} {
		a := h.addon(t, name)
		if a == nil {
			t.Errorf("addon %s missing", name)
			continue
		}
		sum, _, _ := unstructured.NestedString(a.Object, "spec", "checksum")
		src, _, _ := unstructured.NestedString(a.Object, "spec", "source")
		if (sum != "") != applied {
			t.Errorf("addon %s checksum %q, applied=%v", name, sum, applied)
		}
		if !strings.HasPrefix(src, h.dir) {
			t.Errorf("addon %s source %q", name, src)
		}
	}
	if h.addon(t, "c") != nil || h.addon(t, "hidden") != nil {
		t.Error("a skipped or hidden file got an addon")
	}
	ev := strings.Join(h.events(), "\n")
	for _, w := range []string{"Warning ParseManifestFailed Parse manifest at \"" + filepath.Join(h.dir, "broken.yaml"),
		"Warning ApplyManifestFailed", "refused by the apiserver", "Normal AppliedManifest", "has no metadata.name"} {
		if !strings.Contains(ev, w) {
			t.Errorf("events lack %q:\n%s", w, ev)
		}
	}
}

func TestSyncReappliesOnlyChanges(t *testing.T) {
	h := newHarness(t, map[string]string{"a.yaml": configMap("a"), "b.yaml": configMap("b")})
	ctx := context.Background()
	h.c.Sync(ctx, true)
	if len(h.objects.applied) != 2 {
		t.Fatalf("first pass applied %v", h.objects.applied)
	}
	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"nothing changed", func() {}, nil},
		{"content changed", func() { write(t, h.dir, "a.yaml", configMap("a-new")) }, []string{"ConfigMap:default/a-new"}},
		{"rewritten with the same content (checksum equal)", func() {
			write(t, h.dir, "b.yaml", configMap("b"))
			future := time.Now().Add(time.Hour)
			_ = os.Chtimes(filepath.Join(h.dir, "b.yaml"), future, future)
		}, nil},
		{"skipped after a change", func() {
			write(t, h.dir, "b.yaml.skip", "")
			write(t, h.dir, "b.yaml", configMap("b-skipped"))
		}, nil},
		{"new file", func() { write(t, h.dir, "c.yaml", configMap("c")) }, []string{"ConfigMap:default/c"}},
		{"deleted file deletes nothing", func() { _ = os.Remove(filepath.Join(h.dir, "c.yaml")) }, nil},
	}
	for _, s := range steps {
		h.objects.applied = nil
		s.change()
		h.c.Sync(ctx, false)
		if !slices.Equal(h.objects.applied, s.want) {
			t.Errorf("%s: applied %v, want %v", s.name, h.objects.applied, s.want)
		}
		if len(h.objects.deleted) > 0 {
			t.Errorf("%s: deleted %v", s.name, h.objects.deleted)
		}
	}
}

func TestSyncRetriesFailedFile(t *testing.T) {
	h := newHarness(t, map[string]string{"a.yaml": configMap("a")})
	h.objects.refuse["a"] = true
	h.c.Sync(context.Background(), true)
	delete(h.objects.refuse, "a")
	h.c.Sync(context.Background(), false)
	if !slices.Equal(h.objects.applied, []string{"ConfigMap:default/a"}) {
		t.Errorf("retry applied %v", h.objects.applied)
	}
}

func TestDisabledFileRemoved(t *testing.T) {
	h := newHarness(t, map[string]string{"coredns.yaml": configMap("dns"), "coredns.yaml.skip": "", "other.yaml": configMap("o")}, "coredns")
	h.c.Sync(context.Background(), true)
	if !slices.Equal(h.objects.deleted, []string{"ConfigMap:dns"}) {
		t.Errorf("deleted %v", h.objects.deleted)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "coredns.yaml")); !os.IsNotExist(err) {
		t.Errorf("disabled file still there: %v", err)
	}
	if !slices.Equal(h.objects.applied, []string{"ConfigMap:default/o"}) {
		t.Errorf("applied %v", h.objects.applied)
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestStage(t *testing.T) {
	packaged := fstest.MapFS{
		"coredns.yaml":       {Data: []byte("ip: %{CLUSTER_DNS}%\n")},
		"local-storage.yaml": {Data: []byte("path: %{DEFAULT_LOCAL_STORAGE_PATH}%\n")},
		"kept.yaml":          {Data: []byte("packaged\n")},
		"missing.yaml":       {Data: []byte("x: %{NOPE}%\n")},
	}
	dir := t.TempDir()
	write(t, dir, "kept.yaml", "operator's own\n")
	write(t, dir, "kept.yaml.skip", "")
	_, err := Stage(dir, packaged, map[string]string{"CLUSTER_DNS": "10.43.0.10", "DEFAULT_LOCAL_STORAGE_PATH": "/s"}, map[string]bool{"local-storage": true})
	if err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Errorf("Stage error %v, want the missing variable named", err)
	}
	for name, want := range map[string]string{"coredns.yaml": "ip: 10.43.0.10\n", "kept.yaml": "operator's own\n", "local-storage.yaml": "", "missing.yaml": ""} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if want == "" {
			if err == nil {
				t.Errorf("%s written: %q", name, got)
			}
			continue
		}
		if string(got) != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	// Unchanged content is not rewritten.
	old := time.Now().Add(-time.Hour)
	_ = os.Chtimes(filepath.Join(dir, "coredns.yaml"), old, old)
	_, _ = Stage(dir, packaged, map[string]string{"CLUSTER_DNS": "10.43.0.10"}, map[string]bool{"local-storage": true})
	if fi, _ := os.Stat(filepath.Join(dir, "coredns.yaml")); !fi.ModTime().Equal(old) {
		t.Error("an unchanged manifest was rewritten")
	}
}

func TestAddonName(t *testing.T) {
	for in, want := range map[string]string{"/m/traefik.yaml": "traefik", "/m/a.b.yml": "a", "/m/Web.JSON": "web"} {
		if got := addonName(in); got != want {
			t.Errorf("addonName(%s) = %s, want %s", in, got, want)
		}
	}
}

// A failed file is not retried on every change elsewhere in the folder,
// only on the rescan or once it changed.
func TestFailedFileRetriedOnRescanOrChange(t *testing.T) {
	h := newHarness(t, map[string]string{"bad.yaml": "kind: [\n"})
	ctx := context.Background()
	h.c.Sync(ctx, true)
	_ = h.events()
	write(t, h.dir, "other.yaml", configMap("o"))
	h.c.sync(ctx, false, false)
	if ev := strings.Join(h.events(), "\n"); strings.Contains(ev, "ParseManifestFailed") {
		t.Errorf("failed file retried on another file's change:\n%s", ev)
	}
	h.c.Sync(ctx, false)
	if ev := strings.Join(h.events(), "\n"); !strings.Contains(ev, "ParseManifestFailed") {
		t.Errorf("failed file not retried on the rescan:\n%s", ev)
	}
	write(t, h.dir, "bad.yaml", configMap("fixed"))
	h.c.sync(ctx, false, false)
	if !slices.Contains(h.objects.applied, "ConfigMap:default/fixed") {
		t.Errorf("changed file not applied: %v", h.objects.applied)
	}
}
