package endpointutil

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestShouldPodBeInEndpoints(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name               string
		restart            corev1.RestartPolicy
		phase              corev1.PodPhase
		ip                 string
		deleting           bool
		includeTerminating bool
		want               bool
	}{
		{name: "running", phase: corev1.PodRunning, ip: "10.0.0.1", want: true},
		{name: "no IP", phase: corev1.PodRunning},
		{name: "terminating", phase: corev1.PodRunning, ip: "10.0.0.1", deleting: true},
		{name: "terminating included", phase: corev1.PodRunning, ip: "10.0.0.1", deleting: true, includeTerminating: true, want: true},
		{name: "never: succeeded", restart: corev1.RestartPolicyNever, phase: corev1.PodSucceeded, ip: "10.0.0.1"},
		{name: "never: failed", restart: corev1.RestartPolicyNever, phase: corev1.PodFailed, ip: "10.0.0.1"},
		{name: "on failure: failed restarts", restart: corev1.RestartPolicyOnFailure, phase: corev1.PodFailed, ip: "10.0.0.1", want: true},
		{name: "on failure: succeeded", restart: corev1.RestartPolicyOnFailure, phase: corev1.PodSucceeded, ip: "10.0.0.1"},
		{name: "always: succeeded restarts", restart: corev1.RestartPolicyAlways, phase: corev1.PodSucceeded, ip: "10.0.0.1", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tt.restart}, Status: corev1.PodStatus{Phase: tt.phase, PodIP: tt.ip}}
			if tt.deleting {
				p.DeletionTimestamp = &now
			}
			if got := ShouldPodBeInEndpoints(p, tt.includeTerminating); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFindPort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}}},
			{Name: "init", Ports: []corev1.ContainerPort{{Name: "setup", ContainerPort: 7000}}},
		},
		Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080},
			{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
		}}},
	}}
	tests := []struct {
		name     string
		port     corev1.ServicePort
		want     int
		wantFail bool
	}{
		{name: "number", port: corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(9000)}, want: 9000},
		{name: "unset target is the port", port: corev1.ServicePort{Port: 80}, want: 80},
		{name: "name, default TCP", port: corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, want: 8080},
		{name: "name with protocol", port: corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}, want: 5353},
		{name: "name with another protocol", port: corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("dns")}, wantFail: true},
		{name: "sidecar port", port: corev1.ServicePort{Port: 1, TargetPort: intstr.FromString("proxy")}, want: 15001},
		{name: "plain init container port is not served", port: corev1.ServicePort{Port: 1, TargetPort: intstr.FromString("setup")}, wantFail: true},
		{name: "unknown name", port: corev1.ServicePort{Port: 1, TargetPort: intstr.FromString("nope")}, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindPort(pod, &tt.port)
			if (err != nil) != tt.wantFail {
				t.Fatalf("err %v, want failure %v", err, tt.wantFail)
			}
			if got != tt.want {
				t.Errorf("port %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPodIPAndFamily(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00:0::1"}}}}
	if got := PodIP(pod, corev1.IPv6Protocol); got != "fd00::1" {
		t.Errorf("IPv6 %q", got)
	}
	if got := PodIP(pod, corev1.IPv4Protocol); got != "10.0.0.1" {
		t.Errorf("IPv4 %q", got)
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "fd00::10"}}
	if got := ServiceFamily(svc, "10.0.0.1"); got != corev1.IPv6Protocol {
		t.Errorf("family from cluster IP %s", got)
	}
	svc = &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
	if got := ServiceFamily(svc, "fd00::1"); got != corev1.IPv6Protocol {
		t.Errorf("family from pod IP %s", got)
	}
}

func TestPodHandler(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	svcs := factory.Core().V1().Services()
	for _, s := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "api"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "manual"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
	} {
		if err := svcs.Informer().GetStore().Add(s); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	h := PodHandler(svcs.Lister(), func(key string) { got = append(got, key) })
	base := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "1", Labels: map[string]string{"app": "web"}},
		Status:     corev1.PodStatus{PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}},
	}
	next := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := base.DeepCopy()
		p.ResourceVersion = "2"
		mut(p)
		return p
	}
	tests := []struct {
		name  string
		event func()
		want  []string
	}{
		{name: "add", event: func() { h.OnAdd(base, false) }, want: []string{"ns/web"}},
		{name: "delete tombstone", event: func() { h.OnDelete(cache.DeletedFinalStateUnknown{Obj: base}) }, want: []string{"ns/web"}},
		{name: "resync of the same version", event: func() { h.OnUpdate(base, base) }},
		{name: "irrelevant change", event: func() { h.OnUpdate(base, next(func(p *corev1.Pod) { p.Annotations = map[string]string{"x": "y"} })) }},
		{name: "readiness", event: func() {
			h.OnUpdate(base, next(func(p *corev1.Pod) {
				p.Status.Conditions[0].Status = corev1.ConditionTrue
				p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Now())
			}))
		}, want: []string{"ns/web"}},
		{name: "relabel reaches old and new services", event: func() {
			h.OnUpdate(base, next(func(p *corev1.Pod) { p.Labels = map[string]string{"app": "api"} }))
		}, want: []string{"ns/web", "ns/api"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			tt.event()
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("enqueued %v, want %v", got, want)
			}
		})
	}
}

func TestTriggerTimeTracker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", CreationTimestamp: metav1.NewTime(t0)}}
	pod := func(name string, ready time.Time) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0)},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, LastTransitionTime: metav1.NewTime(ready)}}}}
	}
	tr := NewTriggerTimeTracker()
	if got := tr.Compute(svc, []*corev1.Pod{pod("a", t0.Add(5*time.Second))}); !got.Equal(t0) {
		t.Errorf("first computation %v, want the service creation %v", got, t0)
	}
	if got := tr.Compute(svc, []*corev1.Pod{pod("a", t0.Add(5*time.Second))}); !got.IsZero() {
		t.Errorf("nothing changed, got %v", got)
	}
	got := tr.Compute(svc, []*corev1.Pod{pod("a", t0.Add(20*time.Second)), pod("b", t0.Add(10*time.Second))})
	if !got.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("two changes, got %v, want the earlier", got)
	}
	tr.Delete("ns", "web")
	if got := tr.Compute(svc, []*corev1.Pod{pod("a", t0.Add(20*time.Second))}); !got.Equal(t0) {
		t.Errorf("after Delete, got %v, want the service creation", got)
	}
}
