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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	coreapi "github.com/k1s/k1s/server/apis/core"
)

// RunAPISource watches the pods bound to nodeName and feeds them to m,
// until ctx is cancelled. synced is closed after the first full list.
func RunAPISource(ctx context.Context, client kubernetes.Interface, nodeName string, m *Manager, synced chan<- struct{}) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
		}))
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
}

// Run re-reads the directory every period and gives m the static pods.
func (f *FileSource) Run(ctx context.Context, m *Manager) {
	if f.Period == 0 {
		f.Period = 20 * time.Second
	}
	logger := klog.FromContext(ctx)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		pods, errs := f.Read()
		for _, err := range errs {
			logger.Error(err, "Invalid static pod manifest")
		}
		m.SetStaticPods(pods)
	}, f.Period)
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
