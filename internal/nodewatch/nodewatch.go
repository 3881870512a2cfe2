// Package nodewatch watches one Node by name: the agent's own node (for
// its pod CIDR, and the node's UID for mirror pods) and the server's node
// (for its control-plane label). A watch instead of a GET every few
// seconds: changes arrive at once, and an idle node costs no requests.
package nodewatch

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Watch is an informer on one Node. Create it with New, then Start it.
type Watch struct {
	name    string
	factory informers.SharedInformerFactory
	inf     cache.SharedIndexInformer
	changed chan struct{}
}

// New returns a watch of the Node called name. It starts nothing.
func New(client kubernetes.Interface, name string) (*Watch, error) {
	w := &Watch{name: name, changed: make(chan struct{}, 1)}
	w.factory = informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	w.inf = w.factory.Core().V1().Nodes().Informer()
	poke := func(any) {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	if _, err := w.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, obj any) { poke(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watch node %s: %w", name, err)
	}
	return w, nil
}

// Start watches until ctx is cancelled or the returned stop is called;
// stop returns once the watch has ended.
func (w *Watch) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	w.factory.Start(ctx.Done())
	return func() {
		cancel()
		w.factory.Shutdown()
	}
}

// Changed receives after the Node was seen (again) or changed; several
// changes before a receive are one.
func (w *Watch) Changed() <-chan struct{} { return w.changed }

// Node returns the Node as last seen, if it has been seen.
func (w *Watch) Node() (*corev1.Node, bool) {
	obj, ok, _ := w.inf.GetStore().GetByKey(w.name)
	node, isNode := obj.(*corev1.Node)
	return node, ok && isNode
}
