package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	criclient "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/agent/checkpoint"
	"github.com/k1s/k1s/agent/dns"
	"github.com/k1s/k1s/agent/kuberuntime"
	"github.com/k1s/k1s/agent/localpath"
	"github.com/k1s/k1s/agent/logs"
	"github.com/k1s/k1s/agent/network"
	"github.com/k1s/k1s/agent/proxy"
	agentserver "github.com/k1s/k1s/agent/server"
	"github.com/k1s/k1s/agent/volume"
	"github.com/k1s/k1s/embed/containerd"
	"github.com/k1s/k1s/internal/cachesync"
)

// NodeConfig configures everything a node runs next to its containers: the
// agent, its API server and log rotation.
type NodeConfig struct {
	Agent  Config
	Server agentserver.Config
	Logs   logs.Config
	// ClusterCIDR is the whole pod range, exempt from masquerading.
	// Default 10.42.0.0/16.
	ClusterCIDR *net.IPNet
	// PodsAfter, when set, holds back starting pods (not the node's
	// registration, status or network) until it is closed: the embedded
	// runtime closes it once the air-gap images are imported.
	PodsAfter <-chan struct{}
	// APIReady, when set, is closed once the apiserver serves: the node
	// contacts it only then. Static pods do not wait for it. nil: the
	// apiserver is there now.
	APIReady <-chan struct{}
	// Proxy configures the service proxy; nil runs none
	// (--disable-kube-proxy).
	Proxy *proxy.Config
	// DNS configures the node's cluster DNS; nil runs none
	// (--disable=coredns).
	DNS *dns.Config
	// LocalStorage configures the node's local-path provisioner
	// (--default-local-storage-path); nil runs none
	// (--disable=local-storage on the server).
	LocalStorage *localpath.Config
	// Overlay routes the other nodes' pod CIDRs (--flannel-backend); nil
	// routes nothing (a single node).
	Overlay *network.OverlayConfig
	// Containerd, when set, runs the embedded containerd as part of the
	// node (Agent.RuntimeEndpoint is then its socket): started first, its
	// bundled images imported before the agent starts, the air-gap images
	// before any pod (PodsAfter), stopped last. nil: an external runtime at
	// Agent.RuntimeEndpoint (--container-runtime-endpoint).
	Containerd *containerd.Config
	// CheckpointMaxBytes bounds the node's checkpoint
	// (<data-dir>/agent/checkpoint, agent/checkpoint): the pods bound to
	// it, the ConfigMaps, Secrets and tokens they use, every Service and
	// EndpointSlice and its own Node, from which it runs while the
	// apiservers cannot be reached. Default 64 MiB.
	CheckpointMaxBytes int64
	// APIUnreachableAtStart says the apiservers did not answer as the
	// node started (k1s agent read its kept cluster info): the checkpoint
	// answers the first lists after a short wait. Default false.
	APIUnreachableAtStart bool
}

// Node is a running node: a supervised component.
type Node struct {
	cfg          NodeConfig
	restCfg      *rest.Config
	proxyRestCfg *rest.Config
	runtime      *embeddedRuntime // nil: an external runtime
	ready        chan struct{}
	readyErr     error
}

// NewNode validates cfg; restCfg authenticates as the node, proxyRestCfg
// as the service proxy (system:kube-proxy), which reads every Service and
// EndpointSlice (nil: restCfg). It starts nothing.
func NewNode(cfg NodeConfig, restCfg, proxyRestCfg *rest.Config) (*Node, error) {
	var rt *embeddedRuntime
	if cfg.Containerd != nil {
		var err error
		if rt, err = newEmbeddedRuntime(*cfg.Containerd); err != nil {
			return nil, err
		}
		cfg.Agent.RuntimeEndpoint = rt.c.Endpoint()
	}
	cfg.Agent.SetDefaults()
	if err := cfg.Agent.Validate(); err != nil {
		return nil, err
	}
	if cfg.Proxy != nil {
		cfg.Proxy.SetDefaults()
		if err := cfg.Proxy.Validate(); err != nil {
			return nil, err
		}
	}
	if cfg.DNS != nil {
		cfg.DNS.SetDefaults()
		if err := cfg.DNS.Validate(); err != nil {
			return nil, err
		}
	}
	if cfg.LocalStorage != nil {
		ls := *cfg.LocalStorage
		ls.NodeName = cfg.Agent.NodeName
		ls.SetDefaults()
		if err := ls.Validate(); err != nil {
			return nil, err
		}
		cfg.LocalStorage = &ls
	}
	if proxyRestCfg == nil {
		proxyRestCfg = restCfg
	}
	if cfg.ClusterCIDR == nil {
		_, cfg.ClusterCIDR, _ = net.ParseCIDR("10.42.0.0/16")
	}
	cfg.Server.NodeName = cfg.Agent.NodeName
	return &Node{cfg: cfg, restCfg: restCfg, proxyRestCfg: proxyRestCfg, runtime: rt, ready: make(chan struct{})}, nil
}

// Ready is closed once the node is registered and Ready.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Run runs the node until ctx is cancelled: the embedded containerd first
// (when the node has one), then the agent, its API, the proxy and the
// DNS, which stop before containerd does.
func (n *Node) Run(ctx context.Context) error {
	if err := n.ensureLowWriteLogs(ctx); err != nil {
		return err
	}
	if n.runtime == nil {
		return n.run(ctx, n.cfg.PodsAfter)
	}
	rtCtx, stopRuntime := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRuntime()
	rtDone := make(chan error, 1)
	go func() { rtDone <- n.runtime.Run(rtCtx) }()
	select {
	case <-n.runtime.ready:
	case err := <-rtDone:
		if err == nil {
			err = fmt.Errorf("containerd stopped before it was ready")
		}
		return fmt.Errorf("containerd: %w", err)
	case <-ctx.Done():
		stopRuntime()
		return <-rtDone
	}
	nodeCtx, stopNode := context.WithCancel(ctx)
	defer stopNode()
	nodeDone := make(chan error, 1)
	go func() { nodeDone <- n.run(nodeCtx, n.runtime.imported) }()
	var err error
	select {
	case err = <-nodeDone:
	case rerr := <-rtDone:
		// containerd died under the node: stop the node too.
		stopNode()
		<-nodeDone
		if rerr == nil {
			rerr = fmt.Errorf("containerd stopped")
		}
		return fmt.Errorf("containerd: %w", rerr)
	}
	stopRuntime()
	if rerr := <-rtDone; err == nil && rerr != nil {
		err = fmt.Errorf("containerd: %w", rerr)
	}
	return err
}

// run connects to the runtime and runs the node until ctx is cancelled;
// no pod starts before podsAfter is closed (nil: at once).
func (n *Node) run(ctx context.Context, podsAfter <-chan struct{}) error {
	logger := klog.FromContext(ctx).WithName("node")
	ctx = klog.NewContext(ctx, logger)
	client, err := kubernetes.NewForConfig(n.restCfg)
	if err != nil {
		return fmt.Errorf("node client: %w", err)
	}
	endpoint := n.cfg.Agent.RuntimeEndpoint
	runtime, err := criclient.NewRemoteRuntimeService(ctx, endpoint, 2*time.Minute, nil, false)
	if err != nil {
		return fmt.Errorf("connect to the container runtime at %s (--container-runtime-endpoint): %w", endpoint, err)
	}
	images, err := criclient.NewRemoteImageService(ctx, endpoint, 2*time.Minute, nil, false)
	if err != nil {
		return fmt.Errorf("connect to the image service at %s: %w", endpoint, err)
	}

	// Services (for environment variables, the proxy and DNS) and
	// EndpointSlices, read with the proxy's identity: one watch of each
	// for the whole node.
	proxyClient, err := kubernetes.NewForConfig(n.proxyRestCfg)
	if err != nil {
		return fmt.Errorf("service proxy client: %w", err)
	}
	cp, err := checkpoint.New(checkpoint.Config{Dir: filepath.Join(n.cfg.Agent.AgentDir(), "checkpoint"), MaxBytes: n.cfg.CheckpointMaxBytes})
	if err != nil {
		return err
	}
	if n.cfg.APIUnreachableAtStart {
		cp.MarkUnreachable()
	}
	factory := informers.NewSharedInformerFactory(proxyClient, 10*time.Minute)
	// The Services and EndpointSlices are kept in the checkpoint, which
	// answers their lists while the apiservers are away: the proxy, the
	// DNS and service variables keep the last state, after a restart too.
	if err := checkpointInformer(factory, cp, checkpoint.Services, &corev1.Service{}, func(c kubernetes.Interface) cache.ListerWatcher {
		return cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "services", metav1.NamespaceAll, fields.Everything())
	}); err != nil {
		return err
	}
	if err := checkpointInformer(factory, cp, checkpoint.EndpointSlices, &discoveryv1.EndpointSlice{}, func(c kubernetes.Interface) cache.ListerWatcher {
		return cache.NewListWatchFromClient(c.DiscoveryV1().RESTClient(), "endpointslices", metav1.NamespaceAll, fields.Everything())
	}); err != nil {
		return err
	}
	env := &envSource{client: client, services: factory.Core().V1().Services().Lister(), checkpoint: cp}
	// ClusterTrustBundles for projected volumes, read with the node's
	// identity (system:node may list and watch them all).
	nodeFactory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	trustBundles := nodeFactory.Certificates().V1().ClusterTrustBundles()
	trustBundles.Informer()
	svcSynced := factory.Core().V1().Services().Informer().HasSynced
	registry := metrics.NewKubeRegistry()
	var runners []namedRunner
	if n.cfg.Proxy != nil {
		px, err := proxy.New(*n.cfg.Proxy, proxy.Deps{
			Services:       factory.Core().V1().Services().Informer(),
			EndpointSlices: factory.Discovery().V1().EndpointSlices().Informer(),
		})
		if err != nil {
			return err
		}
		px.Register(registry)
		runners = append(runners, namedRunner{"service proxy", px.Run})
	}
	podMTU := 0
	if n.cfg.Overlay != nil {
		ov, err := network.NewOverlay(*n.cfg.Overlay, client, factory)
		if err != nil {
			return err
		}
		podMTU = network.PodMTU(n.cfg.Overlay.Backend, n.cfg.Overlay.NodeIP)
		runners = append(runners, namedRunner{"pod network overlay", ov.Run})
	}
	if n.cfg.DNS != nil {
		// The DNS serves at once: forwarded names right away, cluster
		// names once the informers have synced (SERVFAIL until then).
		srv, err := dns.New(*n.cfg.DNS, dns.Deps{
			Services:       factory.Core().V1().Services().Informer(),
			EndpointSlices: factory.Discovery().V1().EndpointSlices().Informer(),
			Metrics:        registry,
		})
		if err != nil {
			return err
		}
		runners = append(runners, namedRunner{"cluster DNS", srv.Run})
	}
	if n.cfg.LocalStorage != nil {
		lp, err := localpath.New(*n.cfg.LocalStorage, client)
		if err != nil {
			return err
		}
		runners = append(runners, namedRunner{"local-path provisioner", func(ctx context.Context) error {
			if n.cfg.APIReady != nil {
				select {
				case <-n.cfg.APIReady:
				case <-ctx.Done():
					return nil
				}
			}
			return lp.Run(ctx)
		}})
	}
	// The agent contacts the apiserver once it serves and the services
	// are listed (pods bound to the node need them for their
	// environment); static pods run meanwhile, without service variables
	// until then, as kubelet's do.
	apiSynced := make(chan struct{})
	go func() {
		if n.cfg.APIReady != nil {
			select {
			case <-n.cfg.APIReady:
			case <-ctx.Done():
				return
			}
		}
		factory.Start(ctx.Done())
		nodeFactory.Start(ctx.Done())
		if cachesync.WaitForCacheSync(ctx, svcSynced) {
			close(apiSynced)
		}
	}()

	// The downward API's default limits are the node's allocatable, which
	// the agent (made below, with the volumes) knows.
	var self *Agent
	allPods := func() []*corev1.Pod {
		if self == nil {
			return nil
		}
		return self.Pods()
	}
	allocatable := func() corev1.ResourceList {
		if self == nil {
			return nil
		}
		return self.NodeAllocatable()
	}
	vols, err := volume.New(volume.Config{
		PodsDir:       filepath.Join(n.cfg.Agent.AgentDir(), "pods"),
		ClusterDomain: n.cfg.Agent.ClusterDomain,
	}, volume.Deps{
		Objects:      env,
		Claims:       env,
		RequestToken: volume.TokenRequester(cp.Tokens(checkpoint.TokenFunc(tokenRequester(client)))),

		TrustBundles:    volume.InformerTrustBundles(trustBundles),
		PodCertificates: volume.ClientPodCertificates(client, n.cfg.Agent.NodeName),
		NodeAllocatable: allocatable,
	})
	if err != nil {
		return err
	}
	nst, err := n.newNodeStats(runtime, images, allPods, env)
	if err != nil {
		return err
	}
	if nst.run != nil {
		runners = append(runners, namedRunner{"stats", nst.run})
	}
	agent, err := New(n.cfg.Agent, Deps{
		Client:     client,
		Runtime:    runtime,
		Images:     images,
		Volumes:    vols,
		Network:    &cniNetwork{dir: n.cfg.Agent.CNIConfDir, ipamDir: filepath.Join(n.cfg.Agent.AgentDir(), "cni", "networks"), clusterCIDR: n.cfg.ClusterCIDR, mtu: podMTU},
		Env:        env,
		Clock:      clock.RealClock{},
		PodsAfter:  podsAfter,
		APIReady:   apiSynced,
		Checkpoint: cp,
		Summary:    nst.summaryProvider(),

		RuntimeClasses: runtimeHandlers(client),
	})
	if err != nil {
		return err
	}
	self = agent
	cp.SetLocalPods(agent.LocalPod)
	api, err := agentserver.New(n.cfg.Server, agentserver.Deps{
		Pods:       agentserver.PodsFunc(agent.Pods),
		Runtime:    runtime,
		KubeClient: client,
		HealthChecks: []healthz.HealthChecker{healthz.NamedCheck("pleg", func(*http.Request) error {
			return agent.pleg.Healthy()
		})},
		Metrics: metrics.HandlerFor(registry, metrics.HandlerOpts{}),

		Stats:           nst.api.Stats,
		MetricsResource: nst.api.MetricsResource,
		MetricsCadvisor: nst.api.MetricsCadvisor,
		MetricsProbes:   nst.api.MetricsProbes,
	})
	if err != nil {
		return err
	}
	rotation, err := logs.NewManager(n.cfg.Logs, runtime, nil)
	if err != nil {
		return err
	}
	runners = append(runners, namedRunner{"agent", agent.Run}, namedRunner{"agent API", api.Run}, namedRunner{"log rotation", rotation.Run})
	var wg sync.WaitGroup
	errs := make(chan error, len(runners))
	for _, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.run(ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", r.name, err)
			}
		}()
	}
	go func() {
		select {
		case <-agent.Ready():
			close(n.ready)
		case <-ctx.Done():
		}
	}()
	var first error
	select {
	case <-ctx.Done():
	case first = <-errs:
	}
	wg.Wait()
	return first
}

type namedRunner struct {
	name string
	run  func(context.Context) error
}

// runtimeHandlers looks up a RuntimeClass's handler with the node's client.
func runtimeHandlers(client kubernetes.Interface) kuberuntime.RuntimeHandlerFunc {
	return func(ctx context.Context, name string) (string, error) {
		rc, err := client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return rc.Handler, nil
	}
}

// checkpointInformer registers in factory the informer of obj's type on
// newLW's lister-watcher wrapped by the checkpoint (kind).
func checkpointInformer(factory informers.SharedInformerFactory, cp *checkpoint.Store, kind string, obj k8sruntime.Object, newLW func(kubernetes.Interface) cache.ListerWatcher) error {
	var werr error
	factory.InformerFor(obj, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw, err := cp.ListWatch(kind, newLW(c), nil)
		if err != nil {
			werr = err
			lw = newLW(c)
		}
		return cache.NewSharedIndexInformer(lw, obj, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	})
	return werr
}

// envSource reads configmaps, secrets, claims and volumes (the node may
// get those its pods use) and lists services from an informer. The
// ConfigMaps and Secrets read are kept in the checkpoint, whose copy
// stands in while the apiservers cannot be reached.
type envSource struct {
	client     kubernetes.Interface
	services   corelisters.ServiceLister
	checkpoint *checkpoint.Store
}

func (e *envSource) GetConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	get := func() (*corev1.ConfigMap, error) {
		return e.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if e.checkpoint == nil {
		return get()
	}
	return checkpoint.Fetch(ctx, e.checkpoint, checkpoint.ConfigMaps, ns, name, get)
}

func (e *envSource) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	get := func() (*corev1.Secret, error) {
		return e.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if e.checkpoint == nil {
		return get()
	}
	return checkpoint.Fetch(ctx, e.checkpoint, checkpoint.Secrets, ns, name, get)
}

func (e *envSource) GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	return e.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

func (e *envSource) GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	return e.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

func (e *envSource) ListServices(ns string) ([]*corev1.Service, error) {
	own, err := e.services.Services(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	if ns != metav1.NamespaceDefault {
		if k, err := e.services.Services(metav1.NamespaceDefault).Get("kubernetes"); err == nil {
			own = append(own, k)
		}
	}
	return own, nil
}

// tokenRequester issues service-account tokens bound to a pod.
func tokenRequester(client kubernetes.Interface) volume.TokenRequester {
	return func(ctx context.Context, ns, sa string, audiences []string, expirationSeconds int64, pod *corev1.Pod) (string, time.Time, error) {
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: &expirationSeconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}
		out, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
		if err != nil {
			return "", time.Time{}, err
		}
		return out.Status.Token, out.Status.ExpirationTimestamp.Time, nil
	}
}

// cniNetwork writes the bridge network config and the masquerade rules.
type cniNetwork struct {
	dir, ipamDir string
	clusterCIDR  *net.IPNet
	mtu          int // 0: the bridge plugin's default
}

func (c *cniNetwork) SetPodCIDR(cidr string) error {
	_, podCIDR, err := net.ParseCIDR(cidr)
	if err != nil {
		return fmt.Errorf("node pod CIDR %q: %w", cidr, err)
	}
	if _, err := network.WriteConfig(c.dir, network.CNIConfig{PodCIDR: podCIDR, IPAMDataDir: c.ipamDir, MTU: c.mtu}); err != nil {
		return err
	}
	if err := network.EnsureMasquerade(context.Background(), nil, podCIDR, c.clusterCIDR); err != nil {
		return errors.Join(errors.New("pod network configured but masquerading failed"), err)
	}
	return nil
}
