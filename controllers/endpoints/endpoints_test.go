package endpoints

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

type fixture struct {
	client *fake.Clientset
	c      *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	core := f.Core().V1()
	c, err := New(client, core.Pods(), core.Services(), core.Endpoints(), record.NewFakeRecorder(100), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Pod:
			err = core.Pods().Informer().GetStore().Add(o)
		case *corev1.Service:
			err = core.Services().Informer().GetStore().Add(o)
		case *corev1.Endpoints:
			err = core.Endpoints().Informer().GetStore().Add(o)
		default:
			t.Fatalf("unexpected %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{client: client, c: c}
}

func service(name string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			ClusterIP:  "10.43.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      ports,
		},
	}
}

func svcPort(name string, port int32, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: target, Protocol: corev1.ProtocolTCP}
}

type podOpt func(*corev1.Pod)

func pod(name, ip string, ready bool, opts ...podOpt) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
				{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			}}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIP:      ip,
			PodIPs:     []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func terminating(p *corev1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}

func addr(name, ip string) corev1.EndpointAddress {
	return corev1.EndpointAddress{IP: ip, NodeName: ptr.To("node-1"), TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, UID: types.UID(name + "-uid")}}
}

func epPort(name string, port int32) corev1.EndpointPort {
	return corev1.EndpointPort{Name: name, Port: port, Protocol: corev1.ProtocolTCP}
}

func TestSync(t *testing.T) {
	http := svcPort("http", 80, intstr.FromString("web"))
	metrics := svcPort("metrics", 9090, intstr.FromInt32(9100))
	wantLabels := map[string]string{"tier": "front", LabelManagedBy: ControllerName}
	tests := []struct {
		name        string
		objs        []runtime.Object
		key         string
		wantVerb    string // create, update, delete or "" for none
		wantSubsets []corev1.EndpointSubset
		wantLabels  map[string]string
		wantErr     bool
	}{
		{
			name: "ready and not-ready pods with a named port",
			objs: []runtime.Object{
				service("web", http),
				pod("a", "10.42.0.2", true), pod("b", "10.42.0.3", true), pod("c", "10.42.0.4", false),
				pod("no-ip", "", true),
				pod("other", "10.42.0.9", true, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }),
			},
			key:      "ns/web",
			wantVerb: "create",
			wantSubsets: []corev1.EndpointSubset{{
				Addresses:         []corev1.EndpointAddress{addr("a", "10.42.0.2"), addr("b", "10.42.0.3")},
				NotReadyAddresses: []corev1.EndpointAddress{addr("c", "10.42.0.4")},
				Ports:             []corev1.EndpointPort{epPort("http", 8080)},
			}},
			wantLabels: wantLabels,
		},
		{
			name: "pods lacking a named port are left out of that port only",
			objs: []runtime.Object{
				service("web", http, metrics),
				pod("a", "10.42.0.2", true),
				pod("b", "10.42.0.3", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil }),
			},
			key:      "ns/web",
			wantVerb: "create",
			wantSubsets: []corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{addr("a", "10.42.0.2")}, Ports: []corev1.EndpointPort{epPort("http", 8080)}},
				{Addresses: []corev1.EndpointAddress{addr("a", "10.42.0.2"), addr("b", "10.42.0.3")}, Ports: []corev1.EndpointPort{epPort("metrics", 9100)}},
			},
			wantLabels: wantLabels,
		},
		{
			name: "terminating and finished pods are left out",
			objs: []runtime.Object{
				service("web", http),
				pod("a", "10.42.0.2", true),
				pod("going", "10.42.0.3", true, terminating),
				pod("done", "10.42.0.4", false, func(p *corev1.Pod) {
					p.Spec.RestartPolicy = corev1.RestartPolicyNever
					p.Status.Phase = corev1.PodSucceeded
				}),
				pod("failed-but-restarting", "10.42.0.5", false, func(p *corev1.Pod) {
					p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
					p.Status.Phase = corev1.PodFailed
				}),
			},
			key:      "ns/web",
			wantVerb: "create",
			wantSubsets: []corev1.EndpointSubset{{
				Addresses:         []corev1.EndpointAddress{addr("a", "10.42.0.2")},
				NotReadyAddresses: []corev1.EndpointAddress{addr("failed-but-restarting", "10.42.0.5")},
				Ports:             []corev1.EndpointPort{epPort("http", 8080)},
			}},
			wantLabels: wantLabels,
		},
		{
			name: "publishNotReadyAddresses lists every pod as ready, terminating ones too",
			objs: []runtime.Object{
				func() *corev1.Service {
					s := service("web", http)
					s.Spec.PublishNotReadyAddresses = true
					return s
				}(),
				pod("a", "10.42.0.2", false), pod("b", "10.42.0.3", true, terminating),
			},
			key:      "ns/web",
			wantVerb: "create",
			wantSubsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{addr("a", "10.42.0.2"), addr("b", "10.42.0.3")},
				Ports:     []corev1.EndpointPort{epPort("http", 8080)},
			}},
			wantLabels: wantLabels,
		},
		{
			name: "headless service without ports, hostname for its subdomain",
			objs: []runtime.Object{
				func() *corev1.Service {
					s := service("db")
					s.Spec.ClusterIP = corev1.ClusterIPNone
					return s
				}(),
				pod("db-0", "10.42.0.2", true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-0", "db" }),
				pod("db-1", "10.42.0.3", true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-1", "elsewhere" }),
			},
			key:      "ns/db",
			wantVerb: "create",
			wantSubsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{
					func() corev1.EndpointAddress { a := addr("db-0", "10.42.0.2"); a.Hostname = "db-0"; return a }(),
					addr("db-1", "10.42.0.3"),
				},
			}},
			wantLabels: map[string]string{"tier": "front", LabelManagedBy: ControllerName, corev1.IsHeadlessService: ""},
		},
		{
			name: "IPv6 service uses the pods' IPv6 addresses",
			objs: []runtime.Object{
				func() *corev1.Service {
					s := service("web", http)
					s.Spec.ClusterIP, s.Spec.IPFamilies = "fd00::10", []corev1.IPFamily{corev1.IPv6Protocol}
					return s
				}(),
				pod("a", "10.42.0.2", true, func(p *corev1.Pod) {
					p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "fd00:0:0::2"})
				}),
				pod("v4-only", "10.42.0.3", true),
			},
			key:      "ns/web",
			wantVerb: "create",
			wantSubsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{addr("a", "fd00::2")},
				Ports:     []corev1.EndpointPort{epPort("http", 8080)},
			}},
			wantLabels: wantLabels,
		},
		{
			name: "changed endpoints are updated",
			objs: []runtime.Object{
				service("web", http),
				pod("a", "10.42.0.2", true),
				&corev1.Endpoints{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "5", Labels: wantLabels},
					Subsets: []corev1.EndpointSubset{{
						NotReadyAddresses: []corev1.EndpointAddress{addr("a", "10.42.0.2")},
						Ports:             []corev1.EndpointPort{epPort("http", 8080)},
					}},
				},
			},
			key:      "ns/web",
			wantVerb: "update",
			wantSubsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{addr("a", "10.42.0.2")},
				Ports:     []corev1.EndpointPort{epPort("http", 8080)},
			}},
			wantLabels: wantLabels,
		},
		{
			name: "labels follow the service",
			objs: []runtime.Object{
				service("web", http),
				pod("a", "10.42.0.2", true),
				&corev1.Endpoints{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "5", Labels: map[string]string{"tier": "back", LabelManagedBy: ControllerName}},
					Subsets: []corev1.EndpointSubset{{
						Addresses: []corev1.EndpointAddress{addr("a", "10.42.0.2")},
						Ports:     []corev1.EndpointPort{epPort("http", 8080)},
					}},
				},
			},
			key:      "ns/web",
			wantVerb: "update",
			wantSubsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{addr("a", "10.42.0.2")},
				Ports:     []corev1.EndpointPort{epPort("http", 8080)},
			}},
			wantLabels: wantLabels,
		},
		{
			name: "up to date endpoints are not written, whatever the target resource versions",
			objs: []runtime.Object{
				service("web", http),
				pod("a", "10.42.0.2", true),
				&corev1.Endpoints{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "5", Labels: wantLabels},
					Subsets: []corev1.EndpointSubset{{
						Addresses: []corev1.EndpointAddress{func() corev1.EndpointAddress {
							a := addr("a", "10.42.0.2")
							a.TargetRef.ResourceVersion = "77"
							return a
						}()},
						Ports: []corev1.EndpointPort{epPort("http", 8080)},
					}},
				},
			},
			key: "ns/web",
		},
		{
			name:     "endpoints of a deleted service are deleted",
			objs:     []runtime.Object{&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "5"}}},
			key:      "ns/web",
			wantVerb: "delete",
		},
		{
			name: "services without a selector are left to their users",
			objs: []runtime.Object{func() *corev1.Service {
				s := service("manual", http)
				s.Spec.Selector = nil
				return s
			}(), pod("a", "10.42.0.2", true)},
			key: "ns/manual",
		},
		{
			name: "ExternalName services get no endpoints",
			objs: []runtime.Object{func() *corev1.Service {
				s := service("ext")
				s.Spec.Type, s.Spec.ExternalName, s.Spec.ClusterIP = corev1.ServiceTypeExternalName, "example.com", ""
				return s
			}(), pod("a", "10.42.0.2", true)},
			key: "ns/ext",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.objs...)
			f.client.ClearActions()
			err := f.c.sync(context.Background(), tt.key)
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync error %v, want error %v", err, tt.wantErr)
			}
			var verbs []string
			var written *corev1.Endpoints
			for _, a := range f.client.Actions() {
				verbs = append(verbs, a.GetVerb())
				switch a := a.(type) {
				case clienttesting.CreateAction:
					written = a.GetObject().(*corev1.Endpoints)
				case clienttesting.UpdateAction:
					written = a.GetObject().(*corev1.Endpoints)
				}
			}
			var want []string
			if tt.wantVerb != "" {
				want = []string{tt.wantVerb}
			}
			if !cmp.Equal(verbs, want) {
				t.Fatalf("actions %v, want %v", verbs, want)
			}
			if written == nil {
				return
			}
			if diff := cmp.Diff(tt.wantSubsets, written.Subsets); diff != "" {
				t.Errorf("subsets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLabels, written.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if _, ok := written.Annotations[corev1.EndpointsOverCapacity]; ok {
				t.Errorf("over-capacity annotation on %d addresses", countAddresses(written.Subsets))
			}
		})
	}
}

func TestSyncOverCapacity(t *testing.T) {
	objs := []runtime.Object{service("web", svcPort("http", 80, intstr.FromInt32(8080)))}
	for i := range MaxCapacity + 1 {
		objs = append(objs, pod(fmt.Sprintf("p%04d", i), fmt.Sprintf("10.42.%d.%d", i/250, i%250+1), true))
	}
	objs = append(objs, pod("unready", "10.42.9.9", false))
	f := newFixture(t, objs...)
	if err := f.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	var ep *corev1.Endpoints
	for _, a := range f.client.Actions() {
		if c, ok := a.(clienttesting.CreateAction); ok {
			ep = c.GetObject().(*corev1.Endpoints)
		}
	}
	if ep == nil {
		t.Fatal("no endpoints created")
	}
	if got := ep.Annotations[corev1.EndpointsOverCapacity]; got != "truncated" {
		t.Errorf("over-capacity annotation %q, want truncated", got)
	}
	if n := countAddresses(ep.Subsets); n != MaxCapacity {
		t.Errorf("%d addresses kept, want %d", n, MaxCapacity)
	}
	for _, s := range ep.Subsets {
		if len(s.NotReadyAddresses) > 0 {
			t.Errorf("not-ready addresses kept although ready ones exceed the capacity")
		}
	}
}

func TestSyncStaleCache(t *testing.T) {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "5"}}
	f := newFixture(t, service("web", svcPort("http", 80, intstr.FromInt32(8080))), pod("a", "10.42.0.2", true), ep)
	f.c.stale.mark(ep)
	if err := f.c.sync(context.Background(), "ns/web"); err == nil {
		t.Fatal("sync with a cached version known to be replaced succeeded")
	}
	if n := len(f.client.Actions()); n != 0 {
		t.Fatalf("%d actions on a stale cache", n)
	}
}

func TestQueueLeftovers(t *testing.T) {
	f := newFixture(t,
		&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan"}},
		&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "lock", Annotations: map[string]string{"control-plane.alpha.kubernetes.io/leader": "{}"}}},
	)
	f.c.queueLeftovers()
	if n := f.c.queue.Len(); n != 1 {
		t.Fatalf("queued %d, want only the orphan", n)
	}
	key, _ := f.c.queue.Get()
	if key != "ns/orphan" {
		t.Fatalf("queued %q", key)
	}
}
