package manager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	managertesting "github.com/k1s/k1s/controllers/manager/testing"
)

const waitLimit = 20 * time.Second

func testDeps(client *fake.Clientset) deps {
	return deps{
		root:     client,
		metadata: metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()),
		leader:   client,
		builder:  &managertesting.ClientBuilder{Clientset: client},
		clock:    clock.RealClock{},
	}
}

// probe observes one fake controller.
type probe struct {
	// running receives the controller's context once its informer synced.
	running chan ControllerContext
	// stopped is closed when its goroutine returns.
	stopped chan struct{}
}

func newProbe() *probe {
	return &probe{running: make(chan ControllerContext, 1), stopped: make(chan struct{})}
}

// probed is a controller that asks for the namespace informer in Start and
// reports once it has synced (so only if the manager started the factory
// after Start), then waits for its context.
func probed(name string, p *probe) Controller {
	return Controller{
		Name:           name,
		ServiceAccount: name + "-sa",
		Start: func(_ context.Context, cc ControllerContext) error {
			inf := cc.InformerFactory.Core().V1().Namespaces().Informer()
			cc.Go(func(ctx context.Context) error {
				defer close(p.stopped)
				if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
					return nil
				}
				p.running <- cc
				<-ctx.Done()
				return nil
			})
			return nil
		},
	}
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func runAsync(ctx context.Context, m *Manager) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return done
}

func TestNew(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Controllers = []string{"*", "-namespace"}
	m, err := New(cfg, &rest.Config{Host: "https://127.0.0.1:1"}, registry...)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Controllers(), []string{"serviceaccount-controller", "root-ca-certificate-publisher-controller"}; !slices.Equal(got, want) {
		t.Errorf("Controllers() = %q, want %q", got, want)
	}
	if id := m.Identity(); !strings.Contains(id, "_") || len(id) < 30 {
		t.Errorf("identity %q is not host_uuid", id)
	}

	cfg.Controllers = []string{"*", "foo"}
	if _, err := New(cfg, &rest.Config{}, registry...); err == nil || err.Error() != `--controllers: unknown controller "foo"` {
		t.Errorf("New with an unknown controller: %v", err)
	}
	if _, err := New(DefaultConfig(), nil, registry...); err == nil {
		t.Error("New without a client config succeeded")
	}
}

func TestNewRejectsBadRegistrations(t *testing.T) {
	tests := []struct {
		name     string
		register []Controller
		want     string
	}{
		{"duplicate name", []Controller{descriptor("a", false), descriptor("a", false)}, `name "a" of controller "a" already used by "a"`},
		{"alias clashes with a name", []Controller{descriptor("a", false), descriptor("b", false, "a")}, `name "a" of controller "b" already used by "a"`},
		{"no start", []Controller{{Name: "a", ServiceAccount: "a"}}, `controller "a" lacks a name, a service account or Start`},
		{"no service account", []Controller{{Name: "a", Start: descriptor("a", false).Start}}, `controller "a" lacks a name, a service account or Start`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			_, err := newManager(cfg, testDeps(fake.NewClientset()), tt.register)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRunWithoutLeaderElection(t *testing.T) {
	client := fake.NewClientset()
	on, off := newProbe(), newProbe()
	offCtl := probed("off", off)
	offCtl.DisabledByDefault = true
	cfg := DefaultConfig()
	cfg.LeaderElect = false
	m, err := newManager(cfg, testDeps(client), []Controller{probed("on", on), offCtl})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, m)

	cc := wait(t, on.running, "the enabled controller")
	wait(t, m.Ready(), "Ready")
	if cc.ServiceAccount != "on-sa" || cc.ClientBuilder == nil || cc.MetadataInformerFactory == nil || cc.EventRecorder == nil || cc.ResyncPeriod == nil {
		t.Errorf("controller context incomplete: %+v", cc)
	}
	if !closed(cc.InformersStarted) {
		t.Error("InformersStarted not closed while controllers run")
	}
	if p := cc.ResyncPeriod(); p < 12*time.Hour || p >= 24*time.Hour {
		t.Errorf("resync period %s outside [12h, 24h)", p)
	}
	if got := m.Controllers(); !slices.Equal(got, []string{"on"}) {
		t.Errorf("Controllers() = %q", got)
	}

	cancel()
	if err := wait(t, done, "Run to return"); err != nil {
		t.Errorf("Run returned %v on cancel, want nil", err)
	}
	if !closed(on.stopped) {
		t.Error("Run returned before the controller's goroutine")
	}
	if closed(off.stopped) {
		t.Error("the disabled controller was started")
	}
	if err := m.Run(context.Background()); err == nil {
		t.Error("second Run succeeded")
	}
}

func TestRunFailures(t *testing.T) {
	t.Run("start error", func(t *testing.T) {
		other := newProbe()
		bad := descriptor("bad", false)
		bad.Start = func(context.Context, ControllerContext) error { return errors.New("no credentials") }
		cfg := DefaultConfig()
		cfg.LeaderElect = false
		m, err := newManager(cfg, testDeps(fake.NewClientset()), []Controller{probed("first", other), bad})
		if err != nil {
			t.Fatal(err)
		}
		err = m.Run(context.Background())
		if err == nil || err.Error() != "controller manager: start bad: no credentials" {
			t.Errorf("Run = %v", err)
		}
		if !closed(other.stopped) {
			t.Error("the controller started before the failure was not stopped")
		}
		if closed(m.Ready()) {
			t.Error("Ready closed although starting failed")
		}
	})
	t.Run("a controller fails while running", func(t *testing.T) {
		other := newProbe()
		failing := descriptor("failing", false)
		failing.Start = func(_ context.Context, cc ControllerContext) error {
			cc.Go(func(ctx context.Context) error { return errors.New("cache broke") })
			return nil
		}
		cfg := DefaultConfig()
		cfg.LeaderElect = false
		m, err := newManager(cfg, testDeps(fake.NewClientset()), []Controller{probed("other", other), failing})
		if err != nil {
			t.Fatal(err)
		}
		err = wait(t, runAsync(context.Background(), m), "Run to fail")
		if err == nil || err.Error() != "controller failing: cache broke" {
			t.Errorf("Run = %v", err)
		}
		if !closed(other.stopped) {
			t.Error("the other controller was not stopped")
		}
	})
}

func electedConfig() Config {
	cfg := DefaultConfig()
	cfg.LeaseDuration = 2 * time.Second
	cfg.RenewDeadline = time.Second
	cfg.RetryPeriod = 100 * time.Millisecond
	return cfg
}

func holder(t *testing.T, client *fake.Clientset) string {
	t.Helper()
	lease, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// TestLeaderElection runs two managers against one API: only the holder of
// the lease runs controllers; when it stops it releases the lease and the
// other takes over.
func TestLeaderElection(t *testing.T) {
	client := fake.NewClientset()
	p1, p2 := newProbe(), newProbe()
	cfg1, cfg2 := electedConfig(), electedConfig()
	cfg1.Identity, cfg2.Identity = "one", "two"
	m1, err := newManager(cfg1, testDeps(client), []Controller{probed("ctl", p1)})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := newManager(cfg2, testDeps(client), []Controller{probed("ctl", p2)})
	if err != nil {
		t.Fatal(err)
	}

	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	done1 := runAsync(ctx1, m1)
	wait(t, p1.running, "the first manager's controller")
	wait(t, m1.Ready(), "the leader to be ready")
	if h := holder(t, client); h != "one" {
		t.Fatalf("lease held by %q, want one", h)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	done2 := runAsync(ctx2, m2)
	wait(t, m2.Ready(), "the follower to be ready")
	select {
	case <-p2.running:
		t.Fatal("the follower runs controllers while the leader holds the lease")
	default:
	}

	cancel1()
	if err := wait(t, done1, "the leader to stop"); err != nil {
		t.Errorf("leader Run returned %v on cancel, want nil", err)
	}
	if !closed(p1.stopped) {
		t.Error("the leader's controller still runs")
	}
	wait(t, p2.running, "the follower to take over")
	if h := holder(t, client); h != "two" {
		t.Errorf("lease held by %q after takeover, want two", h)
	}
	cancel2()
	if err := wait(t, done2, "the second manager to stop"); err != nil {
		t.Errorf("second Run returned %v on cancel, want nil", err)
	}
}

// TestLosingTheLease: when another holder takes the lease, the manager
// stops its controllers and Run fails.
func TestLosingTheLease(t *testing.T) {
	client := fake.NewClientset()
	// The fake does not check resource versions: once the intruder has
	// taken the lease, refuse the old holder's writes as the apiserver
	// would (its copy of the lease is stale).
	var intruded atomic.Bool
	client.PrependReactor("update", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		l := a.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if intruded.Load() && ptr.Deref(l.Spec.HolderIdentity, "") == "one" {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), l.Name, errors.New("stale resource version"))
		}
		return false, nil, nil
	})
	p := newProbe()
	cfg := electedConfig()
	cfg.Identity = "one"
	m, err := newManager(cfg, testDeps(client), []Controller{probed("ctl", p)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, m)
	wait(t, p.running, "the controller")

	lease, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To("intruder"), LeaseDurationSeconds: ptr.To[int32](3600), AcquireTime: &now, RenewTime: &now}
	intruded.Store(true)
	if _, err := client.CoordinationV1().Leases("kube-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	err = wait(t, done, "Run to fail")
	if err == nil || err.Error() != "controller manager: lost the lease kube-system/kube-controller-manager" {
		t.Errorf("Run = %v", err)
	}
	if !closed(p.stopped) {
		t.Error("the controller still runs after the lease was lost")
	}
	if h := holder(t, client); h != "intruder" {
		t.Errorf("lease held by %q, want intruder (a lost lease is not released)", h)
	}
}
