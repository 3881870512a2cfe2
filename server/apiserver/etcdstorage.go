package apiserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	etcdkube "go.etcd.io/etcd/client/v3/kubernetes"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	genericfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/embed/etcd"
)

// The etcd client's dial settings, kube-apiserver's.
const (
	etcdDialTimeout      = 20 * time.Second
	etcdKeepAliveTime    = 30 * time.Second
	etcdKeepAliveTimeout = 10 * time.Second
)

// sharedEtcd gives the storage of every built-in resource, and k1s's own
// keys (service IP and node-port allocations), one etcd client.
// k8s.io/apiserver's storage factory dials etcd once per resource: some 45
// gRPC connections here, each with a handful of goroutines and its buffers
// on both ends (in one process, with the embedded etcd, both ends are
// ours). One connection carries all of them; watches share one gRPC
// stream, which the etcd client demultiplexes with a buffer per watch.
//
// With the embedded etcd, local gives a client that calls the member
// directly, without TLS, gRPC or protobuf in between.
type sharedEtcd struct {
	transport storagebackend.TransportConfig
	local     func() (*clientv3.Client, error)

	mu        sync.Mutex
	refs      int
	client    *etcdkube.Client
	compactor interface {
		etcd3.Compactor
		Stop()
	}
}

// acquire returns the shared client and compactor, dialling on first use.
func (s *sharedEtcd) acquire(compactionInterval time.Duration) (*etcdkube.Client, etcd3.Compactor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		var c *etcdkube.Client
		var err error
		if s.local != nil {
			c, err = newLocalEtcdClient(s.local)
		} else {
			c, err = newStorageEtcdClient(s.transport)
		}
		if err != nil {
			return nil, nil, err
		}
		s.client = c
		// One compactor per etcd endpoint in the process, as the storage
		// factory keeps it.
		s.compactor = etcd3.StartCompactorPerEndpoint(c.Client, compactionInterval)
	}
	s.refs++
	return s.client, s.compactor, nil
}

// release drops one storage's reference; the last one closes the client.
func (s *sharedEtcd) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs--
	if s.refs > 0 || s.client == nil {
		return
	}
	s.compactor.Stop()
	_ = s.client.Close()
	s.client, s.compactor = nil, nil
}

func newStorageEtcdClient(t storagebackend.TransportConfig) (*etcdkube.Client, error) {
	var tlsInfo *transport.TLSInfo
	if t.CertFile != "" || t.KeyFile != "" || t.TrustedCAFile != "" {
		tlsInfo = &transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}
	}
	logger, err := etcd.NewLogger(zap.ErrorLevel)
	if err != nil {
		return nil, err
	}
	cfg := clientv3.Config{
		Endpoints:            t.ServerList,
		DialTimeout:          etcdDialTimeout,
		DialKeepAliveTime:    etcdKeepAliveTime,
		DialKeepAliveTimeout: etcdKeepAliveTimeout,
		Logger:               logger.Named("etcd-client"),
	}
	if tlsInfo != nil {
		if cfg.TLS, err = tlsInfo.ClientConfig(); err != nil {
			return nil, fmt.Errorf("etcd client TLS: %w", err)
		}
	}
	c, err := etcdkube.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", t.ServerList, err)
	}
	c.KV = etcd3.NewETCDLatencyTracker(c.KV)
	return c, nil
}

// localEndpoint names the in-process etcd member where the storage layer
// wants endpoint names.
const localEndpoint = "in-process"

func newLocalEtcdClient(local func() (*clientv3.Client, error)) (*etcdkube.Client, error) {
	inner, err := local()
	if err != nil {
		return nil, fmt.Errorf("in-process etcd client: %w", err)
	}
	c := &etcdkube.Client{Client: inner}
	c.Kubernetes = c
	c.KV = etcd3.NewETCDLatencyTracker(c.KV)
	// The storage layer learns whether etcd can report watch progress
	// (which lets consistent lists be served from the watch cache) by
	// asking each of the client's endpoints for its version. An
	// in-process client has no endpoints, so it would never ask and
	// every consistent list would go to etcd: ask the member here.
	etcdfeature.DefaultFeatureSupportChecker.CheckClient(inner.Ctx(), localStatus{inner}, storage.RequestWatchProgress)
	return c, nil
}

// localStatus is the in-process client as the feature checker sees it:
// one endpoint, whose status the member reports directly.
type localStatus struct{ c *clientv3.Client }

func (l localStatus) Endpoints() []string { return []string{localEndpoint} }

func (l localStatus) Status(ctx context.Context, _ string) (*clientv3.StatusResponse, error) {
	return l.c.Status(ctx, localEndpoint)
}

// rawStorage is factory.Create on the shared client.
func (s *sharedEtcd) rawStorage(c *storagebackend.ConfigForResource, newFunc, newListFunc func() runtime.Object, resourcePrefix string) (storage.Interface, factory.DestroyFunc, error) {
	client, compactor, err := s.acquire(c.CompactionInterval)
	if err != nil {
		return nil, nil, err
	}
	transformer := c.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	versioner := storage.APIObjectVersioner{}
	decoder := etcd3.NewDefaultDecoder(c.Codec, versioner)
	if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.AllowUnsafeMalformedObjectDeletion) {
		transformer = etcd3.WithCorruptObjErrorHandlingTransformer(transformer)
		decoder = etcd3.WithCorruptObjErrorHandlingDecoder(decoder)
	}
	st, err := etcd3.New(client, compactor, c.Codec, newFunc, newListFunc, c.Prefix, resourcePrefix, c.GroupResource, transformer, c.LeaseManagerConfig, decoder, versioner)
	if err != nil {
		s.release()
		return nil, nil, fmt.Errorf("storage for %s: %w", c.GroupResource, err)
	}
	var out storage.Interface = st
	if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.AllowUnsafeMalformedObjectDeletion) {
		out = etcd3.NewStoreWithUnsafeCorruptObjectDeletion(out, c.GroupResource)
	}
	// Destroy functions are called more than once (subresources share
	// their resource's storage).
	var once sync.Once
	return out, func() {
		once.Do(func() {
			st.Close()
			s.release()
		})
	}, nil
}

// undecorated is generic.UndecoratedStorage on the shared client.
func (s *sharedEtcd) undecorated(c *storagebackend.ConfigForResource, resourcePrefix string, _ func(runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object, _ storage.AttrFunc, _ storage.IndexerFuncs, _ *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
	return s.rawStorage(c, newFunc, newListFunc, resourcePrefix)
}

// withCacher is the registry's StorageWithCacher on the shared client: the
// watch cache in front of the etcd storage.
func (s *sharedEtcd) withCacher(c *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object, attrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
	raw, destroyRaw, err := s.rawStorage(c, newFunc, newListFunc, resourcePrefix)
	if err != nil {
		return nil, nil, err
	}
	// Read before the cache lists: every revision up to here is older
	// than the cache's window.
	floor := currentRevision(raw, c.GroupResource)
	ch, err := cacher.NewCacherFromConfig(cacher.Config{
		Storage:             raw,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       c.GroupResource,
		EventsHistoryWindow: c.EventsHistoryWindow,
		ResourcePrefix:      resourcePrefix,
		KeyFunc:             keyFunc,
		NewFunc:             newFunc,
		NewListFunc:         newListFunc,
		GetAttrsFunc:        attrs,
		IndexerFuncs:        triggers,
		Indexers:            indexers,
		Codec:               c.Codec,
	})
	if err != nil {
		destroyRaw()
		return nil, nil, fmt.Errorf("watch cache for %s: %w", c.GroupResource, err)
	}
	delegator := cacher.NewCacheDelegator(ch, raw)
	var once sync.Once
	return &resumingStorage{Interface: delegator, raw: raw, floor: floor}, func() {
		once.Do(func() {
			delegator.Stop()
			ch.Stop()
			destroyRaw()
		})
	}, nil
}

// sharedStorageGetter hands out the REST options of inner with storage on
// one shared etcd client.
type sharedStorageGetter struct {
	inner      generic.RESTOptionsGetter
	etcd       *sharedEtcd
	watchCache bool
}

func (g sharedStorageGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.inner.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	if g.watchCache {
		opts.Decorator = g.etcd.withCacher
	} else {
		opts.Decorator = g.etcd.undecorated
	}
	return opts, nil
}

// resumingStorage is the watch cache in front of etcd, except for a watch
// that resumes from a resourceVersion the cache never held: one its
// process saw before a restart. The cache starts from a list at etcd's
// current revision and answers such a watch "410 Gone", so every client
// would relist after each restart of the server; etcd still has the
// revisions since (until its compaction, every 5 minutes), so the watch is
// served from etcd's history instead and the client misses nothing. The
// watch ends at the client's watch timeout; the client's next watch, at a
// newer resourceVersion, is the cache's.
type resumingStorage struct {
	storage.Interface                   // the cache delegator
	raw               storage.Interface // etcd
	floor             uint64            // etcd's revision before the cache's first list
}

func (r *resumingStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents == nil && opts.ResourceVersion != "" {
		if rv, err := (storage.APIObjectVersioner{}).ParseResourceVersion(opts.ResourceVersion); err == nil && rv > 0 && rv <= r.floor {
			return r.raw.Watch(ctx, key, opts)
		}
	}
	return r.Interface.Watch(ctx, key, opts)
}

// currentRevision is etcd's current revision, or 0 (no watch resumes from
// etcd) when etcd does not answer within its dial timeout.
func currentRevision(raw storage.Interface, gr schema.GroupResource) uint64 {
	ctx, cancel := context.WithTimeout(context.TODO(), etcdDialTimeout)
	defer cancel()
	rv, err := raw.GetCurrentResourceVersion(ctx)
	if err != nil {
		klog.ErrorS(err, "Watches older than the watch cache will get 410 Gone", "resource", gr)
		return 0
	}
	return rv
}
