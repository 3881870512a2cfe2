package pods

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const staticYAML = `apiVersion: v1
kind: Pod
metadata:
  name: etcd
  labels:
    tier: control
spec:
  containers:
  - name: etcd
    image: k1s.local/etcd:3.6
    command: ["etcd"]
`

const staticJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"proxy","namespace":"kube-system"},
"spec":{"hostNetwork":true,"containers":[{"name":"proxy","image":"k1s.local/proxy:latest","ports":[{"containerPort":8080}]}]}}`

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFileSourceRead(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a-etcd.yaml"), staticYAML)
	writeFile(t, filepath.Join(dir, "b-proxy.json"), staticJSON)
	writeFile(t, filepath.Join(dir, "c-broken.yml"), "apiVersion: v1\nkind: Pod\nmetadata: [\n")
	writeFile(t, filepath.Join(dir, "d-configmap.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	writeFile(t, filepath.Join(dir, "e-noimage.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: c\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a manifest")
	writeFile(t, filepath.Join(dir, ".hidden.yaml"), staticYAML)
	writeFile(t, filepath.Join(dir, "sub", "nested.yaml"), staticYAML)
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "a-etcd.yaml"), mtime, mtime); err != nil {
		t.Fatal(err)
	}

	fs := &FileSource{Dir: dir, NodeName: "node1"}
	pods, errs := fs.Read()
	if len(pods) != 2 {
		t.Fatalf("pods = %d, want 2 (errors %v)", len(pods), errs)
	}
	wantErrs := []string{
		"static pod " + filepath.Join(dir, "c-broken.yml") + ": decode:",
		"static pod " + filepath.Join(dir, "d-configmap.yaml") + ": not a Pod but a *v1.ConfigMap",
		"static pod " + filepath.Join(dir, "e-noimage.yaml") + ": invalid pod:",
	}
	if len(errs) != len(wantErrs) {
		t.Fatalf("errors = %v, want %d", errs, len(wantErrs))
	}
	for i, want := range wantErrs {
		if !strings.HasPrefix(errs[i].Error(), want) {
			t.Errorf("error %d = %q, want prefix %q", i, errs[i], want)
		}
	}
	if !strings.Contains(errs[2].Error(), "image") {
		t.Errorf("validation error %q does not name the image field", errs[2])
	}

	etcd, proxy := pods[0], pods[1]
	if etcd.Name != "etcd-node1" || etcd.Namespace != "default" || etcd.Spec.NodeName != "node1" {
		t.Errorf("etcd pod %s/%s on %q, want default/etcd-node1 on node1", etcd.Namespace, etcd.Name, etcd.Spec.NodeName)
	}
	if proxy.Name != "proxy-node1" || proxy.Namespace != "kube-system" {
		t.Errorf("proxy pod %s/%s", proxy.Namespace, proxy.Name)
	}
	// Defaulted as the apiserver would.
	c := etcd.Spec.Containers[0]
	if etcd.Spec.RestartPolicy != corev1.RestartPolicyAlways || etcd.Spec.DNSPolicy != corev1.DNSClusterFirst ||
		c.TerminationMessagePath != "/dev/termination-log" || c.ImagePullPolicy != corev1.PullIfNotPresent ||
		etcd.Spec.EnableServiceLinks == nil || etcd.Spec.TerminationGracePeriodSeconds == nil {
		t.Errorf("etcd pod not defaulted: %+v", etcd.Spec)
	}
	if pc := proxy.Spec.Containers[0]; pc.ImagePullPolicy != corev1.PullAlways || pc.Ports[0].HostPort != 8080 {
		t.Errorf("proxy container not defaulted (latest → Always, host network → hostPort): %+v", pc)
	}
	for _, p := range pods {
		if len(p.UID) != 32 {
			t.Errorf("%s UID %q, want 32 hex characters", p.Name, p.UID)
		}
		if p.Annotations[AnnotationSource] != SourceFile || p.Annotations[AnnotationHash] != string(p.UID) {
			t.Errorf("%s annotations = %v", p.Name, p.Annotations)
		}
		if !IsStatic(p) || IsMirror(p) {
			t.Errorf("%s: IsStatic %v IsMirror %v", p.Name, IsStatic(p), IsMirror(p))
		}
	}
	if etcd.UID == proxy.UID {
		t.Errorf("two manifests share a UID")
	}
	if !etcd.CreationTimestamp.Time.Equal(mtime) {
		t.Errorf("creation time = %v, want the file's mtime %v", etcd.CreationTimestamp, mtime)
	}
	if etcd.Labels["tier"] != "control" {
		t.Errorf("labels lost: %v", etcd.Labels)
	}
}

func TestFileSourceUIDs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "etcd.yaml")
	writeFile(t, path, staticYAML)
	uid := func(fs *FileSource) string {
		t.Helper()
		pods, errs := fs.Read()
		if len(errs) != 0 || len(pods) != 1 {
			t.Fatalf("Read = %v, %v", pods, errs)
		}
		return string(pods[0].UID)
	}
	fs := &FileSource{Dir: dir, NodeName: "node1"}
	first := uid(fs)
	if again := uid(fs); again != first {
		t.Errorf("re-reading an unchanged file changed the UID: %s → %s", first, again)
	}
	if other := uid(&FileSource{Dir: dir, NodeName: "node2"}); other == first {
		t.Errorf("the UID does not depend on the node")
	}
	writeFile(t, path, strings.Replace(staticYAML, "3.6", "3.7", 1))
	edited := uid(fs)
	if edited == first {
		t.Errorf("an edited manifest kept its UID")
	}
	moved := filepath.Join(dir, "etcd2.yaml")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	if uid(fs) == edited {
		t.Errorf("the same content at another path got the same UID")
	}
}

func TestFileSourceMissingDir(t *testing.T) {
	fs := &FileSource{Dir: filepath.Join(t.TempDir(), "absent"), NodeName: "node1"}
	pods, errs := fs.Read()
	if pods != nil || errs != nil {
		t.Errorf("missing directory: %v, %v; want nothing", pods, errs)
	}
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "x")
	if _, errs := (&FileSource{Dir: file}).Read(); len(errs) != 1 {
		t.Errorf("a file as the directory: errors %v, want one", errs)
	}
}

// A manifest written into the directory, or removed from it, reaches the
// pod manager at once (inotify), not at the next periodic re-read; the
// directory is created when missing.
func TestFileSourceWatchesTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pod-manifests")
	m := NewManager("node1", nil)
	fs := &FileSource{Dir: dir, NodeName: "node1", Period: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { fs.Run(ctx, m); close(done) }()
	defer func() { cancel(); <-done }()

	next := func(what string) Update {
		t.Helper()
		select {
		case u := <-m.Updates():
			return u
		case <-time.After(10 * time.Second):
			t.Fatalf("no update for %s within 10s (the period is an hour)", what)
			return Update{}
		}
	}
	// Wait for the directory to exist: the first read has happened.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the static pod directory was not created")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The watch is set before the first read, so a write from now on is
	// seen by one or the other.
	writeFile(t, filepath.Join(dir, "etcd.yaml"), staticYAML)
	if u := next("a new manifest"); u.Type != Added || u.Pod.Name != "etcd-node1" {
		t.Fatalf("update %v %s, want the static pod added", u.Type, u.Pod.Name)
	}
	if err := os.Remove(filepath.Join(dir, "etcd.yaml")); err != nil {
		t.Fatal(err)
	}
	if u := next("a removed manifest"); u.Type != Removed || u.Pod.Name != "etcd-node1" {
		t.Fatalf("update %v %s, want the static pod removed", u.Type, u.Pod.Name)
	}
}
