package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
	discoveryaggregated "k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"

	"github.com/k1s/k1s/internal/tunnel"
	"github.com/k1s/k1s/server/apiserver/openapi"
	"github.com/k1s/k1s/server/registry/core/service"
	"github.com/k1s/k1s/server/scheme"
)

// Server is the k1s API server.
type Server struct {
	cfg     Config
	ready   chan struct{}
	settled chan struct{}
}

// New validates cfg and returns a server. It starts nothing.
func New(cfg Config) (*Server, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, ready: make(chan struct{}), settled: make(chan struct{})}, nil
}

// Ready is closed once the server serves requests and its bootstrap objects
// (system namespaces, default RBAC, the kubernetes service) exist.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Settled is closed once the work start-up puts off until after Ready is
// done: the admission plugins' first read of the OpenAPI v3 index, one
// poll period after Ready. It is never closed when no plugin reads the
// index.
func (s *Server) Settled() <-chan struct{} { return s.settled }

// Run serves until ctx is cancelled, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("apiserver")
	ctx = klog.NewContext(ctx, logger)

	// One etcd client for every resource's storage and for k1s's own keys.
	shared := &sharedEtcd{transport: s.etcdTransport(), local: s.cfg.EtcdLocalClient}
	gc, etcdOpts, err := s.genericConfig(shared)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(gc.LoopbackClientConfig)
	if err != nil {
		return fmt.Errorf("loopback client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	gc.SharedInformerFactory = factory
	gc.ClientConfig = gc.LoopbackClientConfig

	etcdClient, _, err := shared.acquire(storagebackend.DefaultCompactInterval)
	if err != nil {
		return err
	}
	defer shared.release()
	deps := &dependencies{cfg: &s.cfg, client: client, informers: factory, logger: logger, ready: s.ready, openAPIRead: s.settled,
		tunnels:        tunnel.NewRegistry(),
		endpointLeases: newEtcdLeases(etcdClient.Client, s.cfg.EtcdPrefix),
		serviceAllocators: &service.Allocators{
			IPs:   service.NewIPAllocator(etcdClient.Client, s.cfg.EtcdPrefix+"/k1s/serviceips/", s.cfg.ServiceCIDR),
			Ports: service.NewPortAllocator(etcdClient.Client, s.cfg.EtcdPrefix+"/k1s/nodeports/", s.cfg.NodePortRange),
		}}
	if err := deps.applyAuth(gc); err != nil {
		return err
	}
	if err := deps.applyAdmission(gc); err != nil {
		return err
	}
	deps.applyFlowControl(gc)

	// CRDs: apiextensions-apiserver shares the config and sits behind the
	// core server in the delegation chain.
	extConfig, err := s.apiextensionsConfig(*gc, etcdOpts, factory)
	if err != nil {
		return err
	}
	extServer, err := extConfig.Complete().New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return fmt.Errorf("create apiextensions server: %w", err)
	}
	// APIServices: kube-aggregator shares the config too and sits in
	// front of the core server; aggregated APIs are dialled at their
	// Service's cluster IP, as webhooks are.
	aggConfig := s.aggregatorConfig(*gc, etcdOpts, shared, clusterIPResolver{services: factory.Core().V1().Services().Lister()})

	core, err := gc.Complete().New("k1s-apiserver", extServer.GenericAPIServer)
	if err != nil {
		return fmt.Errorf("create apiserver: %w", err)
	}
	// Once the requests that are not long-running have drained, the
	// connections still open — remote agents' and kubectl's watches and
	// streams — are given shutdownTimeout, not the request timeout (60 s)
	// upstream waits: a stopping k1s is done within its components' 15 s,
	// and clients reconnect to the next start.
	core.ShutdownTimeout = shutdownTimeout
	extServer.GenericAPIServer.ShutdownTimeout = shutdownTimeout
	if err := deps.installAPIs(core, gc.RESTOptionsGetter); err != nil {
		return err
	}
	if s.cfg.MetricsAPI {
		if err := deps.installMetricsAPI(core); err != nil {
			return fmt.Errorf("metrics API: %w", err)
		}
	}
	oidc, err := newOIDCDocs(s.cfg.ServiceAccountIssuer, defaultJWKSURI(s.cfg.AdvertiseAddress, s.cfg.SecurePort), deps.saKey.Public())
	if err != nil {
		return fmt.Errorf("service-account issuer discovery: %w", err)
	}
	oidc.install(core.Handler.NonGoRestfulMux)
	caBundle, err := os.ReadFile(s.cfg.ServerCAFile)
	if err != nil {
		return fmt.Errorf("read the server CA: %w", err)
	}
	// Nodes' tunnels (internal/tunnel): the agent API of a node the
	// server cannot dial is reached through the connection it opened.
	core.Handler.NonGoRestfulMux.Handle(tunnel.Path, deps.tunnels)
	defer deps.tunnels.Close()
	core.Handler.NonGoRestfulMux.Handle(CACertsPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-pem-file")
		_, _ = w.Write(caBundle)
	}))
	failed := make(chan error, 1)
	deps.addHooks(core, s.ready, failed)
	// After the core's hooks are added: the aggregator takes them over.
	agg, apiServices, err := newAggregator(aggConfig, core, extServer.Informers.Apiextensions().V1().CustomResourceDefinitions())
	if err != nil {
		return err
	}
	agg.GenericAPIServer.ShutdownTimeout = shutdownTimeout
	deps.apiServices = apiServices

	// /openapi/v2 and /openapi/v3 describe built-in, APIService and custom
	// types; the CRD OpenAPI controllers publish into the core server's
	// services.
	if err := installOpenAPI(core, extServer.GenericAPIServer, agg.GenericAPIServer, gc.OpenAPIConfig, gc.OpenAPIV3Config); err != nil {
		return err
	}
	prepared := prepareAggregator(agg)

	logger.Info("Starting apiserver", "address", fmt.Sprintf("%s:%d", s.cfg.BindAddress, s.cfg.SecurePort))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	if s.cfg.InProcess != nil {
		s.cfg.InProcess.Serve(agg.GenericAPIServer.Handler)
		defer s.cfg.InProcess.Stop()
	}
	go func() { done <- prepared.RunWithContext(runCtx) }()
	var failure error
	select {
	case err := <-done:
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("apiserver: %w", err)
		}
		return nil
	case failure = <-failed:
	}
	cancel()
	<-done
	return failure
}

// withPublicHandlers serves the paths of handlers itself and hands every
// other request to next.
func withPublicHandlers(next http.Handler, handlers map[string]http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := handlers[r.URL.Path]; ok {
			h.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// shutdownTimeout bounds the wait for open connections at shutdown.
const shutdownTimeout = 2 * time.Second

// watchTerminationGrace bounds the wait for open watches to end at
// shutdown; they are ended at upstream's floor rate of 200 a second, so
// 200 watches take this second.
const watchTerminationGrace = time.Second

// specialPrefixes keeps upstream's etcd key layout, so etcd tooling written
// for Kubernetes finds objects where it expects them.
var specialPrefixes = map[schema.GroupResource]string{
	{Group: "", Resource: "replicationcontrollers"}:     "controllers",
	{Group: "", Resource: "endpoints"}:                  "services/endpoints",
	{Group: "", Resource: "nodes"}:                      "minions",
	{Group: "", Resource: "services"}:                   "services/specs",
	{Group: "networking.k8s.io", Resource: "ingresses"}: "ingress",
}

// etcdTransport is how the apiserver reaches the datastore.
func (s *Server) etcdTransport() storagebackend.TransportConfig {
	return storagebackend.TransportConfig{
		ServerList:    s.cfg.EtcdServers,
		CertFile:      s.cfg.EtcdCertFile,
		KeyFile:       s.cfg.EtcdKeyFile,
		TrustedCAFile: s.cfg.EtcdCAFile,
	}
}

func (s *Server) genericConfig(shared *sharedEtcd) (*genericapiserver.RecommendedConfig, *genericoptions.EtcdOptions, error) {
	gc := genericapiserver.NewRecommendedConfig(scheme.Codecs)
	gc.RequestTimeout = 60 * time.Second
	gc.FeatureGate = utilfeature.DefaultFeatureGate
	// One aggregated-discovery manager for the core and CRD servers, so
	// /apis lists built-in and custom groups together.
	gc.AggregatedDiscoveryGroupManager = discoveryaggregated.NewResourceManager("apis")
	gc.EffectiveVersion = utilcompatibility.DefaultBuildEffectiveVersion()

	namer := openapinamer.NewDefinitionNamer(scheme.Scheme, apiextensionsapiserver.Scheme, aggregatorscheme.Scheme)
	gc.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	gc.OpenAPIConfig.Info.Title = "Kubernetes"
	gc.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	gc.OpenAPIV3Config.Info.Title = "Kubernetes"
	gc.OpenAPIConfig.Info.Version = gc.EffectiveVersion.Info().GitVersion
	gc.OpenAPIV3Config.Info.Version = gc.EffectiveVersion.Info().GitVersion
	// Served lazily by installOpenAPI instead.
	gc.SkipOpenAPIInstallation = true
	if len(s.cfg.PublicHandlers) > 0 {
		// In front of the filters (authentication would take the
		// Authorization header away): each handler checks its caller.
		gc.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
			return withPublicHandlers(genericapiserver.DefaultBuildHandlerChain(h, c), s.cfg.PublicHandlers)
		}
	}

	// Serving.
	serving := genericoptions.NewSecureServingOptions()
	serving.BindAddress = s.cfg.BindAddress
	serving.BindPort = s.cfg.SecurePort
	serving.ServerCert.CertKey.CertFile = s.cfg.ServingCertFile
	serving.ServerCert.CertKey.KeyFile = s.cfg.ServingKeyFile
	var err error
	if s.cfg.InProcess != nil {
		// The loopback clients call the handler in process (below): no
		// TLS between them, so none of the self-signed loopback serving
		// certificate kube-apiserver makes at every start (an RSA key,
		// ~0.1–0.2 s of CPU on the way to serving). They authenticate
		// with a random bearer token as there.
		if err = serving.ApplyTo(&gc.SecureServing); err == nil {
			gc.LoopbackClientConfig = &rest.Config{
				Host:        "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.cfg.SecurePort)),
				BearerToken: string(uuid.NewUUID()),
			}
		}
	} else {
		err = serving.WithLoopback().ApplyTo(&gc.SecureServing, &gc.LoopbackClientConfig)
	}
	if err != nil {
		if strings.Contains(err.Error(), "address already in use") {
			return nil, nil, fmt.Errorf("--https-listen-port: port %d is in use by another process: %w", s.cfg.SecurePort, err)
		}
		return nil, nil, fmt.Errorf("serve HTTPS on %s:%d: %w", s.cfg.BindAddress, s.cfg.SecurePort, err)
	}
	gc.LoopbackClientConfig.QPS = 200
	gc.LoopbackClientConfig.Burst = 400
	gc.LoopbackClientConfig.ContentType = runtime.ContentTypeProtobuf
	// Loopback: gzip would cost CPU on both ends and a compressor's
	// buffers (~1 MB) per watch.
	gc.LoopbackClientConfig.DisableCompression = true
	if s.cfg.InProcess != nil {
		// The apiserver's own clients (its informers, the bootstrap
		// hooks) call its handler directly, with the same loopback token.
		lc, err := s.cfg.InProcess.ClientConfig(gc.LoopbackClientConfig)
		if err != nil {
			return nil, nil, err
		}
		gc.LoopbackClientConfig = lc
	}
	gc.PublicAddress = s.cfg.AdvertiseAddress
	gc.ExternalAddress = fmt.Sprintf("%s:%d", s.cfg.AdvertiseAddress, s.cfg.SecurePort)
	gc.LongRunningFunc = longRunning
	gc.ShutdownDelayDuration = 0
	// Watches are tracked and ended at once when shutdown starts (upstream's
	// --shutdown-watch-termination-grace-period, off by default there):
	// otherwise every open watch holds the HTTP server's shutdown to its
	// ShutdownTimeout. Clients resume from their last resourceVersion at
	// the next start (resumingStorage, etcdstorage.go).
	gc.ShutdownWatchTerminationGracePeriod = watchTerminationGrace

	// Storage.
	sc := storagebackend.NewDefaultConfig(s.cfg.EtcdPrefix, nil)
	sc.Transport = s.etcdTransport()
	etcdOpts := genericoptions.NewEtcdOptions(sc)
	etcdOpts.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	etcdOpts.EnableWatchCache = !s.cfg.DisableWatchCache
	etcdOpts.EnableGarbageCollection = true
	etcdOpts.DeleteCollectionWorkers = 1
	etcdOpts.EncryptionProviderConfigFilepath = s.cfg.EncryptionProviderConfigFile
	etcdOpts.EncryptionProviderConfigAutomaticReload = s.cfg.EncryptionProviderConfigAutomaticReload && s.cfg.EncryptionProviderConfigFile != ""

	resourceConfig := serverstorage.NewResourceConfig()
	resourceConfig.EnableVersions(scheme.GroupVersions...)
	gc.MergedResourceConfig = resourceConfig
	encoding := serverstorage.NewDefaultResourceEncodingConfigForEffectiveVersion(scheme.Scheme, gc.EffectiveVersion)
	coreEvents := schema.GroupResource{Resource: "events"}
	encoding.SetResourceEncoding(coreEvents, schema.GroupVersion{Version: "v1"}, schema.GroupVersion{Version: runtime.APIVersionInternal})
	sf := serverstorage.NewDefaultStorageFactory(*sc, runtime.ContentTypeProtobuf, scheme.Codecs, encoding, resourceConfig, specialPrefixes)
	// core/v1 and events.k8s.io/v1 Events are one set of objects, stored as core/v1.
	sf.AddCohabitatingResources(coreEvents, schema.GroupResource{Group: "events.k8s.io", Resource: "events"})
	if err := etcdOpts.ApplyWithStorageFactoryTo(sf, &gc.Config); err != nil {
		if s.cfg.EncryptionProviderConfigFile != "" {
			return nil, nil, fmt.Errorf("configure etcd storage (--encryption-provider-config %s): %w", s.cfg.EncryptionProviderConfigFile, err)
		}
		return nil, nil, fmt.Errorf("configure etcd storage: %w", err)
	}
	if err := s.cfg.Audit.applyAudit(&gc.Config); err != nil {
		return nil, nil, err
	}
	gc.RESTOptionsGetter = sharedStorageGetter{
		inner:      gc.RESTOptionsGetter,
		etcd:       shared,
		watchCache: etcdOpts.EnableWatchCache,
	}
	return gc, etcdOpts, nil
}

func (s *Server) apiextensionsConfig(gc genericapiserver.RecommendedConfig, etcdOpts *genericoptions.EtcdOptions, factory informers.SharedInformerFactory) (*apiextensionsapiserver.Config, error) {
	gc.PostStartHooks = map[string]genericapiserver.PostStartHookConfigEntry{}
	gc.RESTOptionsGetter = nil
	eo := *etcdOpts
	eo.StorageConfig.Codec = apiextensionsapiserver.Codecs.LegacyCodec(apiextensionsv1beta1.SchemeGroupVersion, apiextensionsv1.SchemeGroupVersion)
	eo.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(apiextensionsv1beta1.SchemeGroupVersion, schema.GroupKind{Group: apiextensionsv1beta1.GroupName})
	eo.SkipHealthEndpoints = true
	if err := eo.ApplyTo(&gc.Config); err != nil {
		return nil, fmt.Errorf("configure CRD storage: %w", err)
	}
	rc := apiextensionsapiserver.DefaultAPIResourceConfigSource()
	gc.MergedResourceConfig = rc
	gc.SharedInformerFactory = factory
	return &apiextensionsapiserver.Config{
		GenericConfig: &gc,
		ExtraConfig: apiextensionsapiserver.ExtraConfig{
			CRDRESTOptionsGetter: apiextensionsoptions.NewCRDRESTOptionsGetter(eo, gc.ResourceTransformers, gc.StorageObjectCountTracker),
			MasterCount:          1,
			// Conversion webhooks are dialled at the Service's cluster IP.
			ServiceResolver: clusterIPResolver{services: factory.Core().V1().Services().Lister()},
		},
	}, nil
}

// longRunning marks watches and streaming subresources as long-running (as
// kube-apiserver does), so request timeouts and in-flight limits skip them.
var longRunning = func() apirequest.LongRunningRequestCheck {
	basic := genericfilters.BasicLongRunningRequestCheck(
		sets.NewString("watch", "proxy"),
		sets.NewString("attach", "exec", "proxy", "log", "portforward"),
	)
	return func(r *http.Request, ri *apirequest.RequestInfo) bool {
		// A node's tunnel lives as long as the node's connection.
		return r.URL.Path == tunnel.Path || basic(r, ri)
	}
}()
