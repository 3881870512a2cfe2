package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/server/etcdsnapshot"
	"github.com/k1s/k1s/tests/integration/framework"
)

// TestETCDSnapshotFiles: the server installs the ETCDSnapshotFile CRD and
// mirrors its own snapshot directory; a reflector for another node
// (another server of an HA cluster) mirrors its two files as objects
// `kubectl get etcdsnapshotfiles` shows with k3s's columns, drops the
// object of a removed file, and the two servers leave each other's
// objects alone.
func TestETCDSnapshotFiles(t *testing.T) {
	s := framework.StartAPI(t)
	dyn := s.Dynamic(t)
	files := dyn.Resource(etcdsnapshot.FileGVR)
	ctx := klog.NewContext(context.Background(), klog.Background())

	// The deploy component installs the CRD; the server's own reflector
	// then answers for a snapshot written into its directory.
	own := etcdsnapshot.FileName("on-demand", "self", time.Unix(1700000000, 0), false)
	ownDir := etcdsnapshot.DefaultDir(s.DataDir)
	if err := os.MkdirAll(ownDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ownDir, own), []byte("db"), 0o600); err != nil {
		t.Fatal(err)
	}
	var ownNode string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := files.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // the CRD is not served yet
		}
		for _, o := range list.Items {
			if n, _, _ := unstructured.NestedString(o.Object, "spec", "snapshotName"); n == own {
				ownNode = o.GetLabels()[etcdsnapshot.LabelStorageNode]
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the server's own snapshot got no ETCDSnapshotFile: %v", err)
	}
	if ownNode == "" {
		t.Fatalf("the server's object has no %s label", etcdsnapshot.LabelStorageNode)
	}

	// Another node's directory with two snapshots.
	const node = "integ-node"
	dir := t.TempDir()
	names := []string{
		etcdsnapshot.FileName("on-demand", node, time.Unix(1700000000, 0), false),
		etcdsnapshot.FileName("etcd-snapshot", node, time.Unix(1700000600, 0), true),
	}
	for i, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), make([]byte, 1000*(i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := etcdsnapshot.NewReflector(etcdsnapshot.ReflectorConfig{Dir: dir, NodeName: node}, dyn, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	objName := func(n string) string {
		return etcdsnapshot.ObjectName(node, etcdsnapshot.Location(filepath.Join(dir, n)), n)
	}
	for i, n := range names {
		o, err := files.Get(ctx, objName(n), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ETCDSnapshotFile of %s: %v", n, err)
		}
		for path, want := range map[string]string{
			"spec.snapshotName": n, "spec.nodeName": node, "spec.location": "file://" + filepath.Join(dir, n),
			"status.size": fmt.Sprint(1000 * (i + 1)),
		} {
			var got string
			switch v, _, _ := unstructured.NestedFieldNoCopy(o.Object, strings.Split(path, ".")...); v := v.(type) {
			case string:
				got = v
			case int64:
				got = fmt.Sprint(v)
			}
			if got != want {
				t.Errorf("%s %s = %q, want %q", n, path, got, want)
			}
		}
		if ready, _, _ := unstructured.NestedBool(o.Object, "status", "readyToUse"); !ready {
			t.Errorf("%s: readyToUse not true", n)
		}
	}

	// A second pass over unchanged files writes nothing.
	before, err := files.Get(ctx, objName(names[0]), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	after, err := files.Get(ctx, objName(names[0]), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("a second pass rewrote the object (resourceVersion %s, was %s)", after.GetResourceVersion(), before.GetResourceVersion())
	}

	// What `kubectl get etcdsnapshotfiles` prints: the server's table.
	table := getTable(t, s.RESTConfig(t), "/apis/k3s.cattle.io/v1/etcdsnapshotfiles?labelSelector="+etcdsnapshot.LabelStorageNode+"%3D"+node)
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if want := []string{"Name", "SnapshotName", "Node", "Location", "Size", "CreationTime"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	rows := map[string][]any{}
	for _, row := range table.Rows {
		if len(row.Cells) == len(cols) {
			rows[fmt.Sprint(row.Cells[0])] = row.Cells
		}
	}
	if len(rows) != 2 {
		t.Fatalf("table rows %v, want 2", table.Rows)
	}
	if got := rows[objName(names[1])]; got == nil || got[1] != names[1] || got[2] != node || fmt.Sprint(got[4]) != "2000" || got[5] != "2023-11-14T22:23:20Z" {
		t.Errorf("row of %s = %v", names[1], got)
	}

	// A removed file's object goes; the other stays; the server's own
	// object and this node's are each left alone by the other.
	if err := os.Remove(filepath.Join(dir, names[0])); err != nil {
		t.Fatal(err)
	}
	if err := r.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	list, err := files.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range list.Items {
		got = append(got, o.GetName())
	}
	slices.Sort(got)
	want := []string{objName(names[1]), etcdsnapshot.ObjectName(ownNode, etcdsnapshot.Location(filepath.Join(ownDir, own)), own)}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
	// A pass of the server's reflector (on a new file in its directory)
	// keeps its hands off this node's object.
	own2 := etcdsnapshot.FileName("on-demand", "self", time.Unix(1700000001, 0), false)
	if err := os.WriteFile(filepath.Join(ownDir, own2), []byte("db"), 0o600); err != nil {
		t.Fatal(err)
	}
	own2Name := etcdsnapshot.ObjectName(ownNode, etcdsnapshot.Location(filepath.Join(ownDir, own2)), own2)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := files.Get(ctx, own2Name, metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the server's reflector did not pick up a new file: %v", err)
	}
	if _, err := files.Get(ctx, objName(names[1]), metav1.GetOptions{}); err != nil {
		t.Errorf("the server's reflector removed another node's object: %v", err)
	}
}

// getTable GETs path as a meta.k8s.io/v1 Table, as kubectl get does.
func getTable(t *testing.T, cfg *rest.Config, path string) *metav1.Table {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("table: %v: %s", err, body)
	}
	return &table
}
