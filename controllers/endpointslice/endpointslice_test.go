package endpointslice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

type fixture struct {
	client *fake.Clientset
	c      *Controller
	// writes summarizes the slice writes ("create web-new1 IPv4 a,b"), and
	// written holds the written slices as the server returned them.
	writes  []string
	written []*discoveryv1.EndpointSlice
	slices  cache.Store
}

// newFixture gives the fake clientset what the apiserver does on writes:
// names from generateName, UIDs and generations.
func newFixture(t *testing.T, maxPerSlice int, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	fx := &fixture{client: client}
	n := 0
	client.PrependReactor("create", "endpointslices", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s := a.(clienttesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		n++
		if s.Name == "" {
			s.Name = fmt.Sprintf("%snew%d", s.GenerateName, n)
		}
		s.UID = types.UID(s.Name + "-uid")
		s.Generation = 1
		fx.writes, fx.written = append(fx.writes, write("create", s)), append(fx.written, s.DeepCopy())
		return false, nil, nil
	})
	client.PrependReactor("update", "endpointslices", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s := a.(clienttesting.UpdateAction).GetObject().(*discoveryv1.EndpointSlice)
		s.Generation++
		fx.writes, fx.written = append(fx.writes, write("update", s)), append(fx.written, s.DeepCopy())
		return false, nil, nil
	})
	client.PrependReactor("delete", "endpointslices", func(a clienttesting.Action) (bool, runtime.Object, error) {
		fx.writes = append(fx.writes, "delete "+a.(clienttesting.DeleteAction).GetName())
		return false, nil, nil
	})
	f := informers.NewSharedInformerFactory(client, 0)
	inf := Informers{
		Pods:           f.Core().V1().Pods(),
		Services:       f.Core().V1().Services(),
		Nodes:          f.Core().V1().Nodes(),
		EndpointSlices: f.Discovery().V1().EndpointSlices(),
	}
	c, err := New(client, inf, record.NewFakeRecorder(100), maxPerSlice, 0)
	if err != nil {
		t.Fatal(err)
	}
	fx.c = c
	fx.slices = inf.EndpointSlices.Informer().GetStore()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Pod:
			err = inf.Pods.Informer().GetStore().Add(o)
		case *corev1.Service:
			err = inf.Services.Informer().GetStore().Add(o)
		case *corev1.Node:
			err = inf.Nodes.Informer().GetStore().Add(o)
		case *discoveryv1.EndpointSlice:
			err = inf.EndpointSlices.Informer().GetStore().Add(o)
		default:
			t.Fatalf("unexpected %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

type svcOpt func(*corev1.Service)

func service(opts ...svcOpt) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "svc-uid", Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			ClusterIP:  "10.43.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

type podOpt func(*corev1.Pod)

func pod(name string, ready bool, opts ...podOpt) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	i := 0
	for _, r := range name {
		i = i*31 + int(r)
	}
	ip := fmt.Sprintf("10.42.%d.%d", (i/250)%250, i%250+1)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		}}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func node(name, zone string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if zone != "" {
		n.Labels = map[string]string{corev1.LabelTopologyZone: zone}
	}
	return n
}

// slice builds an existing slice of svc holding pods as the controller
// would have written them.
func slice(name string, svc *corev1.Service, t discoveryv1.AddressType, pods ...*corev1.Pod) *discoveryv1.EndpointSlice {
	s := newSlice(svc, t, []discoveryv1.EndpointPort{})
	s.Name, s.GenerateName, s.UID, s.Generation, s.ResourceVersion = name, "", types.UID(name+"-uid"), 1, "1"
	for _, p := range pods {
		s.Ports = endpointPorts(svc, p)
		s.Endpoints = append(s.Endpoints, *podToEndpoint(p, node("node-1", ""), svc, t))
	}
	return s
}

// write summarizes one slice write: "create web-new1 IPv4 a,b".
func write(verb string, s *discoveryv1.EndpointSlice) string {
	var names []string
	for _, ep := range s.Endpoints {
		names = append(names, ep.TargetRef.Name)
	}
	slices.Sort(names)
	return fmt.Sprintf("%s %s %s %s", verb, s.Name, s.AddressType, strings.Join(names, ","))
}

func TestSync(t *testing.T) {
	svc := service()
	a, b, c := pod("a", true), pod("b", false), pod("c", true, func(p *corev1.Pod) {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	})
	tests := []struct {
		name        string
		maxPerSlice int
		objs        []runtime.Object
		want        []string
		wantErr     bool
	}{
		{
			name: "new service gets one slice with ready, not-ready and terminating pods",
			objs: []runtime.Object{svc, node("node-1", ""), a, b, c, pod("no-ip", true, func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil })},
			want: []string{"create web-new1 IPv4 a,b,c"},
		},
		{
			name: "no pods: a placeholder",
			objs: []runtime.Object{svc},
			want: []string{"create web-new1 IPv4 "},
		},
		{
			name: "the placeholder stays",
			objs: []runtime.Object{svc, slice("web-p", svc, discoveryv1.AddressTypeIPv4)},
		},
		{
			name: "pods take over the placeholder's name",
			objs: []runtime.Object{svc, node("node-1", ""), a, slice("web-p", svc, discoveryv1.AddressTypeIPv4)},
			want: []string{"update web-p IPv4 a"},
		},
		{
			name:        "endpoints are spread over slices of at most the maximum",
			maxPerSlice: 2,
			objs:        []runtime.Object{svc, node("node-1", ""), pod("p1", true), pod("p2", true), pod("p3", true), pod("p4", true), pod("p5", true)},
			want:        []string{"create web-new1 IPv4 p1,p2", "create web-new2 IPv4 p3,p4", "create web-new3 IPv4 p5"},
		},
		{
			name: "a changed endpoint rewrites only its slice",
			objs: []runtime.Object{svc, node("node-1", ""), pod("a", false), pod("x", true),
				slice("web-1", svc, discoveryv1.AddressTypeIPv4, pod("a", true)), slice("web-2", svc, discoveryv1.AddressTypeIPv4, pod("x", true))},
			want: []string{"update web-1 IPv4 a"},
		},
		{
			name: "up to date slices are not written",
			objs: []runtime.Object{svc, node("node-1", ""), a, slice("web-1", svc, discoveryv1.AddressTypeIPv4, a)},
		},
		{
			name:        "new endpoints fill a slice being rewritten first",
			maxPerSlice: 2,
			objs: []runtime.Object{svc, node("node-1", ""), pod("a", true), pod("n", true), pod("x", true),
				slice("web-1", svc, discoveryv1.AddressTypeIPv4, pod("a", true), pod("gone", true)),
				slice("web-2", svc, discoveryv1.AddressTypeIPv4, pod("x", true))},
			want: []string{"update web-1 IPv4 a,n"},
		},
		{
			name:        "new endpoints go to an unchanged slice when they all fit",
			maxPerSlice: 3,
			objs: []runtime.Object{svc, node("node-1", ""), pod("a", true), pod("n", true), pod("m", true),
				slice("web-1", svc, discoveryv1.AddressTypeIPv4, pod("a", true))},
			want: []string{"update web-1 IPv4 a,m,n"},
		},
		{
			name:        "new endpoints that do not fit get a new slice",
			maxPerSlice: 2,
			objs: []runtime.Object{svc, node("node-1", ""), pod("a", true), pod("n", true), pod("m", true),
				slice("web-1", svc, discoveryv1.AddressTypeIPv4, pod("a", true))},
			want: []string{"create web-new1 IPv4 m,n"},
		},
		{
			name: "an emptied slice is deleted",
			objs: []runtime.Object{svc, node("node-1", ""), pod("x", true),
				slice("web-1", svc, discoveryv1.AddressTypeIPv4, pod("gone", true)), slice("web-2", svc, discoveryv1.AddressTypeIPv4, pod("x", true))},
			want: []string{"delete web-1"},
		},
		{
			name: "pods resolving a named port differently get separate slices",
			objs: []runtime.Object{svc, node("node-1", ""), pod("a", true),
				pod("b", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 })},
			want: []string{"create web-new1 IPv4 a", "create web-new2 IPv4 b"},
		},
		{
			name: "dual-stack service gets a slice per family",
			objs: []runtime.Object{
				service(func(s *corev1.Service) {
					s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
				}),
				node("node-1", ""),
				pod("a", true, func(p *corev1.Pod) { p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "fd00::5"}) }),
			},
			want: []string{"create web-new1 IPv4 a", "create web-new2 IPv6 a"},
		},
		{
			name: "slices of an address type no longer served go",
			objs: []runtime.Object{svc, node("node-1", ""), a, slice("web-1", svc, discoveryv1.AddressTypeIPv4, a),
				slice("web-6", svc, discoveryv1.AddressTypeIPv6)},
			want: []string{"delete web-6"},
		},
		{
			name: "slices of an older service of the same name are replaced, not reused",
			objs: []runtime.Object{svc, node("node-1", ""), a,
				slice("web-old", service(func(s *corev1.Service) { s.UID = "old-uid" }), discoveryv1.AddressTypeIPv4, a)},
			want: []string{"create web-new1 IPv4 a", "delete web-old"},
		},
		{
			name:    "pods on unknown nodes are skipped and the service retried",
			objs:    []runtime.Object{svc, node("node-1", ""), a, pod("lost", true, func(p *corev1.Pod) { p.Spec.NodeName = "node-9" })},
			want:    []string{"create web-new1 IPv4 a"},
			wantErr: true,
		},
		{
			name: "service without selector is left alone",
			objs: []runtime.Object{service(func(s *corev1.Service) { s.Spec.Selector = nil }), a},
		},
		{
			name: "ExternalName service is left alone",
			objs: []runtime.Object{service(func(s *corev1.Service) { s.Spec.Type, s.Spec.ClusterIP = corev1.ServiceTypeExternalName, "" }), a},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.maxPerSlice == 0 {
				tt.maxPerSlice = DefaultMaxEndpointsPerSlice
			}
			f := newFixture(t, tt.maxPerSlice, tt.objs...)
			err := f.c.sync(context.Background(), "ns/web")
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync error %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, f.writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSliceContent(t *testing.T) {
	svc := service(func(s *corev1.Service) {
		s.Spec.ClusterIP = corev1.ClusterIPNone
		s.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferSameNode)
		s.Labels[discoveryv1.LabelManagedBy] = "someone-else"
	})
	svc.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ready := pod("a", true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a", "web" })
	notReady := pod("b", false)
	going := pod("c", true, func(p *corev1.Pod) {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	})
	f := newFixture(t, DefaultMaxEndpointsPerSlice, svc, node("node-1", "zone-a"), ready, notReady, going)
	if err := f.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	if len(f.written) != 1 {
		t.Fatalf("writes %v, want 1", f.writes)
	}
	s := f.written[0]
	wantLabels := map[string]string{
		"tier": "front", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName, corev1.IsHeadlessService: "",
	}
	if diff := cmp.Diff(wantLabels, s.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "svc-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	if diff := cmp.Diff(wantOwner, s.OwnerReferences); diff != "" {
		t.Errorf("owner (-want +got):\n%s", diff)
	}
	if s.GenerateName != "web-" {
		t.Errorf("generateName %q", s.GenerateName)
	}
	wantPorts := []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}}
	if diff := cmp.Diff(wantPorts, s.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	hints := &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}, ForNodes: []discoveryv1.ForNode{{Name: "node-1"}}}
	ep := func(p *corev1.Pod, ready, serving, terminating bool, hostname *string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{p.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
			Hostname:   hostname,
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: p.Name, UID: p.UID},
			NodeName:   ptr.To("node-1"),
			Zone:       ptr.To("zone-a"),
			Hints:      hints,
		}
	}
	want := []discoveryv1.Endpoint{
		ep(ready, true, true, false, ptr.To("a")),
		ep(notReady, false, false, false, nil),
		ep(going, false, true, true, nil),
	}
	got := slices.Clone(s.Endpoints)
	slices.SortFunc(got, func(x, y discoveryv1.Endpoint) int { return strings.Compare(x.TargetRef.Name, y.TargetRef.Name) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	if _, ok := s.Annotations[corev1.EndpointsLastChangeTriggerTime]; !ok {
		t.Errorf("no trigger time annotation")
	}
}

func TestHintsNeedEveryZone(t *testing.T) {
	svc := service(func(s *corev1.Service) {
		s.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferClose)
	})
	f := newFixture(t, DefaultMaxEndpointsPerSlice, svc, node("node-1", "zone-a"), node("node-2", ""),
		pod("a", true), pod("b", true, func(p *corev1.Pod) { p.Spec.NodeName = "node-2" }))
	if err := f.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	for _, ep := range f.written[0].Endpoints {
		if ep.Hints != nil {
			t.Errorf("endpoint %s has hints although node-2 has no zone", ep.TargetRef.Name)
		}
	}
}

func TestTrackerGuardsAgainstStaleCache(t *testing.T) {
	svc := service()
	f := newFixture(t, DefaultMaxEndpointsPerSlice, svc, node("node-1", ""), pod("a", true))
	ctx := context.Background()
	if err := f.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if len(f.written) != 1 {
		t.Fatalf("writes %v, want one create", f.writes)
	}
	// The informer has not seen the created slice: syncing again must wait
	// rather than create a second one.
	if err := f.c.sync(ctx, "ns/web"); err != errStaleCache {
		t.Fatalf("sync on a lagging cache: %v, want errStaleCache", err)
	}
	if n := len(f.writes); n != 1 {
		t.Fatalf("writes on a lagging cache: %v", f.writes)
	}
	// Once the cache has it, events about it need no sync and a sync is a
	// no-op.
	created := f.written[0]
	if tracked := f.c.tracker.gens[serviceKey(svc)]; len(tracked) != 1 {
		t.Fatalf("tracked %v, want the created slice", tracked)
	}
	if err := f.slices.Add(created); err != nil {
		t.Fatal(err)
	}
	if err := f.c.sync(ctx, "ns/web"); err != nil {
		t.Fatalf("sync once the cache caught up: %v", err)
	}
	if len(f.writes) != 1 {
		t.Fatalf("writes after the cache caught up: %v", f.writes)
	}
	if f.c.tracker.shouldSync(created) {
		t.Errorf("our own write looks foreign")
	}
	other := created.DeepCopy()
	other.Generation++
	if !f.c.tracker.shouldSync(other) {
		t.Errorf("a newer generation written by someone else needs a sync")
	}
	if f.c.tracker.handleDeletion(created) {
		t.Errorf("a deletion we did not make was taken for ours")
	}
	f.c.tracker.deleted(created)
	if !f.c.tracker.handleDeletion(created) {
		t.Errorf("our own deletion was not recognised")
	}
}
