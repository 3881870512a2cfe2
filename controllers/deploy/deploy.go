// Package deploy applies the manifests folder (k3s's deploy controller):
// every .yaml, .yml and .json file under <data-dir>/server/manifests is
// applied with server-side apply at start and whenever it changes, each
// file tracked as a k3s.cattle.io/v1 Addon in kube-system (spec.source,
// spec.checksum) with events that say what happened. It also installs the
// CustomResourceDefinitions k1s serves (Addon, HelmChart, HelmChartConfig)
// and stages the packaged manifests (Stage).
//
// Rules, as k3s: NAME.skip beside NAME keeps NAME out; a file whose base
// name is --disable'd is removed with the objects it names; deleting a
// file deletes nothing; a namespaced object without a namespace goes to
// "default". An error in one file (unreadable, unparsable, refused) is an
// event on its Addon and a log line, and the other files still apply; the
// file is tried again on the next rescan.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// FieldManager is the server-side apply field manager of what the folder
// applies.
const FieldManager = "k1s-deploy"

// AddonGVR is k3s's Addon resource.
var AddonGVR = schema.GroupVersionResource{Group: "k3s.cattle.io", Version: "v1", Resource: "addons"}

// Config configures the deploy controller.
type Config struct {
	// Dir is the manifests folder. Required; k1s server uses
	// <data-dir>/server/manifests.
	Dir string
	// Disabled are --disable's names: a file NAME.yaml (.yml, .json) is
	// removed and the objects it names deleted. Default none.
	Disabled []string
	// Rescan is how often the folder is read even without a change
	// notification, retrying failed files. Default 15s (k3s's period).
	Rescan time.Duration
	// CRDs are CustomResourceDefinition manifests applied, and awaited
	// until Established, before the folder. Default none.
	CRDs fs.FS
}

// Validate reports a bad Config.
func (c *Config) Validate() error {
	if c.Dir == "" {
		return errors.New("deploy: the manifests folder is required")
	}
	if c.Rescan < 0 {
		return fmt.Errorf("deploy: rescan period %s is negative", c.Rescan)
	}
	return nil
}

// Objects applies and deletes objects of any kind. Safe for concurrent use.
type Objects interface {
	// Apply applies obj with server-side apply (forcing conflicts); a
	// namespaced object without a namespace is given "default".
	Apply(ctx context.Context, obj *unstructured.Unstructured) error
	// Delete deletes obj; NotFound is no error.
	Delete(ctx context.Context, obj *unstructured.Unstructured) error
	// Established waits for a CustomResourceDefinition to be served.
	Established(ctx context.Context, name string) error
}

// Controller applies the folder. Create it with New; Run it once.
type Controller struct {
	cfg      Config
	objects  Objects
	addons   dynamic.NamespaceableResourceInterface
	recorder record.EventRecorder
	clock    clock.WithTicker
	disabled map[string]bool

	mu      sync.Mutex
	applied map[string]fileState // path → what was last applied from it
	failed  map[string]fileState // path → what last failed, retried on the rescan
	ready   chan struct{}
}

type fileState struct {
	modTime time.Time
	size    int64
}

// New builds the controller; it starts nothing.
func New(cfg Config, objects Objects, dyn dynamic.Interface, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Rescan == 0 {
		cfg.Rescan = 15 * time.Second
	}
	d := map[string]bool{}
	for _, n := range cfg.Disabled {
		d[n] = true
	}
	return &Controller{cfg: cfg, objects: objects, addons: dyn.Resource(AddonGVR), recorder: recorder, clock: clk,
		disabled: d, applied: map[string]fileState{}, failed: map[string]fileState{}, ready: make(chan struct{})}, nil
}

// Ready is closed once the CRDs are established and the folder has been
// applied once (whatever errors single files had).
func (c *Controller) Ready() <-chan struct{} { return c.ready }

// Run installs the CRDs, applies the folder, then watches it until ctx is
// cancelled. It returns nil then; it never gives up on its own.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("deploy")
	ctx = klog.NewContext(ctx, logger)
	for {
		err := c.installCRDs(ctx)
		if err == nil {
			break
		}
		logger.Info("Could not install the CustomResourceDefinitions yet", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(time.Second):
		}
	}
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		logger.Info("Watching the manifests folder failed; rescanning it only", "err", err, "period", c.cfg.Rescan)
	} else {
		defer watcher.Close()
		if err := os.MkdirAll(c.cfg.Dir, 0o700); err != nil {
			logger.Info("Creating the manifests folder failed", "dir", c.cfg.Dir, "err", err)
		}
		// The folder and its sub-folders (new ones are added as they appear).
		_ = filepath.WalkDir(c.cfg.Dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				if err := watcher.Add(path); err != nil {
					logger.Info("Watching a manifests folder failed; rescanning it only", "dir", path, "err", err, "period", c.cfg.Rescan)
				}
			}
			return nil
		})
	}
	c.Sync(ctx, true)
	close(c.ready)
	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if watcher != nil {
		events, watchErrs = watcher.Events, watcher.Errors
	}
	ticker := c.clock.NewTicker(c.cfg.Rescan)
	defer ticker.Stop()
	// A burst of writes (an editor's temporary file, then a rename) is
	// read once, 200 ms after it settles.
	var settle <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					_ = watcher.Add(ev.Name)
				}
			}
			settle = c.clock.After(200 * time.Millisecond)
		case err, ok := <-watchErrs:
			if !ok {
				watchErrs = nil
				continue
			}
			logger.V(2).Info("Manifests folder watch error", "err", err)
		case <-settle:
			settle = nil
			c.sync(ctx, false, false)
		case <-ticker.C():
			c.Sync(ctx, false)
		}
	}
}

// installCRDs applies every CRD of cfg.CRDs and waits until each is served.
func (c *Controller) installCRDs(ctx context.Context) error {
	if c.cfg.CRDs == nil {
		return nil
	}
	names, err := fs.Glob(c.cfg.CRDs, "*.yaml")
	if err != nil {
		return err
	}
	var crds []*unstructured.Unstructured
	for _, n := range names {
		content, err := fs.ReadFile(c.cfg.CRDs, n)
		if err != nil {
			return err
		}
		objs, err := parseObjects(content)
		if err != nil {
			return fmt.Errorf("CRD %s: %w", n, err)
		}
		crds = append(crds, objs...)
	}
	for _, crd := range crds {
		if err := c.objects.Apply(ctx, crd); err != nil {
			return fmt.Errorf("apply CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		if err := c.objects.Established(ctx, crd.GetName()); err != nil {
			return fmt.Errorf("CRD %s: %w", crd.GetName(), err)
		}
	}
	return nil
}

// Sync makes one pass over the folder: every file changed since it was
// last applied (every file when force) is applied, files that failed are
// tried again, disabled files are removed. Errors are reported per file,
// as events and log lines.
func (c *Controller) Sync(ctx context.Context, force bool) { c.sync(ctx, force, true) }

// sync is Sync; without retryFailed (a pass for a change notification) a
// file that failed is tried again only once it changed.
func (c *Controller) sync(ctx context.Context, force, retryFailed bool) {
	logger := klog.FromContext(ctx)
	files, err := listFiles(c.cfg.Dir, c.disabled)
	if err != nil {
		logger.Error(err, "Reading the manifests folder failed")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range files {
		if ctx.Err() != nil {
			return
		}
		if f.disabled {
			if err := c.disable(ctx, f.path); err != nil {
				logger.Error(err, "Removing a disabled manifest failed", "file", f.path)
			}
			delete(c.applied, f.path)
			continue
		}
		st := fileState{modTime: f.modTime, size: f.size}
		// A file on a filesystem that pins every time to the epoch (NixOS's
		// store) is always compared by checksum.
		epoch := f.modTime.Equal(time.Unix(0, 0))
		if prev, ok := c.applied[f.path]; ok && !force && prev == st && !epoch {
			continue
		}
		if prev, ok := c.failed[f.path]; ok && !force && !retryFailed && prev == st && !epoch {
			continue
		}
		if err := c.deploy(ctx, f.path, !force); err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Error(err, "Applying a manifest failed", "file", f.path)
			delete(c.applied, f.path)
			c.failed[f.path] = st
			continue
		}
		delete(c.failed, f.path)
		c.applied[f.path] = st
	}
}

// deploy applies one file, tracked by its Addon. With compare, a file
// whose checksum is the Addon's is left alone.
func (c *Controller) deploy(ctx context.Context, path string, compare bool) error {
	addon, err := c.addon(ctx, path)
	if err != nil {
		return fmt.Errorf("addon for %s: %w", path, err)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		c.recorder.Eventf(addon, corev1.EventTypeWarning, "ReadManifestFailed", "Read manifest at %q failed: %v", path, err)
		return err
	}
	sum := checksum(content)
	old, _, _ := unstructured.NestedString(addon.Object, "spec", "checksum")
	if compare && sum == old {
		return nil
	}
	objs, err := parseObjects(content)
	if err != nil {
		c.recorder.Eventf(addon, corev1.EventTypeWarning, "ParseManifestFailed", "Parse manifest at %q failed: %v", path, err)
		return fmt.Errorf("parse: %w", err)
	}
	c.recorder.Eventf(addon, corev1.EventTypeNormal, "ApplyingManifest", "Applying manifest at %q", path)
	var errs []error
	for _, obj := range applyOrder(objs) {
		if err := c.objects.Apply(ctx, obj); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", obj.GetKind(), objectName(obj), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		c.recorder.Eventf(addon, corev1.EventTypeWarning, "ApplyManifestFailed", "Applying manifest at %q failed: %v", path, err)
		return err
	}
	c.recorder.Eventf(addon, corev1.EventTypeNormal, "AppliedManifest", "Applied manifest at %q", path)
	if err := unstructured.SetNestedField(addon.Object, sum, "spec", "checksum"); err != nil {
		return err
	}
	if _, err := c.addons.Namespace(metav1.NamespaceSystem).Update(ctx, addon, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("record the checksum in addon %s: %w", addon.GetName(), err)
	}
	return nil
}

// addon returns the file's Addon, created (with its source) if missing, so
// that events have an object to name.
func (c *Controller) addon(ctx context.Context, path string) (*unstructured.Unstructured, error) {
	name := addonName(path)
	addons := c.addons.Namespace(metav1.NamespaceSystem)
	addon, err := addons.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		if src, _, _ := unstructured.NestedString(addon.Object, "spec", "source"); src != path {
			if err := unstructured.SetNestedField(addon.Object, path, "spec", "source"); err != nil {
				return nil, err
			}
			return addons.Update(ctx, addon, metav1.UpdateOptions{FieldManager: FieldManager})
		}
		return addon, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	addon = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": AddonGVR.GroupVersion().String(),
		"kind":       "Addon",
		"metadata":   map[string]any{"name": name, "namespace": metav1.NamespaceSystem},
		"spec":       map[string]any{"source": path},
	}}
	return addons.Create(ctx, addon, metav1.CreateOptions{FieldManager: FieldManager})
}

// disable deletes the objects a disabled file names, then the file and its
// Addon (k3s's --disable).
func (c *Controller) disable(ctx context.Context, path string) error {
	content, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var errs []error
	if objs, err := parseObjects(content); err == nil {
		for _, obj := range objs {
			if err := c.objects.Delete(ctx, obj); err != nil {
				errs = append(errs, fmt.Errorf("delete %s %s: %w", obj.GetKind(), objectName(obj), err))
			}
		}
	} else {
		errs = append(errs, fmt.Errorf("parse: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if addon, err := c.addons.Namespace(metav1.NamespaceSystem).Get(ctx, addonName(path), metav1.GetOptions{}); err == nil {
		c.recorder.Eventf(addon, corev1.EventTypeNormal, "DeletingManifest", "Deleting manifest at %q", path)
		if err := c.addons.Namespace(metav1.NamespaceSystem).Delete(ctx, addon.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	klog.FromContext(ctx).Info("Removed a disabled manifest", "file", path)
	return nil
}

func objectName(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
