package etcdsnapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// FileGVR is k3s's ETCDSnapshotFile resource (k3s.cattle.io/v1,
// cluster-scoped): one object per snapshot file.
var FileGVR = schema.GroupVersionResource{Group: "k3s.cattle.io", Version: "v1", Resource: "etcdsnapshotfiles"}

const (
	// FileKind is the ETCDSnapshotFile kind.
	FileKind = "ETCDSnapshotFile"
	// LabelStorageNode labels an ETCDSnapshotFile with the node whose
	// snapshot directory holds the file (k3s's label; k3s's S3 copies
	// carry "s3").
	LabelStorageNode = "etcd.k3s.cattle.io/snapshot-storage-node"
	// localPrefix starts the name of a local file's object (k3s's; its
	// S3 copies' start with "s3-").
	localPrefix = "local-"
	// DefaultReflectPeriod is how often the objects are brought in line
	// with the directory when nothing else asks for it.
	DefaultReflectPeriod = time.Minute
	// settleDelay: a burst of changes in the directory is acted on once,
	// this long after the last.
	settleDelay = 500 * time.Millisecond
)

// Location is the file:// URI of the snapshot at the absolute path.
func Location(path string) string { return "file://" + filepath.ToSlash(path) }

// ObjectName is the name of the ETCDSnapshotFile of the snapshot named
// snapshotName at location on node, k3s's scheme: "local-", the snapshot's
// name lowercased, "-" and 6 hex digits of the SHA-256 of node and
// location (so that equal names on two nodes do not collide). A name that
// is no DNS-1123 subdomain, or too long for the prefix and suffix, is
// made one (other characters become "-", dots and dashes are trimmed
// around each label, cut to length); k3s replaces such a name by
// "etcd-snapshot-<node>-<unix time>" instead.
func ObjectName(node, location, snapshotName string) string {
	sum := sha256.Sum256([]byte(node + location))
	suffix := "-" + hex.EncodeToString(sum[:])[:6]
	return localPrefix + sanitizeName(strings.ToLower(snapshotName), validation.DNS1123SubdomainMaxLength-len(localPrefix)-len(suffix)) + suffix
}

// sanitizeName makes name a DNS-1123 subdomain of at most max characters.
func sanitizeName(name string, max int) string {
	if len(name) <= max && len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	var parts []string
	for _, p := range strings.Split(string(b), ".") {
		if p = strings.Trim(p, "-"); p != "" {
			parts = append(parts, p)
		}
	}
	out := strings.Join(parts, ".")
	if len(out) > max {
		out = out[:max]
	}
	if out = strings.TrimRight(out, "-."); out == "" {
		out = "snapshot"
	}
	return out
}

// ReflectorConfig configures the ETCDSnapshotFile objects of one server.
type ReflectorConfig struct {
	// Dir is the snapshot directory (--etcd-snapshot-dir). Required.
	Dir string
	// NodeName is this server's node name (--node-name), the objects'
	// spec.nodeName and label. Required; a valid label value.
	NodeName string
	// Period is how often the objects are checked against the directory
	// besides its change notifications. Default DefaultReflectPeriod.
	Period time.Duration
}

// Validate reports errors naming the flag.
func (c ReflectorConfig) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("--etcd-snapshot-dir: must not be empty"))
	}
	if msgs := validation.IsValidLabelValue(c.NodeName); c.NodeName == "" || len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--node-name: %q is not usable as the %s label: %s", c.NodeName, LabelStorageNode, strings.Join(msgs, "; ")))
	}
	if c.Period < 0 {
		errs = append(errs, fmt.Errorf("snapshot file period %s must not be negative", c.Period))
	}
	return errors.Join(errs...)
}

// Reflector keeps one ETCDSnapshotFile per file of this server's snapshot
// directory: created for a new file, its spec and status kept as the file
// says (recreated if deleted while the file exists), deleted once the file
// is gone. Objects labelled with another node are never touched. Trigger
// is safe for concurrent use; Reconcile and Run are not run concurrently
// with each other.
type Reflector struct {
	cfg    ReflectorConfig
	dir    string // absolute
	client dynamic.NamespaceableResourceInterface
	clock  clock.WithTicker
	kick   chan struct{}
}

// NewReflector validates cfg; it starts nothing.
func NewReflector(cfg ReflectorConfig, dyn dynamic.Interface, clk clock.WithTicker) (*Reflector, error) {
	if cfg.Period == 0 {
		cfg.Period = DefaultReflectPeriod
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("--etcd-snapshot-dir: %w", err)
	}
	return &Reflector{cfg: cfg, dir: dir, client: dyn.Resource(FileGVR), clock: clk, kick: make(chan struct{}, 1)}, nil
}

// Trigger asks Run for a pass soon (after a snapshot was taken or
// removed). It never blocks.
func (r *Reflector) Trigger() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run reconciles at once, then on Trigger, on changes in the directory
// and every Period, until ctx is done; it returns nil then. A failed pass
// (the API or the CRD not there yet) is retried after 1 s, doubling up to
// Period.
func (r *Reflector) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("etcd-snapshot-files")
	ctx = klog.NewContext(ctx, logger)
	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if w, err := r.watch(); err != nil {
		logger.Info("Watching the snapshot directory failed; checking it periodically only", "dir", r.dir, "err", err, "period", r.cfg.Period)
	} else {
		defer w.Close()
		events, watchErrs = w.Events, w.Errors
	}
	ticker := r.clock.NewTicker(r.cfg.Period)
	defer ticker.Stop()
	backoff := time.Second
	var retry, settle <-chan time.Time
	pending := true
	for {
		if pending {
			pending, retry = false, nil
			if err := r.Reconcile(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if apierrors.IsNotFound(err) {
					logger.V(2).Info("The ETCDSnapshotFile resource is not served yet", "err", err, "retry", backoff)
				} else {
					logger.Error(err, "Reflecting the etcd snapshots as ETCDSnapshotFiles failed", "retry", backoff)
				}
				retry = r.clock.After(backoff)
				backoff = min(2*backoff, r.cfg.Period)
			} else {
				backoff = time.Second
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.kick:
			pending = true
		case <-retry:
			pending = true
		case <-ticker.C():
			pending = true
		case <-settle:
			settle, pending = nil, true
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			settle = r.clock.After(settleDelay)
		case err, ok := <-watchErrs:
			if !ok {
				watchErrs = nil
				continue
			}
			logger.V(2).Info("Snapshot directory watch error", "err", err)
		}
	}
}

// watch watches the snapshot directory, created if missing (as Take does).
func (r *Reflector) watch() (*fsnotify.Watcher, error) {
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(r.dir); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Reconcile makes one pass: every snapshot file of the directory has its
// object, as the file says; every object of this node without a file is
// deleted. Every object is tried; the error joins those that failed.
func (r *Reflector) Reconcile(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	files, err := List(r.dir)
	if err != nil {
		return err
	}
	desired := make(map[string]*unstructured.Unstructured, len(files))
	for _, f := range files {
		obj := r.object(f)
		desired[obj.GetName()] = obj
	}
	list, err := r.client.List(ctx, metav1.ListOptions{LabelSelector: labels.Set{LabelStorageNode: r.cfg.NodeName}.String()})
	if err != nil {
		return fmt.Errorf("list ETCDSnapshotFiles: %w", err)
	}
	var errs []error
	for i := range list.Items {
		have := &list.Items[i]
		want, ok := desired[have.GetName()]
		if !ok {
			if _, s3, _ := unstructured.NestedMap(have.Object, "spec", "s3"); s3 {
				continue // an S3 copy's record, not a file of this directory
			}
			uid := have.GetUID()
			err := r.client.Delete(ctx, have.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete ETCDSnapshotFile %s: %w", have.GetName(), err))
				continue
			}
			logger.V(2).Info("Deleted the ETCDSnapshotFile of a removed snapshot", "name", have.GetName())
			continue
		}
		delete(desired, have.GetName())
		if err := r.update(ctx, have, want); err != nil {
			errs = append(errs, err)
		}
	}
	names := make([]string, 0, len(desired))
	for n := range desired {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := r.create(ctx, desired[n]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// object is the ETCDSnapshotFile f should have.
func (r *Reflector) object(f File) *unstructured.Unstructured {
	loc := Location(filepath.Join(r.dir, f.Name))
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": FileGVR.GroupVersion().String(),
		"kind":       FileKind,
		"metadata": map[string]any{
			"name":   ObjectName(r.cfg.NodeName, loc, f.Name),
			"labels": map[string]any{LabelStorageNode: r.cfg.NodeName},
		},
		"spec": map[string]any{
			"snapshotName": f.Name,
			"nodeName":     r.cfg.NodeName,
			"location":     loc,
		},
		"status": map[string]any{
			// A quantity; k3s writes its canonical string ("2M"), k1s the
			// exact bytes as an integer, which a quantity reads too.
			"size":         f.Size,
			"creationTime": f.CreatedAt.UTC().Format(time.RFC3339),
			"readyToUse":   true,
		},
	}}
}

// create creates want; an object of that name already there (its label
// removed) is taken over when it names this node.
func (r *Reflector) create(ctx context.Context, want *unstructured.Unstructured) error {
	_, err := r.client.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		have, getErr := r.client.Get(ctx, want.GetName(), metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("get ETCDSnapshotFile %s: %w", want.GetName(), getErr)
		}
		if node, _, _ := unstructured.NestedString(have.Object, "spec", "nodeName"); node != r.cfg.NodeName {
			return fmt.Errorf("ETCDSnapshotFile %s exists for node %q", want.GetName(), node)
		}
		return r.update(ctx, have, want)
	}
	if err != nil {
		return fmt.Errorf("create ETCDSnapshotFile %s: %w", want.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("Created ETCDSnapshotFile", "name", want.GetName(), "snapshot", want.Object["spec"].(map[string]any)["snapshotName"])
	return nil
}

// update writes want's label, spec and status into have when they differ
// (the whole object: the resource has no status subresource).
func (r *Reflector) update(ctx context.Context, have, want *unstructured.Unstructured) error {
	if have.GetLabels()[LabelStorageNode] == r.cfg.NodeName &&
		equality.Semantic.DeepEqual(have.Object["spec"], want.Object["spec"]) &&
		equality.Semantic.DeepEqual(have.Object["status"], want.Object["status"]) {
		return nil
	}
	obj := have.DeepCopy()
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[LabelStorageNode] = r.cfg.NodeName
	obj.SetLabels(l)
	obj.Object["spec"] = want.DeepCopy().Object["spec"]
	obj.Object["status"] = want.DeepCopy().Object["status"]
	if _, err := r.client.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update ETCDSnapshotFile %s: %w", obj.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("Updated ETCDSnapshotFile", "name", obj.GetName())
	return nil
}
