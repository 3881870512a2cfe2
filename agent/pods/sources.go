package pods

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	coreapi "github.com/k1s/k1s/internal/apis/core"
)

// RunAPISource watches the pods bound to nodeName and feeds them to m,
// until ctx is cancelled. synced is closed after the first full list.
// wrap, when set, wraps the informer's lister-watcher (the node's
// checkpoint, which answers the list while the apiservers are away).
func RunAPISource(ctx context.Context, client kubernetes.Interface, nodeName string, m *Manager, synced chan<- struct{}, wrap func(cache.ListerWatcher) cache.ListerWatcher) {
	selector := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(selector))
	if wrap != nil {
		factory.InformerFor(&corev1.Pod{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			lw := cache.NewFilteredListWatchFromClient(client.CoreV1().RESTClient(), "pods", metav1.NamespaceAll, selector)
			return cache.NewSharedIndexInformer(wrap(lw), &corev1.Pod{}, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		})
	}
	inf := factory.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.SetAPIPod(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { m.SetAPIPod(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				m.DeleteAPIPod(pod)
			}
		},
	})
	factory.Start(ctx.Done())
	if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		close(synced)
	}
	<-ctx.Done()
	factory.Shutdown()
}

// FileSource reads static pod manifests from a directory.
type FileSource struct {
	Dir      string
	NodeName string
	// Period is how often the directory is re-read. Default 20s.
	Period time.Duration
	// Synced, when set, is closed once the directory has been read the
	// first time.
	Synced chan<- struct{}
}

// settle is how long a burst of changes in the directory is let finish
// (an editor's or a copy's several writes) before it is read.
const settle = 100 * time.Millisecond

// Run gives m the static pods: at once, whenever the directory changes
// (inotify), and every period — as kubelet's file source watches its
// directory and re-reads it every 20 s. The directory is created when it
// does not exist, so that it can be watched.
func (f *FileSource) Run(ctx context.Context, m *Manager) {
	if f.Period == 0 {
		f.Period = 20 * time.Second
	}
	logger := klog.FromContext(ctx)
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		logger.V(2).Info("Cannot create the static pod directory; it is re-read every period", "dir", f.Dir, "err", err)
	}
	changes := f.watch(ctx)
	t := time.NewTicker(f.Period)
	defer t.Stop()
	for {
		pods, errs := f.Read()
		for _, err := range errs {
			logger.Error(err, "Invalid static pod manifest")
		}
		m.SetStaticPods(pods)
		if f.Synced != nil {
			close(f.Synced)
			f.Synced = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if changes == nil {
				changes = f.watch(ctx)
			}
		case <-changes:
			select {
			case <-ctx.Done():
				return
			case <-time.After(settle):
			}
			select {
			case <-changes:
			default:
			}
		}
	}
}

// watch signals changes in the directory; nil when it cannot be watched
// (it does not exist, say), which leaves the periodic re-read.
func (f *FileSource) watch(ctx context.Context) <-chan struct{} {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil
	}
	if err := w.Add(f.Dir); err != nil {
		_ = w.Close()
		return nil
	}
	out := make(chan struct{}, 1)
	go func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return out
}

// Read parses every manifest in the directory; bad files are reported and
// skipped (they never stop the others).
func (f *FileSource) Read() ([]*corev1.Pod, []error) {
	entries, err := os.ReadDir(f.Dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, []error{fmt.Errorf("read static pod directory %s: %w", f.Dir, err)}
	}
	var pods []*corev1.Pod
	var errs []error
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(f.Dir, n)
		pod, err := f.readFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("static pod %s: %w", path, err))
			continue
		}
		pods = append(pods, pod)
	}
	return pods, errs
}

func (f *FileSource) readFile(path string) (*corev1.Pod, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("not a Pod but a %T", obj)
	}
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	// As upstream: the name gets the node's, the UID derives from the
	// content, so an edited manifest is a new pod.
	pod.Name = pod.Name + "-" + f.NodeName
	pod.Spec.NodeName = f.NodeName
	coreapi.DefaultPod(pod)
	sum := sha256.Sum256(append(data, []byte(f.NodeName+path)...))
	hash := hex.EncodeToString(sum[:16])
	pod.UID = types.UID(hash)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationSource] = SourceFile
	pod.Annotations[AnnotationHash] = hash
	if st, err := os.Stat(path); err == nil {
		pod.CreationTimestamp = metav1.NewTime(st.ModTime())
	}
	if errs := coreapi.ValidatePod(pod); len(errs) > 0 {
		return nil, fmt.Errorf("invalid pod: %v", errs.ToAggregate())
	}
	return pod, nil
}
