package manager

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ServiceAccountNamespace holds the controllers' service accounts.
const ServiceAccountNamespace = metav1.NamespaceSystem

// componentName is the manager's name in events and its lease's events.
const componentName = "kube-controller-manager"

// Manager runs the enabled controllers, while it holds the lease when
// leader election is on. Run may be called once.
type Manager struct {
	cfg         Config
	controllers []Controller // enabled, in registration order
	d           deps

	started   atomic.Bool
	ready     chan struct{}
	readyOnce sync.Once
}

// deps are the manager's handles, separated so tests can pass fakes.
type deps struct {
	// root lists for the shared informers and records events, with the
	// manager's own credentials.
	root kubernetes.Interface
	// metadata lists for the metadata informers.
	metadata metadata.Interface
	// leader reads and writes the lease; its requests time out within the
	// renew deadline.
	leader kubernetes.Interface
	// builder gives the controllers their clients.
	builder ClientBuilder
	clock   clock.WithTicker
}

// New validates cfg (after SetDefaults) against the registered controllers
// and prepares clients from rootConfig, whose credentials are the manager's
// own (system:kube-controller-manager). It contacts nothing and starts
// nothing.
func New(cfg Config, rootConfig *rest.Config, register ...Controller) (*Manager, error) {
	if rootConfig == nil {
		return nil, errors.New("controller manager: no client config")
	}
	cfg.SetDefaults()
	if err := cfg.Validate(register...); err != nil {
		return nil, err
	}
	root := rest.CopyConfig(rootConfig)
	if cfg.InProcess != nil {
		var err error
		if root, err = cfg.InProcess(root); err != nil {
			return nil, fmt.Errorf("controller manager: in-process client: %w", err)
		}
	}
	root.QPS = cfg.KubeAPIQPS
	root.Burst = cfg.KubeAPIBurst
	root.ContentType = cfg.KubeAPIContentType
	if cfg.KubeAPIContentType != runtime.ContentTypeJSON {
		root.AcceptContentTypes = cfg.KubeAPIContentType + "," + runtime.ContentTypeJSON
	}
	named := func(agent string) *rest.Config {
		return rest.AddUserAgent(rest.CopyConfig(root), agent)
	}
	rootClient, err := kubernetes.NewForConfig(named("shared-informers"))
	if err != nil {
		return nil, fmt.Errorf("controller manager: client: %w", err)
	}
	metadataClient, err := metadata.NewForConfig(named("metadata-informers"))
	if err != nil {
		return nil, fmt.Errorf("controller manager: metadata client: %w", err)
	}
	leaderCfg := named("leader-election")
	leaderCfg.Timeout = max(cfg.RenewDeadline/2, time.Second)
	leaderClient, err := kubernetes.NewForConfig(leaderCfg)
	if err != nil {
		return nil, fmt.Errorf("controller manager: leader election client: %w", err)
	}
	// The client that looks up the controllers' service accounts and
	// requests their tokens is not rate limited: it makes a few requests
	// per controller, all at start, and throttling them at --kube-api-qps
	// delayed the last controllers by seconds.
	tokenCfg := named(componentName)
	tokenCfg.QPS, tokenCfg.Burst = -1, 0
	tokenClient, err := kubernetes.NewForConfig(tokenCfg)
	if err != nil {
		return nil, fmt.Errorf("controller manager: client: %w", err)
	}
	return newManager(cfg, deps{
		root:     rootClient,
		metadata: metadataClient,
		leader:   leaderClient,
		builder:  newClientBuilder(root, tokenClient, cfg.UseServiceAccountCredentials, ServiceAccountNamespace, cfg.InProcess),
		clock:    clock.RealClock{},
	}, register)
}

func newManager(cfg Config, d deps, register []Controller) (*Manager, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(register...); err != nil {
		return nil, err
	}
	seen := map[string]string{}
	var errs []error
	for _, c := range register {
		if c.Name == "" || c.ServiceAccount == "" || c.Start == nil {
			errs = append(errs, fmt.Errorf("controller manager: controller %q lacks a name, a service account or Start", c.Name))
			continue
		}
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			if other, dup := seen[n]; dup {
				errs = append(errs, fmt.Errorf("controller manager: name %q of controller %q already used by %q", n, c.Name, other))
			}
			seen[n] = c.Name
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Identity == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "k1s"
		}
		cfg.Identity = host + "_" + string(uuid.NewUUID())
	}
	m := &Manager{cfg: cfg, d: d, ready: make(chan struct{})}
	for _, c := range register {
		if cfg.Enabled(c) {
			m.controllers = append(m.controllers, c)
		}
	}
	return m, nil
}

// Controllers returns the names of the enabled controllers, in the order
// they were registered (and are started).
func (m *Manager) Controllers() []string {
	var out []string
	for _, c := range m.controllers {
		out = append(out, c.Name)
	}
	return out
}

// Identity is this manager's holder identity in the lease.
func (m *Manager) Identity() string { return m.cfg.Identity }

// Ready is closed once the controllers have started, or, with leader
// election, as soon as another manager is seen holding the lease.
func (m *Manager) Ready() <-chan struct{} { return m.ready }

func (m *Manager) markReady() { m.readyOnce.Do(func() { close(m.ready) }) }

// Run runs the controllers until ctx is cancelled (returning nil). With
// leader election it first waits for the lease; losing it afterwards stops
// the controllers and returns an error, as kube-controller-manager exits
// then. A controller that fails stops the others and its error is returned.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("controller manager: Run called twice")
	}
	logger := klog.FromContext(ctx)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.d.root.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := func(component string) record.EventRecorder {
		return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	}

	logger.Info("Starting controller manager", "controllers", m.Controllers(), "leaderElect", m.cfg.LeaderElect,
		"identity", m.cfg.Identity, "serviceAccountCredentials", m.cfg.UseServiceAccountCredentials)
	if !m.cfg.LeaderElect {
		return m.runControllers(ctx, recorder)
	}
	return m.runElected(ctx, recorder)
}

// runElected campaigns for the lease and runs the controllers while
// holding it.
func (m *Manager) runElected(ctx context.Context, recorder func(string) record.EventRecorder) error {
	logger := klog.FromContext(ctx)
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, m.cfg.LeaseNamespace, m.cfg.LeaseName,
		m.d.leader.CoreV1(), m.d.leader.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: m.cfg.Identity, EventRecorder: recorder(componentName)})
	if err != nil {
		return fmt.Errorf("controller manager: lease lock: %w", err)
	}
	lease := m.cfg.LeaseNamespace + "/" + m.cfg.LeaseName

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leading := make(chan context.Context, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   m.cfg.LeaseDuration,
		RenewDeadline:   m.cfg.RenewDeadline,
		RetryPeriod:     m.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            m.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) { leading <- lctx },
			OnStoppedLeading: func() {
				logger.V(2).Info("Stopped leading", "lease", lease, "identity", m.cfg.Identity)
			},
			OnNewLeader: func(identity string) {
				if identity == m.cfg.Identity {
					return
				}
				logger.Info("Another controller manager holds the lease", "lease", lease, "leader", identity)
				m.markReady()
			},
		},
	})
	if err != nil {
		return fmt.Errorf("controller manager: leader election: %w", err)
	}
	electionDone := make(chan struct{})
	go func() {
		defer close(electionDone)
		elector.Run(ctx)
	}()
	logger.Info("Waiting for the controller manager lease", "lease", lease, "identity", m.cfg.Identity)

	lost := fmt.Errorf("controller manager: lost the lease %s", lease)
	select {
	case <-electionDone:
		if parent.Err() != nil {
			return nil
		}
		return lost
	case lctx := <-leading:
		logger.Info("Acquired the controller manager lease", "lease", lease, "identity", m.cfg.Identity)
		err := m.runControllers(lctx, recorder)
		// Stop campaigning (releasing the lease) whatever ended the term.
		cancel()
		<-electionDone
		if err != nil {
			return err
		}
		// The term ends on shutdown (parent done) or on losing the lease.
		if parent.Err() != nil {
			return nil
		}
		return lost
	}
}

// runControllers runs one term: informer factories, every enabled
// controller, until ctx is done or a controller fails.
func (m *Manager) runControllers(ctx context.Context, recorder func(string) record.EventRecorder) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory := informers.NewSharedInformerFactoryWithOptions(m.d.root, m.resyncPeriod(), informers.WithTransform(dropManagedFields))
	metaFactory := metadatainformer.NewSharedInformerFactoryWithOptions(m.d.metadata, m.resyncPeriod(), metadatainformer.WithTransform(dropManagedFields))
	defer metaFactory.Shutdown()
	defer factory.Shutdown()

	g, gctx := errgroup.WithContext(ctx)
	informersStarted := make(chan struct{})
	for _, c := range m.controllers {
		cctx := klog.NewContext(gctx, klog.LoggerWithName(logger, c.Name))
		name := c.Name
		cc := ControllerContext{
			ServiceAccount:          c.ServiceAccount,
			ClientBuilder:           m.d.builder,
			InformerFactory:         factory,
			MetadataInformerFactory: metaFactory,
			InformersStarted:        informersStarted,
			ResyncPeriod:            m.resyncPeriod,
			EventRecorder:           recorder,
			Clock:                   m.d.clock,
			Go: func(fn func(context.Context) error) {
				g.Go(func() error {
					err := fn(cctx)
					if err == nil || (cctx.Err() != nil && errors.Is(err, context.Canceled)) {
						return nil
					}
					return fmt.Errorf("controller %s: %w", name, err)
				})
			},
		}
		if err := c.Start(cctx, cc); err != nil {
			cancel()
			_ = g.Wait()
			return fmt.Errorf("controller manager: start %s: %w", name, err)
		}
		logger.V(2).Info("Started controller", "controller", name)
		// Start the informers this controller asked for now, not after
		// the last controller: the node's pod CIDR (node-ipam, early in
		// the list) then does not wait for every other controller.
		factory.Start(gctx.Done())
	}
	factory.Start(gctx.Done())
	metaFactory.Start(gctx.Done())
	close(informersStarted)
	logger.Info("Started controllers", "controllers", m.Controllers())
	m.markReady()

	<-gctx.Done()
	return g.Wait()
}

// resyncPeriod picks a period between MinResyncPeriod and twice it, so
// that informers do not resync in lock-step.
func (m *Manager) resyncPeriod() time.Duration {
	return time.Duration(float64(m.cfg.MinResyncPeriod) * (1 + rand.Float64()))
}

// dropManagedFields trims objects in the informer caches: no controller
// reads managed fields.
func dropManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
