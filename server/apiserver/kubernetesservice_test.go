package apiserver

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// fakeLeases is an in-memory endpointLeases.
type fakeLeases struct {
	mu      sync.Mutex
	ips     map[string]bool
	removed []string
}

func (f *fakeLeases) Update(_ context.Context, ip net.IP) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ips[ip.String()] = true
	return nil
}

func (f *fakeLeases) List(context.Context) ([]net.IP, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []net.IP
	for ip := range f.ips {
		out = append(out, net.ParseIP(ip))
	}
	return out, nil
}

func (f *fakeLeases) Remove(_ context.Context, ip net.IP) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ips, ip.String())
	f.removed = append(f.removed, ip.String())
	return nil
}

func endpointIPs(t *testing.T, ctx context.Context, k *kubernetesService) (eps, slice []string) {
	t.Helper()
	e, err := k.client.CoreV1().Endpoints("default").Get(ctx, kubernetesName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ss := range e.Subsets {
		for _, a := range ss.Addresses {
			eps = append(eps, a.IP)
		}
	}
	s, err := k.client.DiscoveryV1().EndpointSlices("default").Get(ctx, kubernetesName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range s.Endpoints {
		slice = append(slice, ep.Addresses...)
	}
	return eps, slice
}

// TestKubernetesServiceListsEveryAPIServer: with several apiservers the
// kubernetes endpoints list every live lease's address (this one's
// always, other families and loopback never), and a stopping apiserver
// ends its lease and drops out.
func TestKubernetesServiceListsEveryAPIServer(t *testing.T) {
	ctx := context.Background()
	leases := &fakeLeases{ips: map[string]bool{"10.99.0.13": true, "10.99.0.12": true, "127.0.0.1": true, "fd00::1": true}}
	k := &kubernetesService{client: fake.NewClientset(), clusterIP: net.ParseIP("10.43.0.1"), address: net.ParseIP("10.99.0.11"),
		port: 6443, interval: time.Hour, leases: leases}
	if err := k.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"10.99.0.11", "10.99.0.12", "10.99.0.13"}
	if eps, slice := endpointIPs(t, ctx, k); !slices.Equal(eps, want) || !slices.Equal(slice, want) {
		t.Errorf("endpoints %v, slice %v, want %v", eps, slice, want)
	}
	if !leases.ips["10.99.0.11"] {
		t.Errorf("this apiserver's lease was not renewed")
	}

	// 10.99.0.13's lease ends: it drops out at the next reconcile.
	_ = leases.Remove(ctx, net.ParseIP("10.99.0.13"))
	if err := k.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	want = []string{"10.99.0.11", "10.99.0.12"}
	if eps, slice := endpointIPs(t, ctx, k); !slices.Equal(eps, want) || !slices.Equal(slice, want) {
		t.Errorf("after a lease ended: endpoints %v, slice %v, want %v", eps, slice, want)
	}

	// This apiserver stops: its lease ends and it drops out at once.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { k.run(rctx); close(done) }()
	cancel()
	<-done
	if !slices.Contains(leases.removed, "10.99.0.11") {
		t.Errorf("stopping did not end this apiserver's lease: removed %v", leases.removed)
	}
	want = []string{"10.99.0.12"}
	if eps, slice := endpointIPs(t, ctx, k); !slices.Equal(eps, want) || !slices.Equal(slice, want) {
		t.Errorf("after stopping: endpoints %v, slice %v, want %v", eps, slice, want)
	}
}
