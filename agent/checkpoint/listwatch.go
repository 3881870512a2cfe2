package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// kindInfo says how the objects of a listed kind are decoded and trimmed.
type kindInfo struct {
	newObj  func() runtime.Object
	newList func() runtime.Object
}

var listedKinds = map[string]kindInfo{
	Pods:           {func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} }},
	Services:       {func() runtime.Object { return &corev1.Service{} }, func() runtime.Object { return &corev1.ServiceList{} }},
	EndpointSlices: {func() runtime.Object { return &discoveryv1.EndpointSlice{} }, func() runtime.Object { return &discoveryv1.EndpointSliceList{} }},
	Nodes:          {func() runtime.Object { return &corev1.Node{} }, func() runtime.Object { return &corev1.NodeList{} }},
}

// Trim returns a copy of obj without what changes on writes the agent does
// not act on: managedFields and resourceVersion always; a pod's status
// but for its phase, start time and QoS class; a Node's conditions
// (heartbeat times) and image list.
func Trim(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		m.SetResourceVersion("")
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Status = corev1.PodStatus{Phase: o.Status.Phase, StartTime: o.Status.StartTime, QOSClass: o.Status.QOSClass}
	case *corev1.Node:
		o.Status.Conditions, o.Status.Images = nil, nil
	}
	return obj
}

// firstListTimeout bounds an informer's first list while the checkpoint
// can answer it: a node starting cut off starts its pods without waiting
// for a connection that will not come. Once one list found the
// apiservers unreachable, the other kinds wait less.
const (
	firstListTimeout        = 3 * time.Second
	firstListTimeoutOffline = 500 * time.Millisecond
)

// fallbackWatchPeriod is how long the watch that follows a list answered
// from the checkpoint lasts: it then ends as expired, and the reflector
// lists again (with its back-off), trying the apiservers.
// localRefreshPeriod is how often, meanwhile, the EndpointSlices of the
// node's own pods are brought up to date with their addresses.
var (
	fallbackWatchPeriod = 15 * time.Second
	localRefreshPeriod  = 2 * time.Second
)

// Unreachable reports whether err says the apiservers could not be
// reached or could not answer (as opposed to an answer refusing the
// request): the case where the checkpoint stands in for them.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true
	}
	return apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsInternalError(err)
}

// ListWatch wraps lw, an informer's lister-watcher for kind (Pods,
// Services, EndpointSlices or Nodes), with the checkpoint: see the
// package documentation. changed, when set, runs after the kind's
// checkpoint changed (the pods': to prune what no pod references).
func (s *Store) ListWatch(kind string, lw cache.ListerWatcher, changed func()) (cache.ListerWatcher, error) {
	info, ok := listedKinds[kind]
	if !ok {
		return nil, fmt.Errorf("checkpoint: %q is not a listed kind", kind)
	}
	return &listWatch{store: s, kind: kind, info: info, inner: cache.ToListerWatcherWithContext(lw), changed: changed}, nil
}

type listWatch struct {
	store   *Store
	kind    string
	info    kindInfo
	inner   cache.ListerWatcherWithContext
	changed func()

	mu       sync.Mutex
	listed   bool // a list was tried
	fallback bool // the last list came from the checkpoint
	// served is what the last list from the checkpoint gave, by
	// namespace/name (what the fallback watch compares with).
	served map[string]runtime.Object
}

// IsWatchListSemanticsUnSupported keeps the reflector on list and watch:
// the checkpoint is replaced on each list.
func (l *listWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (l *listWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.TODO(), opts)
}

func (l *listWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.TODO(), opts)
}

func (l *listWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	logger := klog.FromContext(ctx).WithValues("kind", l.kind)
	canServe := l.store.Listed(l.kind)
	l.mu.Lock()
	first := !l.listed
	l.listed = true
	l.mu.Unlock()
	lctx := ctx
	if first && canServe {
		timeout := firstListTimeout
		if l.store.offline.Load() {
			timeout = firstListTimeoutOffline
		}
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	obj, err := l.inner.ListWithContext(lctx, opts)
	if err == nil {
		l.store.offline.Store(false)
		l.mu.Lock()
		was := l.fallback
		l.fallback = false
		l.mu.Unlock()
		if was {
			logger.Info("Apiserver reachable again: checkpoint replaced by its list")
		}
		// A list in pages (over 500 objects) is kept object by object,
		// without pruning.
		complete := opts.Continue == ""
		if lm, err := meta.ListAccessor(obj); err == nil && lm.GetContinue() != "" {
			complete = false
		}
		l.replace(ctx, obj, complete)
		return obj, nil
	}
	if ctx.Err() != nil || !canServe || !Unreachable(err) {
		return nil, err
	}
	l.store.offline.Store(true)
	list, lerr := l.fromCheckpoint()
	if lerr != nil {
		return nil, errors.Join(err, lerr)
	}
	served := map[string]runtime.Object{}
	items, _ := meta.ExtractList(list)
	for _, it := range items {
		if m, err := meta.Accessor(it); err == nil {
			served[m.GetNamespace()+"/"+m.GetName()] = it
		}
	}
	l.mu.Lock()
	was := l.fallback
	l.fallback, l.served = true, served
	l.mu.Unlock()
	if !was {
		n := meta.LenList(list)
		logger.Info("Apiservers unreachable: serving the last state kept in the node's checkpoint", "objects", n, "err", err)
	}
	return list, nil
}

// replace makes the list's items the kind's checkpoint (complete: the
// whole of it; otherwise they are added).
func (l *listWatch) replace(ctx context.Context, list runtime.Object, complete bool) {
	items, lerr := meta.ExtractList(list)
	if lerr != nil {
		err := lerr
		klog.FromContext(ctx).Error(err, "Cannot keep the list in the checkpoint", "kind", l.kind)
		return
	}
	objs := make([]Object, 0, len(items))
	for _, it := range items {
		m, err := meta.Accessor(it)
		if err != nil {
			continue
		}
		objs = append(objs, Object{Namespace: m.GetNamespace(), Name: m.GetName(), Value: Trim(it)})
	}
	var err error
	if complete {
		err = l.store.Replace(l.kind, objs)
	} else {
		for _, o := range objs {
			if _, perr := l.store.Put(l.kind, o.Namespace, o.Name, o.Value); perr != nil {
				err = perr
			}
		}
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot keep all of the list in the checkpoint", "kind", l.kind)
	}
	if l.changed != nil {
		l.changed()
	}
}

// fromCheckpoint builds a list of the kind's kept objects (EndpointSlices
// with the node's own pods' current addresses).
func (l *listWatch) fromCheckpoint() (runtime.Object, error) {
	objs, err := l.keptObjects()
	if err != nil {
		return nil, err
	}
	list := l.info.newList()
	if err := meta.SetList(list, objs); err != nil {
		return nil, err
	}
	return list, nil
}

func (l *listWatch) keptObjects() ([]runtime.Object, error) {
	raw, err := l.store.List(l.kind)
	if err != nil {
		return nil, err
	}
	objs := make([]runtime.Object, 0, len(raw))
	for _, data := range raw {
		obj := l.info.newObj()
		if err := json.Unmarshal(data, obj); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", l.kind, err)
		}
		if es, ok := obj.(*discoveryv1.EndpointSlice); ok {
			obj = l.store.withLocalPods(es)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

func (l *listWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	l.mu.Lock()
	fallback := l.fallback
	l.mu.Unlock()
	if fallback {
		return l.fallbackWatch(ctx), nil
	}
	w, err := l.inner.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		l.record(logger, ev)
		return ev, true
	}), nil
}

// record keeps one watch event in the checkpoint.
func (l *listWatch) record(logger klog.Logger, ev watch.Event) {
	if ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
		return
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return
	}
	if ev.Type == watch.Deleted {
		err = l.store.Delete(l.kind, m.GetNamespace(), m.GetName())
		if err == nil && l.changed != nil {
			l.changed()
		}
	} else {
		var written bool
		written, err = l.store.Put(l.kind, m.GetNamespace(), m.GetName(), Trim(ev.Object))
		if written && l.kind != Pods && l.changed != nil {
			l.changed()
		}
	}
	if err != nil {
		logger.Error(err, "Cannot keep the change in the checkpoint", "kind", l.kind, "object", klog.KRef(m.GetNamespace(), m.GetName()))
	}
}

// fallbackWatcher is the watch that follows a list from the checkpoint.
type fallbackWatcher struct {
	ch   chan watch.Event
	stop chan struct{}
	once sync.Once
}

func (w *fallbackWatcher) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *fallbackWatcher) ResultChan() <-chan watch.Event { return w.ch }

// fallbackWatch stands for the watch while the apiservers are away: for
// EndpointSlices it sends the changes of the node's own pods' addresses
// (a pod restarted while cut off has a new one, which the endpoint
// controller cannot record); after fallbackWatchPeriod it ends as
// expired, so that the reflector lists again.
func (l *listWatch) fallbackWatch(ctx context.Context) watch.Interface {
	w := &fallbackWatcher{ch: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.ch)
		send := func(ev watch.Event) bool {
			select {
			case w.ch <- ev:
				return true
			case <-w.stop:
			case <-ctx.Done():
			}
			return false
		}
		end := time.NewTimer(fallbackWatchPeriod)
		defer end.Stop()
		tick := time.NewTicker(localRefreshPeriod)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			case <-end.C:
				send(watch.Event{Type: watch.Error, Object: &metav1.Status{
					Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
					Message: "served from the node's checkpoint: list again",
				}})
				return
			case <-tick.C:
				if l.kind != EndpointSlices {
					continue
				}
				for _, ev := range l.localChanges() {
					if !send(ev) {
						return
					}
				}
			}
		}
	}()
	return w
}

// localChanges compares the kept EndpointSlices, with the node's pods'
// current addresses, with what was served, and records what it returns.
func (l *listWatch) localChanges() []watch.Event {
	objs, err := l.keptObjects()
	if err != nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var evs []watch.Event
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		key := m.GetNamespace() + "/" + m.GetName()
		old, ok := l.served[key]
		if ok && apiequality.Semantic.DeepEqual(old, obj) {
			continue
		}
		l.served[key] = obj
		typ := watch.Modified
		if !ok {
			typ = watch.Added
		}
		evs = append(evs, watch.Event{Type: typ, Object: obj})
	}
	return evs
}

// LocalPodFunc says what the node knows of one of its own pods by UID: its
// address and readiness; ok is false for pods it does not run.
type LocalPodFunc func(uid types.UID) (ip string, ready, ok bool)

// SetLocalPods gives the store the node's view of its pods: EndpointSlices
// served from the checkpoint name the node's pods at their current
// addresses, with their current readiness.
func (s *Store) SetLocalPods(f LocalPodFunc) { s.localPods.Store(&f) }

// withLocalPods returns es with the endpoints of the node's own pods at
// their current address and readiness (es itself when nothing differs).
func (s *Store) withLocalPods(es *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	f := s.localPods.Load()
	if f == nil {
		return es
	}
	var out *discoveryv1.EndpointSlice
	for i, ep := range es.Endpoints {
		if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID == "" {
			continue
		}
		ip, ready, ok := (*f)(ep.TargetRef.UID)
		parsed := net.ParseIP(ip)
		if !ok || parsed == nil || (parsed.To4() != nil) != (es.AddressType == discoveryv1.AddressTypeIPv4) {
			continue
		}
		if len(ep.Addresses) == 1 && ep.Addresses[0] == ip && ep.Conditions.Ready != nil && *ep.Conditions.Ready == ready {
			continue
		}
		if out == nil {
			out = es.DeepCopy()
		}
		notTerminating := false
		out.Endpoints[i].Addresses = []string{ip}
		out.Endpoints[i].Conditions = discoveryv1.EndpointConditions{Ready: &ready, Serving: &ready, Terminating: &notTerminating}
	}
	if out == nil {
		return es
	}
	return out
}
