package servicelb

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func node(name string, ready bool, addrs ...corev1.NodeAddress) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}, Addresses: addrs},
	}
}

func internal(ip string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}
}

func lb(name string, created int, port int32, mut ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(time.Unix(int64(created), 0))},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: port, Protocol: corev1.ProtocolTCP}}},
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

func vip(ips ...string) []corev1.LoadBalancerIngress {
	var out []corev1.LoadBalancerIngress
	for _, ip := range ips {
		out = append(out, corev1.LoadBalancerIngress{IP: ip, IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)})
	}
	return out
}

func TestSync(t *testing.T) {
	for _, tc := range []struct {
		name  string
		objs  []runtime.Object
		key   string
		want  []corev1.LoadBalancerIngress
		event string
	}{{
		name: "ready nodes' internal addresses, sorted",
		objs: []runtime.Object{node("b", true, internal("192.0.2.20")), node("a", true, internal("192.0.2.10")),
			node("down", false, internal("192.0.2.30")), lb("web", 1, 80)},
		key: "ns/web", want: vip("192.0.2.10", "192.0.2.20"), event: "UpdatedLoadBalancer",
	}, {
		name: "external addresses win",
		objs: []runtime.Object{node("a", true, internal("10.0.0.1"), corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "198.51.100.1"}),
			node("b", true, internal("10.0.0.2")), lb("web", 1, 80)},
		key: "ns/web", want: vip("198.51.100.1"),
	}, {
		name: "only nodes labelled enablelb when any is",
		objs: []runtime.Object{node("a", true, internal("192.0.2.10")),
			func() *corev1.Node {
				n := node("b", true, internal("192.0.2.20"))
				n.Labels = map[string]string{LabelEnableLB: "true"}
				return n
			}(), lb("web", 1, 80)},
		key: "ns/web", want: vip("192.0.2.20"),
	}, {
		name: "a younger Service on the same port waits",
		objs: []runtime.Object{node("a", true, internal("192.0.2.10")), lb("old", 1, 80), lb("young", 2, 80)},
		key:  "ns/young", want: nil, event: "PortInUse",
	}, {
		name: "same port, other protocol: no conflict",
		objs: []runtime.Object{node("a", true, internal("192.0.2.10")), lb("old", 1, 53),
			lb("young", 2, 53, func(s *corev1.Service) { s.Spec.Ports[0].Protocol = corev1.ProtocolUDP })},
		key: "ns/young", want: vip("192.0.2.10"),
	}, {
		name: "a load-balancer class of its own is left alone",
		objs: []runtime.Object{node("a", true, internal("192.0.2.10")),
			lb("web", 1, 80, func(s *corev1.Service) {
				s.Spec.LoadBalancerClass = ptr.To("example.com/lb")
				s.Status.LoadBalancer.Ingress = vip("203.0.113.5")
			})},
		key: "ns/web", want: vip("203.0.113.5"),
	}, {
		name: "no longer a LoadBalancer: cleared",
		objs: []runtime.Object{node("a", true, internal("192.0.2.10")),
			lb("web", 1, 80, func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeClusterIP
				s.Status.LoadBalancer.Ingress = vip("192.0.2.10")
			})},
		key: "ns/web", want: nil,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objs...)
			factory := informers.NewSharedInformerFactory(client, 0)
			rec := record.NewFakeRecorder(10)
			c, err := New(client, factory.Core().V1().Services(), factory.Core().V1().Nodes(), rec, clocktesting.NewFakeClock(time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			factory.Start(ctx.Done())
			cache.WaitForCacheSync(ctx.Done(), c.synced...)
			if err := c.sync(ctx, tc.key); err != nil {
				t.Fatal(err)
			}
			ns, name, _ := cache.SplitMetaNamespaceKey(tc.key)
			got, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Status.LoadBalancer.Ingress); diff != "" {
				t.Errorf("ingress (-want +got):\n%s", diff)
			}
			var ev string
			select {
			case ev = <-rec.Events:
			default:
			}
			if tc.event != "" && !strings.Contains(ev, tc.event) {
				t.Errorf("event %q, want one with %q", ev, tc.event)
			}
		})
	}
}
