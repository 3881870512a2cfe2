package etcdsnapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	testclock "k8s.io/utils/clock/testing"
)

func hash6(node, loc string) string {
	sum := sha256.Sum256([]byte(node + loc))
	return hex.EncodeToString(sum[:])[:6]
}

func TestObjectName(t *testing.T) {
	const loc = "file:///var/lib/k1s/server/db/snapshots/x"
	long := strings.Repeat("a", 300)
	tests := []struct {
		desc, node, name string
		want             string // "" : only checked to be valid
	}{
		{"plain", "node-a", "on-demand-node-a-1700000000", "local-on-demand-node-a-1700000000-" + hash6("node-a", loc)},
		{"compressed keeps .zip", "node-a", "etcd-snapshot-node-a-1700000000.zip", "local-etcd-snapshot-node-a-1700000000.zip-" + hash6("node-a", loc)},
		{"lowercased", "node-a", "Nightly-node-a-1", "local-nightly-node-a-1-" + hash6("node-a", loc)},
		{"odd characters", "node-a", "my_snap shot+1", "local-my-snap-shot-1-" + hash6("node-a", loc)},
		{"dots and dashes trimmed per label", "node-a", "-.a..-b-._c", "local-a.b.c-" + hash6("node-a", loc)},
		{"nothing usable", "node-a", "___", "local-snapshot-" + hash6("node-a", loc)},
		{"non-ASCII", "node-a", "snäp", "local-sn--p-" + hash6("node-a", loc)},
		{"too long is cut", "node-a", long, "local-" + long[:validation.DNS1123SubdomainMaxLength-13] + "-" + hash6("node-a", loc)},
		{"cut leaves no trailing dash", "node-a", strings.Repeat("a", 239) + "-.-bbbbbbbbbb", ""},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := ObjectName(tt.node, loc, tt.name)
			if tt.want != "" && got != tt.want {
				t.Errorf("ObjectName(%q) = %q, want %q", tt.name, got, tt.want)
			}
			if msgs := validation.IsDNS1123Subdomain(got); len(msgs) > 0 {
				t.Errorf("ObjectName(%q) = %q is not a DNS-1123 subdomain: %v", tt.name, got, msgs)
			}
		})
	}
	// The node and the location are in the name: the same snapshot name
	// on two nodes, or in two directories, makes two objects.
	a := ObjectName("node-a", loc, "s")
	if b := ObjectName("node-b", loc, "s"); a == b {
		t.Errorf("two nodes share the name %s", a)
	}
	if b := ObjectName("node-a", loc+"2", "s"); a == b {
		t.Errorf("two locations share the name %s", a)
	}
}

func TestReflectorConfigValidate(t *testing.T) {
	tests := []struct {
		desc string
		cfg  ReflectorConfig
		want string // "" : valid
	}{
		{"valid", ReflectorConfig{Dir: "/d", NodeName: "node-a"}, ""},
		{"no dir", ReflectorConfig{NodeName: "node-a"}, "--etcd-snapshot-dir"},
		{"no node", ReflectorConfig{Dir: "/d"}, "--node-name"},
		{"node too long for a label", ReflectorConfig{Dir: "/d", NodeName: strings.Repeat("n", 64)}, "--node-name"},
		{"negative period", ReflectorConfig{Dir: "/d", NodeName: "n", Period: -time.Second}, "period"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.desc, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one naming %s", tt.desc, err, tt.want)
		}
	}
}

// snapFile writes a snapshot file of size bytes taken at unix time at.
func snapFile(t *testing.T, dir, name, node string, at int64, size int) string {
	t.Helper()
	n := FileName(name, node, time.Unix(at, 0), false)
	if err := os.WriteFile(filepath.Join(dir, n), make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

func fakeDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{FileGVR: FileKind + "List"}, objs...)
}

// esf is an ETCDSnapshotFile as another writer left it.
func esf(name, node, snapshot string, size string, s3 bool) *unstructured.Unstructured {
	spec := map[string]any{"snapshotName": snapshot, "nodeName": node, "location": "file:///elsewhere/" + snapshot}
	if s3 {
		spec["s3"] = map[string]any{"bucket": "b"}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k3s.cattle.io/v1", "kind": FileKind,
		"metadata": map[string]any{"name": name},
		"spec":     spec,
		"status":   map[string]any{"size": size, "creationTime": "2020-01-01T00:00:00Z", "readyToUse": true},
	}}
	if node != "" {
		u.SetLabels(map[string]string{LabelStorageNode: node})
	}
	return u
}

func TestReconcile(t *testing.T) {
	const node = "node-a"
	dir := t.TempDir()
	// The directory: two snapshots and what List skips.
	f1 := snapFile(t, dir, "on-demand", node, 1700000000, 10)
	f2 := snapFile(t, dir, "etcd-snapshot", node, 1700000100, 20)
	for _, skip := range []string{"x.part", ".hidden", "y.zip.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, skip), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	name := func(f string) string { return ObjectName(node, Location(filepath.Join(dir, f)), f) }
	stale := esf(name(f1), node, f1, "1", false) // wrong size, creation time, location

	tests := []struct {
		desc     string
		existing []runtime.Object
		// want: the objects after the pass (by name); unchanged: ones that
		// must be left exactly as they were.
		want      []string
		unchanged []string
		verbs     []string // the write verbs issued, in order
	}{
		{desc: "new files make objects", want: []string{name(f1), name(f2)}, verbs: []string{"create", "create"}},
		{desc: "a stale object is corrected", existing: []runtime.Object{stale},
			want: []string{name(f1), name(f2)}, verbs: []string{"update", "create"}},
		{desc: "the object of a removed file is deleted", existing: []runtime.Object{esf("local-gone-abcdef", node, "gone", "5", false)},
			want: []string{name(f1), name(f2)}, verbs: []string{"delete", "create", "create"}},
		{desc: "other nodes' objects and S3 records are left alone",
			existing: []runtime.Object{esf("local-b-1", "node-b", "b", "5", false), esf("s3-x-1", node, "x", "5", true), esf("unlabelled", "", "u", "5", false)},
			want:     []string{name(f1), name(f2), "local-b-1", "s3-x-1", "unlabelled"}, unchanged: []string{"local-b-1", "s3-x-1", "unlabelled"},
			verbs: []string{"create", "create"}},
		{desc: "an object that lost its label is taken over", existing: []runtime.Object{func() runtime.Object {
			o := esf(name(f2), "", f2, "20", false)
			o.Object["spec"].(map[string]any)["nodeName"] = node
			return o
		}()}, want: []string{name(f1), name(f2)}, verbs: []string{"create", "update", "create"}}, // names sorted: f2 first
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			client := fakeDynamic(tt.existing...)
			before := map[string]*unstructured.Unstructured{}
			for _, o := range tt.existing {
				u := o.(*unstructured.Unstructured)
				before[u.GetName()] = u.DeepCopy()
			}
			r, err := NewReflector(ReflectorConfig{Dir: dir, NodeName: node}, client, testclock.NewFakeClock(time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			ctx := klog.NewContext(context.Background(), klog.Background())
			if err := r.Reconcile(ctx); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			var verbs []string
			for _, a := range client.Actions() {
				if v := a.GetVerb(); v != "list" && v != "get" {
					verbs = append(verbs, v)
				}
			}
			if !slices.Equal(verbs, tt.verbs) {
				t.Errorf("writes %v, want %v", verbs, tt.verbs)
			}
			list, err := client.Resource(FileGVR).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]unstructured.Unstructured{}
			var names []string
			for _, o := range list.Items {
				got[o.GetName()] = o
				names = append(names, o.GetName())
			}
			slices.Sort(names)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(names, want) {
				t.Fatalf("objects %v, want %v", names, want)
			}
			for _, n := range tt.unchanged {
				o := got[n]
				if !equalObjects(&o, before[n]) {
					t.Errorf("%s changed: %v", n, o.Object)
				}
			}
			// The objects of the two files say what the files say.
			for _, c := range []struct {
				file    string
				size    string
				created string
			}{{f1, "10", "2023-11-14T22:13:20Z"}, {f2, "20", "2023-11-14T22:15:00Z"}} {
				o := got[name(c.file)]
				checks := map[string]string{
					"spec.snapshotName":   c.file,
					"spec.nodeName":       node,
					"spec.location":       "file://" + filepath.Join(dir, c.file),
					"status.size":         c.size,
					"status.creationTime": c.created,
				}
				for path, want := range checks {
					v, _, _ := unstructured.NestedFieldNoCopy(o.Object, strings.Split(path, ".")...)
					if fmt.Sprint(v) != want {
						t.Errorf("%s %s = %q, want %q", c.file, path, v, want)
					}
				}
				if ready, _, _ := unstructured.NestedBool(o.Object, "status", "readyToUse"); !ready {
					t.Errorf("%s readyToUse false", c.file)
				}
				if l := o.GetLabels()[LabelStorageNode]; l != node {
					t.Errorf("%s label %s = %q", c.file, LabelStorageNode, l)
				}
			}

			// A second pass writes nothing.
			client.ClearActions()
			if err := r.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			for _, a := range client.Actions() {
				if v := a.GetVerb(); v != "list" {
					t.Errorf("a second pass did %s", v)
				}
			}
		})
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	return string(ja) == string(jb)
}

// TestReconcileErrors: an object in the way (another node's of the same
// name) is reported and the other files still get theirs.
func TestReconcileErrors(t *testing.T) {
	dir := t.TempDir()
	f1 := snapFile(t, dir, "a", "node-a", 1, 1)
	f2 := snapFile(t, dir, "b", "node-a", 2, 1)
	n1 := ObjectName("node-a", Location(filepath.Join(dir, f1)), f1)
	n2 := ObjectName("node-a", Location(filepath.Join(dir, f2)), f2)
	client := fakeDynamic(esf(n1, "", f1, "1", false)) // nodeName "" : not this node's
	r, err := NewReflector(ReflectorConfig{Dir: dir, NodeName: "node-a"}, client, testclock.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Reconcile(context.Background())
	if err == nil || !strings.Contains(err.Error(), n1) {
		t.Errorf("Reconcile = %v, want an error naming %s", err, n1)
	}
	if _, err := client.Resource(FileGVR).Get(context.Background(), n2, metav1.GetOptions{}); err != nil {
		t.Errorf("the other file's object: %v", err)
	}
}

// TestReflectorRun: Run reconciles at once, retries while the resource is
// not served (after 1 s on the clock), and on Trigger.
func TestReflectorRun(t *testing.T) {
	dir := t.TempDir()
	client := fakeDynamic()
	var fails atomic.Int32
	fails.Store(1)
	client.PrependReactor("list", "etcdsnapshotfiles", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails.Add(-1) >= 0 {
			return true, nil, apierrors.NewNotFound(FileGVR.GroupResource(), "")
		}
		return false, nil, nil
	})
	clk := testclock.NewFakeClock(time.Now())
	r, err := NewReflector(ReflectorConfig{Dir: dir, NodeName: "node-a", Period: time.Hour}, client, clk)
	if err != nil {
		t.Fatal(err)
	}
	f1 := snapFile(t, dir, "a", "node-a", 1, 1)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	// waitObjects waits for want objects, stepping the clock by step
	// meanwhile (0: not at all).
	waitObjects := func(want int, step time.Duration) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			list, err := client.Resource(FileGVR).List(context.Background(), metav1.ListOptions{})
			if err == nil && len(list.Items) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("objects: %v %v, want %d", list, err, want)
			}
			clk.Step(step)
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The first pass fails; it is tried again 1 s later on the clock.
	for fails.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	waitObjects(1, time.Second)
	if err := os.Remove(filepath.Join(dir, f1)); err != nil {
		t.Fatal(err)
	}
	r.Trigger()
	waitObjects(0, 0)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestSchedulerOnChange: the hook runs after each scheduled snapshot,
// once the retention has pruned the directory.
func TestSchedulerOnChange(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2030, 1, 1, 0, 0, 30, 0, time.Local)
	clk := testclock.NewFakeClock(start)
	s, err := NewScheduler(ScheduleConfig{Cron: "* * * * *", Retention: 1, Dir: dir, NodeName: "n"}, fakeSave("db"), clk)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan int, 10) // files in the directory when called
	s.OnChange(func() {
		files, _ := List(dir)
		seen <- len(files)
	})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for i := range 2 {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.SetTime(start.Add(time.Duration(i+1) * time.Minute).Truncate(time.Minute))
		select {
		case n := <-seen:
			if n != 1 {
				t.Errorf("call %d saw %d files, want 1 (after the retention)", i, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("OnChange not called after snapshot %d", i)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}
