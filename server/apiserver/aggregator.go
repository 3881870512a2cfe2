package apiserver

import (
	"context"
	"fmt"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationhelper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
)

// aggregatorConfig is kube-aggregator's configuration: the core server's
// (authentication, authorization, admission, APF, the loopback client,
// the shared informers and aggregated-discovery manager), with its own
// storage codec for APIServices (on the shared etcd client), no post-start
// hooks of the core's, and no OpenAPI of its own (the OpenAPI configs stay
// for the type models of server-side apply; the core server serves
// /openapi/v2 and /v3 lazily for built-in, custom and APIService types,
// and aggregated servers' documents are not merged in: see
// prepareAggregator). The front-proxy client
// certificate is presented to aggregated servers, which are dialled at the
// address resolver gives.
func (s *Server) aggregatorConfig(gc genericapiserver.RecommendedConfig, etcdOpts *genericoptions.EtcdOptions, shared *sharedEtcd, resolver aggregatorapiserver.ServiceResolver) *aggregatorapiserver.Config {
	gc.PostStartHooks = map[string]genericapiserver.PostStartHookConfigEntry{}
	gc.SkipOpenAPIInstallation = true

	eo := *etcdOpts
	eo.StorageConfig.Codec = aggregatorscheme.Codecs.LegacyCodec(apiregistrationv1.SchemeGroupVersion, apiregistrationv1beta1.SchemeGroupVersion)
	eo.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(apiregistrationv1.SchemeGroupVersion, schema.GroupKind{Group: apiregistrationv1beta1.GroupName})
	eo.StorageConfig.StorageObjectCountTracker = gc.StorageObjectCountTracker
	eo.SkipHealthEndpoints = true
	gc.RESTOptionsGetter = sharedStorageGetter{
		inner:      eo.CreateRESTOptionsGetter(&genericoptions.SimpleStorageFactory{StorageConfig: eo.StorageConfig}, gc.ResourceTransformers),
		etcd:       shared,
		watchCache: eo.EnableWatchCache,
	}
	gc.MergedResourceConfig = aggregatorapiserver.DefaultAPIResourceConfigSource()
	return &aggregatorapiserver.Config{
		GenericConfig: &gc,
		ExtraConfig: aggregatorapiserver.ExtraConfig{
			ProxyClientCertFile: s.cfg.ProxyClientCertFile,
			ProxyClientKeyFile:  s.cfg.ProxyClientKeyFile,
			ServiceResolver:     resolver,
		},
	}
}

// newAggregator puts kube-aggregator in front of core (aggregator → core →
// apiextensions): it serves apiregistration.k8s.io APIServices, /apis and
// /apis/<group> from them, and proxies the group-versions of APIServices
// backed by a Service; the others go on to core. As kube-apiserver does,
// a local APIService is kept for every group-version core serves
// (autoregister) and for every CRD's served version (crdAPIServices), and
// the returned waiter is done once each of core's has been seen Available
// (kube-apiserver's autoregister-completion check).
func newAggregator(cfg *aggregatorapiserver.Config, core *genericapiserver.GenericAPIServer, crds apiextensionsinformers.CustomResourceDefinitionInformer) (*aggregatorapiserver.APIAggregator, *apiServiceWaiter, error) {
	agg, err := cfg.Complete().NewWithDelegate(core)
	if err != nil {
		return nil, nil, fmt.Errorf("create aggregator: %w", err)
	}
	client, err := apiregistrationclient.NewForConfig(cfg.GenericConfig.LoopbackClientConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("aggregator client: %w", err)
	}
	apiServices := agg.APIRegistrationInformers.Apiregistration().V1().APIServices()
	autoreg := autoregister.NewAutoRegisterController(apiServices, client)
	priorities := apiServicePriorities()
	var names []string
	for _, svc := range builtInAPIServices(core.ListedPaths(), priorities) {
		autoreg.AddAPIServiceToSyncOnStart(svc)
		names = append(names, svc.Name)
	}
	if m := cfg.GenericConfig.AggregatedDiscoveryGroupManager; m != nil {
		for gv, p := range priorities {
			m.SetGroupVersionPriority(metav1.GroupVersion(gv), int(p.group), int(p.version))
		}
	}
	crdReg := newCRDAPIServices(crds, autoreg)
	err = agg.GenericAPIServer.AddPostStartHook("kube-apiserver-autoregistration", func(hc genericapiserver.PostStartHookContext) error {
		go func() {
			// CRDs' APIServices are known before autoregister's first
			// pass, which would otherwise delete them.
			if !cache.WaitForCacheSync(hc.Done(), crds.Informer().HasSynced) {
				return
			}
			crdReg.sync()
			autoreg.Run(2, hc.Done())
		}()
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return agg, waitAvailable(apiServices.Informer(), names), nil
}

// prepareAggregator prepares the chain to run: the generic servers', not
// kube-aggregator's APIAggregator.PrepareRun, which would build the
// OpenAPI v2 and v3 documents of the whole chain at once and keep them
// (what lazyopenapi.go avoids) to merge aggregated servers' into them.
func prepareAggregator(agg *aggregatorapiserver.APIAggregator) interface {
	RunWithContext(ctx context.Context) error
} {
	return agg.GenericAPIServer.PrepareRun()
}

// builtInAPIServices are the local APIServices of the group-versions core
// (and apiextensions behind it) serve, from their listed paths.
func builtInAPIServices(paths []string, priorities map[schema.GroupVersion]apiServicePriority) []*apiregistrationv1.APIService {
	var out []*apiregistrationv1.APIService
	for _, p := range paths {
		var gv schema.GroupVersion
		switch parts := strings.Split(p, "/"); {
		case p == "/api/v1":
			gv = schema.GroupVersion{Version: "v1"}
		case len(parts) == 4 && parts[1] == "apis":
			gv = schema.GroupVersion{Group: parts[2], Version: parts[3]}
		default:
			continue
		}
		pr, ok := priorities[gv]
		if !ok {
			// A group upstream's table lacks: listed after the known ones.
			klog.InfoS("No APIService priority for a built-in group-version; using the default", "groupVersion", gv)
			pr = defaultPriority
		}
		out = append(out, &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
			Spec: apiregistrationv1.APIServiceSpec{
				Group:                gv.Group,
				Version:              gv.Version,
				GroupPriorityMinimum: pr.group,
				VersionPriority:      pr.version,
			},
		})
	}
	return out
}

// apiServiceWaiter is done once every APIService it waits for has been
// seen with condition Available=True. Safe for concurrent use.
type apiServiceWaiter struct {
	done chan struct{}

	mu      sync.Mutex
	pending sets.Set[string]
}

// waitAvailable waits for the APIServices names through informer.
func waitAvailable(informer cache.SharedIndexInformer, names []string) *apiServiceWaiter {
	w := &apiServiceWaiter{done: make(chan struct{}), pending: sets.New(names...)}
	if w.pending.Len() == 0 {
		close(w.done)
		return w
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.seen,
		UpdateFunc: func(_, obj any) { w.seen(obj) },
	})
	return w
}

func (w *apiServiceWaiter) seen(obj any) {
	svc, ok := obj.(*apiregistrationv1.APIService)
	if !ok || !apiregistrationhelper.IsAPIServiceConditionTrue(svc, apiregistrationv1.Available) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending.Has(svc.Name) {
		w.pending.Delete(svc.Name)
		if w.pending.Len() == 0 {
			close(w.done)
		}
	}
}

// Done is closed once every APIService has been seen Available.
func (w *apiServiceWaiter) Done() <-chan struct{} { return w.done }

// Pending lists those not seen Available yet.
func (w *apiServiceWaiter) Pending() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return sets.List(w.pending)
}

// crdAPIServices keeps a local APIService for every served version of
// every CRD (priority 1000/100, below the built-in groups), as
// kube-apiserver's crdregistration controller does, and hands them to the
// autoregister controller, which creates and deletes them.
type crdAPIServices struct {
	lister interface {
		List(labels.Selector) ([]*apiextensionsv1.CustomResourceDefinition, error)
	}
	reg autoregister.AutoAPIServiceRegistration

	mu    sync.Mutex
	known sets.Set[string]
}

func newCRDAPIServices(crds apiextensionsinformers.CustomResourceDefinitionInformer, reg autoregister.AutoAPIServiceRegistration) *crdAPIServices {
	c := &crdAPIServices{lister: crds.Lister(), reg: reg, known: sets.New[string]()}
	_, _ = crds.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.sync() },
		UpdateFunc: func(any, any) { c.sync() },
		DeleteFunc: func(any) { c.sync() },
	})
	return c
}

// sync registers the APIServices of the CRDs' served versions and
// withdraws those of versions no CRD serves any more. The autoregister
// controller writes only what differs from what is stored.
func (c *crdAPIServices) sync() {
	c.mu.Lock()
	defer c.mu.Unlock()
	crds, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	want := sets.New[string]()
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			name := v.Name + "." + crd.Spec.Group
			if want.Has(name) {
				continue
			}
			want.Insert(name)
			c.reg.AddAPIServiceToSync(&apiregistrationv1.APIService{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: apiregistrationv1.APIServiceSpec{
					Group:                crd.Spec.Group,
					Version:              v.Name,
					GroupPriorityMinimum: 1000,
					VersionPriority:      100,
				},
			})
		}
	}
	for name := range c.known.Difference(want) {
		c.reg.RemoveAPIServiceToSync(name)
	}
	c.known = want
}

// apiServicePriority orders a group among groups and a version within its group
// in discovery.
type apiServicePriority struct{ group, version int32 }

// defaultPriority is a built-in group-version's that upstream's table
// does not know.
var defaultPriority = apiServicePriority{group: 15000, version: 9}

// apiServicePriorities is kube-apiserver's table (the generic control
// plane's merged with kube-apiserver's own, v1.37).
func apiServicePriorities() map[schema.GroupVersion]apiServicePriority {
	gv := func(g, v string) schema.GroupVersion { return schema.GroupVersion{Group: g, Version: v} }
	return map[schema.GroupVersion]apiServicePriority{
		gv("", "v1"):                                   {18000, 1},
		gv("apps", "v1"):                               {17800, 15},
		gv("events.k8s.io", "v1"):                      {17750, 15},
		gv("events.k8s.io", "v1beta1"):                 {17750, 5},
		gv("authentication.k8s.io", "v1"):              {17700, 15},
		gv("authentication.k8s.io", "v1beta1"):         {17700, 9},
		gv("authentication.k8s.io", "v1alpha1"):        {17700, 1},
		gv("authorization.k8s.io", "v1"):               {17600, 15},
		gv("autoscaling", "v1"):                        {17500, 15},
		gv("autoscaling", "v2"):                        {17500, 30},
		gv("autoscaling", "v2beta1"):                   {17500, 9},
		gv("autoscaling", "v2beta2"):                   {17500, 1},
		gv("batch", "v1"):                              {17400, 15},
		gv("batch", "v1beta1"):                         {17400, 9},
		gv("batch", "v2alpha1"):                        {17400, 9},
		gv("certificates.k8s.io", "v1"):                {17300, 15},
		gv("certificates.k8s.io", "v1beta1"):           {17300, 9},
		gv("certificates.k8s.io", "v1alpha1"):          {17300, 1},
		gv("networking.k8s.io", "v1"):                  {17200, 15},
		gv("networking.k8s.io", "v1beta1"):             {17200, 9},
		gv("policy", "v1"):                             {17100, 15},
		gv("policy", "v1beta1"):                        {17100, 9},
		gv("rbac.authorization.k8s.io", "v1"):          {17000, 15},
		gv("storage.k8s.io", "v1"):                     {16800, 15},
		gv("storage.k8s.io", "v1beta1"):                {16800, 9},
		gv("storage.k8s.io", "v1alpha1"):               {16800, 1},
		gv("apiextensions.k8s.io", "v1"):               {16700, 15},
		gv("admissionregistration.k8s.io", "v1"):       {16700, 15},
		gv("admissionregistration.k8s.io", "v1beta1"):  {16700, 12},
		gv("admissionregistration.k8s.io", "v1alpha1"): {16700, 9},
		gv("scheduling.k8s.io", "v1"):                  {16600, 15},
		gv("scheduling.k8s.io", "v1beta1"):             {16600, 9},
		gv("scheduling.k8s.io", "v1alpha3"):            {16600, 3},
		gv("coordination.k8s.io", "v1"):                {16500, 15},
		gv("coordination.k8s.io", "v1beta1"):           {16500, 13},
		gv("coordination.k8s.io", "v1alpha2"):          {16500, 12},
		gv("node.k8s.io", "v1"):                        {16300, 15},
		gv("node.k8s.io", "v1alpha1"):                  {16300, 1},
		gv("node.k8s.io", "v1beta1"):                   {16300, 9},
		gv("discovery.k8s.io", "v1"):                   {16200, 15},
		gv("discovery.k8s.io", "v1beta1"):              {16200, 12},
		gv("resource.k8s.io", "v1"):                    {16200, 21},
		gv("resource.k8s.io", "v1beta2"):               {16200, 15},
		gv("resource.k8s.io", "v1beta1"):               {16200, 9},
		gv("resource.k8s.io", "v1alpha3"):              {16200, 1},
		gv("flowcontrol.apiserver.k8s.io", "v1"):       {16100, 21},
		gv("flowcontrol.apiserver.k8s.io", "v1beta3"):  {16100, 18},
		gv("flowcontrol.apiserver.k8s.io", "v1beta2"):  {16100, 15},
		gv("flowcontrol.apiserver.k8s.io", "v1beta1"):  {16100, 12},
		gv("flowcontrol.apiserver.k8s.io", "v1alpha1"): {16100, 9},
		gv("internal.apiserver.k8s.io", "v1alpha1"):    {16000, 9},
		gv("storagemigration.k8s.io", "v1"):            {15800, 15},
		gv("storagemigration.k8s.io", "v1beta1"):       {15800, 9},
		gv("lifecycle.k8s.io", "v1alpha1"):             {15700, 1},
		// k1s's built-in metrics API: metrics-server's APIService's.
		gv("metrics.k8s.io", "v1beta1"): {100, 100},
	}
}
