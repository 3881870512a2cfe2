package service

import (
	"context"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newTestAllocators(t *testing.T) (*Allocators, context.Context) {
	t.Helper()
	kv, prefix := testKV(t)
	return &Allocators{
		IPs:   NewIPAllocator(kv, prefix+"ips/", mustCIDR(t, "10.0.0.0/28")),
		Ports: NewPortAllocator(kv, prefix+"ports/", mustPortRange(t, "30000-30009")),
	}, testCtx(t)
}

// owned lists the IPs and ports allocated to owner.
func owned(t *testing.T, ctx context.Context, a *Allocators, owner string) (ips, ports []string) {
	t.Helper()
	usedIPs, err := a.IPs.Used(ctx)
	if err != nil {
		t.Fatal(err)
	}
	usedPorts, err := a.Ports.Used(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, al := range usedIPs {
		if al.Owner == owner {
			ips = append(ips, name)
		}
	}
	for name, al := range usedPorts {
		if al.Owner == owner {
			ports = append(ports, name)
		}
	}
	slices.Sort(ips)
	slices.Sort(ports)
	return ips, ports
}

// allocationsOf is what svc should own: its cluster IP and node ports.
func allocationsOf(svc *corev1.Service) (ips, ports []string) {
	if needsClusterIP(svc) {
		if ip := net.ParseIP(svc.Spec.ClusterIP); ip != nil {
			ips = []string{ip.String()}
		}
	}
	for p := range nodePorts(svc) {
		ports = append(ports, strconv.Itoa(p))
	}
	slices.Sort(ports)
	return ips, ports
}

func assertOwns(t *testing.T, ctx context.Context, a *Allocators, owner string, wantIPs, wantPorts []string) {
	t.Helper()
	ips, ports := owned(t, ctx, a, owner)
	if !slices.Equal(ips, wantIPs) {
		t.Errorf("%s owns IPs %v, want %v", owner, ips, wantIPs)
	}
	if !slices.Equal(ports, wantPorts) {
		t.Errorf("%s owns ports %v, want %v", owner, ports, wantPorts)
	}
}

func newService(typ corev1.ServiceType, mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	if typ == corev1.ServiceTypeExternalName {
		s.Spec.ExternalName = "example.com"
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

const self = "ns/web"

// preallocate takes items for another owner.
func preallocate(t *testing.T, ctx context.Context, a *Allocators, ips []string, ports []int) {
	t.Helper()
	for _, ip := range ips {
		if err := a.IPs.AllocateIP(ctx, net.ParseIP(ip), "ns/other"); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ports {
		if err := a.Ports.AllocatePort(ctx, p, "ns/other"); err != nil {
			t.Fatal(err)
		}
	}
}

func assertInvalid(t *testing.T, err error, path, msg string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error = %v, want Invalid", err)
	}
	causes := err.(apierrors.APIStatus).Status().Details.Causes
	for _, c := range causes {
		if c.Field == path && strings.Contains(c.Message, msg) {
			return
		}
	}
	t.Errorf("Invalid causes = %+v, want %s containing %q", causes, path, msg)
}

func TestBeginCreate(t *testing.T) {
	tests := []struct {
		name     string
		svc      *corev1.Service
		preIPs   []string
		prePorts []int
		dryRun   bool
		// Outcome on success.
		wantIP        string // "" = any allocated address; "-" = none
		wantNodePorts []int32
		wantHC        bool
		// Outcome on failure.
		errPath, errMsg string
	}{
		{name: "ClusterIP gets an address", svc: newService(corev1.ServiceTypeClusterIP)},
		{name: "specific cluster IP", svc: newService(corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = "10.0.0.9" }), wantIP: "10.0.0.9"},
		{name: "specific cluster IP through clusterIPs", svc: newService(corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.0.0.10"} }), wantIP: "10.0.0.10"},
		{name: "NodePort gets an address and a node port", svc: newService(corev1.ServiceTypeNodePort), wantNodePorts: []int32{0}},
		{
			name: "NodePort with chosen node ports",
			svc: newService(corev1.ServiceTypeNodePort, func(s *corev1.Service) {
				s.Spec.Ports[0].NodePort = 30005
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP})
			}),
			wantNodePorts: []int32{30005, 0},
		},
		{
			name: "TCP and UDP share one node port",
			svc: newService(corev1.ServiceTypeNodePort, func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, NodePort: 30003},
					{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP, NodePort: 30003},
				}
			}),
			wantNodePorts: []int32{30003, 30003},
		},
		{
			name: "LoadBalancer with local traffic gets a health check port",
			svc: newService(corev1.ServiceTypeLoadBalancer, func(s *corev1.Service) {
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}),
			wantNodePorts: []int32{0}, wantHC: true,
		},
		{name: "LoadBalancer with cluster traffic has no health check port", svc: newService(corev1.ServiceTypeLoadBalancer), wantNodePorts: []int32{0}},
		{name: "ExternalName gets nothing", svc: newService(corev1.ServiceTypeExternalName), wantIP: "-"},
		{name: "headless gets nothing", svc: newService(corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }), wantIP: "-"},
		{name: "headless through clusterIPs gets nothing", svc: newService(corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIPs = []string{corev1.ClusterIPNone} }), wantIP: "-"},
		{name: "dry run allocates nothing", svc: newService(corev1.ServiceTypeNodePort), dryRun: true, wantIP: "-"},
		{
			name:    "cluster IP taken",
			svc:     newService(corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = "10.0.0.4" }),
			preIPs:  []string{"10.0.0.4"},
			errPath: "spec.clusterIPs", errMsg: "provided IP is already allocated",
		},
		{
			name:    "cluster IP out of range",
			svc:     newService(corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = "10.1.0.1" }),
			errPath: "spec.clusterIPs", errMsg: "The range of valid IPs is 10.0.0.0/28",
		},
		{
			name:     "node port taken: the cluster IP is given back",
			svc:      newService(corev1.ServiceTypeNodePort, func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30001 }),
			prePorts: []int{30001},
			errPath:  "spec.ports[0].nodePort", errMsg: "provided port is already allocated",
		},
		{
			name: "second node port out of range: the first is given back",
			svc: newService(corev1.ServiceTypeNodePort, func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, NodePort: 80})
			}),
			errPath: "spec.ports[1].nodePort", errMsg: "The range of valid ports is 30000-30009",
		},
		{
			name: "health check port taken",
			svc: newService(corev1.ServiceTypeLoadBalancer, func(s *corev1.Service) {
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
				s.Spec.HealthCheckNodePort = 30008
			}),
			prePorts: []int{30008},
			errPath:  "spec.healthCheckNodePort", errMsg: "provided port is already allocated",
		},
	}
	for _, tt := range tests {
		for _, success := range []bool{true, false} {
			name := tt.name + "/commit"
			if !success {
				name = tt.name + "/rollback"
			}
			t.Run(name, func(t *testing.T) {
				a, ctx := newTestAllocators(t)
				preallocate(t, ctx, a, tt.preIPs, tt.prePorts)
				svc := tt.svc.DeepCopy()
				opts := &metav1.CreateOptions{}
				if tt.dryRun {
					opts.DryRun = []string{metav1.DryRunAll}
				}
				finish, err := a.beginCreate(ctx, svc, opts)
				if tt.errPath != "" {
					assertInvalid(t, err, tt.errPath, tt.errMsg)
					assertOwns(t, ctx, a, self, nil, nil)
					assertOwns(t, ctx, a, "ns/other", tt.preIPs, portStrings(tt.prePorts))
					return
				}
				if err != nil {
					t.Fatalf("beginCreate: %v", err)
				}
				switch tt.wantIP {
				case "-":
					if needsClusterIP(svc) && svc.Spec.ClusterIP != "" && !tt.dryRun {
						t.Errorf("clusterIP = %q, want none", svc.Spec.ClusterIP)
					}
				case "":
					if ip := net.ParseIP(svc.Spec.ClusterIP); ip == nil || !a.IPs.cidr.Contains(ip) {
						t.Errorf("clusterIP = %q, want an address of 10.0.0.0/28", svc.Spec.ClusterIP)
					}
				default:
					if svc.Spec.ClusterIP != tt.wantIP {
						t.Errorf("clusterIP = %q, want %s", svc.Spec.ClusterIP, tt.wantIP)
					}
				}
				if needsClusterIP(svc) && tt.wantIP != "-" && !slices.Equal(svc.Spec.ClusterIPs, []string{svc.Spec.ClusterIP}) {
					t.Errorf("clusterIPs = %v, want [%s]", svc.Spec.ClusterIPs, svc.Spec.ClusterIP)
				}
				if svc.Spec.Type != corev1.ServiceTypeExternalName && len(svc.Spec.IPFamilies) == 0 {
					t.Errorf("ipFamilies not defaulted")
				}
				for i, want := range tt.wantNodePorts {
					got := svc.Spec.Ports[i].NodePort
					if (want == 0 && (got < 30000 || got > 30009)) || (want != 0 && got != want) {
						t.Errorf("ports[%d].nodePort = %d, want %d (0: any in range)", i, got, want)
					}
				}
				if tt.wantNodePorts == nil && !tt.dryRun {
					for i, p := range svc.Spec.Ports {
						if p.NodePort != 0 {
							t.Errorf("ports[%d].nodePort = %d, want none", i, p.NodePort)
						}
					}
				}
				if got := svc.Spec.HealthCheckNodePort; tt.wantHC != (got != 0) {
					t.Errorf("healthCheckNodePort = %d, want set=%v", got, tt.wantHC)
				}
				wantIPs, wantPorts := allocationsOf(svc)
				if tt.dryRun {
					wantIPs, wantPorts = nil, nil
				}
				assertOwns(t, ctx, a, self, wantIPs, wantPorts)

				finish(ctx, success)
				if !success {
					wantIPs, wantPorts = nil, nil
				}
				assertOwns(t, ctx, a, self, wantIPs, wantPorts)
				assertOwns(t, ctx, a, "ns/other", tt.preIPs, portStrings(tt.prePorts))
			})
		}
	}
}

func portStrings(ports []int) []string {
	var out []string
	for _, p := range ports {
		out = append(out, strconv.Itoa(p))
	}
	slices.Sort(out)
	return out
}

// created runs a successful create of svc and returns the stored service.
func created(t *testing.T, ctx context.Context, a *Allocators, svc *corev1.Service) *corev1.Service {
	t.Helper()
	svc = svc.DeepCopy()
	finish, err := a.beginCreate(ctx, svc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	finish(ctx, true)
	return svc
}

func TestBeginUpdate(t *testing.T) {
	nodePortSvc := newService(corev1.ServiceTypeNodePort, func(s *corev1.Service) {
		s.Spec.ClusterIP = "10.0.0.2"
		s.Spec.Ports[0].NodePort = 30001
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, NodePort: 30002})
	})
	clusterIPSvc := newService(corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = "10.0.0.3" })
	externalSvc := newService(corev1.ServiceTypeExternalName)
	tests := []struct {
		name     string
		old      *corev1.Service
		mutate   func(*corev1.Service)
		prePorts []int
		dryRun   bool
		// check inspects the updated service after the hook.
		check           func(t *testing.T, svc *corev1.Service)
		errPath, errMsg string
	}{
		{
			name: "NodePort to ClusterIP releases node ports",
			old:  nodePortSvc,
			mutate: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeClusterIP
			},
			check: func(t *testing.T, s *corev1.Service) {
				for i, p := range s.Spec.Ports {
					if p.NodePort != 0 {
						t.Errorf("ports[%d].nodePort = %d, want 0", i, p.NodePort)
					}
				}
				if s.Spec.ClusterIP != "10.0.0.2" {
					t.Errorf("clusterIP = %s, want 10.0.0.2 kept", s.Spec.ClusterIP)
				}
			},
		},
		{
			name: "replace leaving out clusterIP and node ports keeps them",
			old:  nodePortSvc,
			mutate: func(s *corev1.Service) {
				s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
				s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 0, 0
			},
			check: func(t *testing.T, s *corev1.Service) {
				if s.Spec.ClusterIP != "10.0.0.2" || !slices.Equal(s.Spec.ClusterIPs, []string{"10.0.0.2"}) {
					t.Errorf("clusterIP %q clusterIPs %v, want 10.0.0.2 kept", s.Spec.ClusterIP, s.Spec.ClusterIPs)
				}
				if s.Spec.Ports[0].NodePort != 30001 || s.Spec.Ports[1].NodePort != 30002 {
					t.Errorf("node ports = %d, %d; want 30001, 30002 kept", s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort)
				}
			},
		},
		{
			name:   "a changed node port is allocated and the old one released",
			old:    nodePortSvc,
			mutate: func(s *corev1.Service) { s.Spec.Ports[1].NodePort = 30007 },
			check: func(t *testing.T, s *corev1.Service) {
				if s.Spec.Ports[0].NodePort != 30001 || s.Spec.Ports[1].NodePort != 30007 {
					t.Errorf("node ports = %d, %d; want 30001, 30007", s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort)
				}
			},
		},
		{
			name:   "a removed port releases its node port",
			old:    nodePortSvc,
			mutate: func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] },
		},
		{
			name: "an added port gets a node port, the others keep theirs",
			old:  nodePortSvc,
			mutate: func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP})
			},
			check: func(t *testing.T, s *corev1.Service) {
				if s.Spec.Ports[0].NodePort != 30001 || s.Spec.Ports[1].NodePort != 30002 || s.Spec.Ports[2].NodePort == 0 {
					t.Errorf("node ports = %v", s.Spec.Ports)
				}
			},
		},
		{
			name:   "ClusterIP to NodePort allocates node ports",
			old:    clusterIPSvc,
			mutate: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort },
			check: func(t *testing.T, s *corev1.Service) {
				if p := s.Spec.Ports[0].NodePort; p < 30000 || p > 30009 {
					t.Errorf("nodePort = %d, want one of the range", p)
				}
			},
		},
		{
			name: "ClusterIP to ExternalName releases the cluster IP",
			old:  clusterIPSvc,
			mutate: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeExternalName
				s.Spec.ExternalName = "example.com"
			},
			check: func(t *testing.T, s *corev1.Service) {
				if s.Spec.ClusterIP != "" || s.Spec.ClusterIPs != nil {
					t.Errorf("clusterIP %q clusterIPs %v, want both cleared", s.Spec.ClusterIP, s.Spec.ClusterIPs)
				}
			},
		},
		{
			name:   "ExternalName to ClusterIP allocates an address",
			old:    externalSvc,
			mutate: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP; s.Spec.ExternalName = "" },
			check: func(t *testing.T, s *corev1.Service) {
				if net.ParseIP(s.Spec.ClusterIP) == nil {
					t.Errorf("clusterIP = %q, want an address", s.Spec.ClusterIP)
				}
			},
		},
		{
			name: "ExternalName to LoadBalancer with local traffic",
			old:  externalSvc,
			mutate: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeLoadBalancer
				s.Spec.ExternalName = ""
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			},
			check: func(t *testing.T, s *corev1.Service) {
				if net.ParseIP(s.Spec.ClusterIP) == nil || s.Spec.Ports[0].NodePort == 0 || s.Spec.HealthCheckNodePort == 0 {
					t.Errorf("spec = %+v, want a cluster IP, a node port and a health check port", s.Spec)
				}
			},
		},
		{
			name:     "a node port owned by another service is refused",
			old:      clusterIPSvc,
			prePorts: []int{30009},
			mutate: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeNodePort
				s.Spec.Ports[0].NodePort = 30009
			},
			errPath: "spec.ports[0].nodePort", errMsg: "provided port is already allocated",
		},
		{
			name:     "a failing second port gives back the first",
			old:      externalSvc,
			prePorts: []int{30009},
			mutate: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeNodePort
				s.Spec.ExternalName = ""
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "b", Port: 81, Protocol: corev1.ProtocolTCP, NodePort: 30009})
			},
			errPath: "spec.ports[1].nodePort", errMsg: "provided port is already allocated",
		},
		{
			name:   "dry run changes nothing",
			old:    nodePortSvc,
			dryRun: true,
			mutate: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP },
		},
	}
	for _, tt := range tests {
		for _, success := range []bool{true, false} {
			name := tt.name + "/commit"
			if !success {
				name = tt.name + "/rollback"
			}
			t.Run(name, func(t *testing.T) {
				a, ctx := newTestAllocators(t)
				preallocate(t, ctx, a, nil, tt.prePorts)
				old := created(t, ctx, a, tt.old)
				oldIPs, oldPorts := allocationsOf(old)
				assertOwns(t, ctx, a, self, oldIPs, oldPorts)

				svc := old.DeepCopy()
				tt.mutate(svc)
				opts := &metav1.UpdateOptions{}
				if tt.dryRun {
					opts.DryRun = []string{metav1.DryRunAll}
				}
				oldCopy := old.DeepCopy()
				finish, err := a.beginUpdate(ctx, svc, old, opts)
				if diff := cmp.Diff(oldCopy, old); diff != "" {
					t.Errorf("beginUpdate modified the old service:\n%s", diff)
				}
				if tt.errPath != "" {
					assertInvalid(t, err, tt.errPath, tt.errMsg)
					assertOwns(t, ctx, a, self, oldIPs, oldPorts)
					return
				}
				if err != nil {
					t.Fatalf("beginUpdate: %v", err)
				}
				if tt.check != nil {
					tt.check(t, svc)
				}
				finish(ctx, success)
				wantIPs, wantPorts := allocationsOf(svc)
				if !success || tt.dryRun {
					wantIPs, wantPorts = oldIPs, oldPorts
				}
				assertOwns(t, ctx, a, self, wantIPs, wantPorts)
				assertOwns(t, ctx, a, "ns/other", nil, portStrings(tt.prePorts))
			})
		}
	}
}

func TestPatchAllocatedValues(t *testing.T) {
	old := newService(corev1.ServiceTypeLoadBalancer, func(s *corev1.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.0.0.2", []string{"10.0.0.2"}
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 30009
		s.Spec.Ports = []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30001},
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, NodePort: 30002},
		}
	})
	tests := []struct {
		name   string
		mutate func(*corev1.Service)
		want   func(*corev1.Service) // applied to a copy of the mutated service
	}{
		{
			name: "everything left out is kept",
			mutate: func(s *corev1.Service) {
				s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.HealthCheckNodePort = "", nil, 0
				s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 0, 0
			},
			want: func(s *corev1.Service) {
				s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.HealthCheckNodePort = "10.0.0.2", []string{"10.0.0.2"}, 30009
				s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 30001, 30002
			},
		},
		{
			name:   "explicit values win",
			mutate: func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30005; s.Spec.HealthCheckNodePort = 30006 },
			want:   func(*corev1.Service) {},
		},
		{
			name:   "a port matches by port and protocol only",
			mutate: func(s *corev1.Service) { s.Spec.Ports[1].Protocol = corev1.ProtocolTCP; s.Spec.Ports[1].NodePort = 0 },
			want:   func(*corev1.Service) {},
		},
		{
			name: "renamed port keeps its node port",
			mutate: func(s *corev1.Service) {
				s.Spec.Ports[0].Name = "web"
				s.Spec.Ports[0].NodePort = 0
			},
			want: func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30001 },
		},
		{
			name: "to ClusterIP: node ports not carried over",
			mutate: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeClusterIP
				s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort, s.Spec.HealthCheckNodePort = 0, 0, 0
				s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
			},
			want: func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.0.0.2", []string{"10.0.0.2"} },
		},
		{
			name: "to ExternalName: nothing carried over",
			mutate: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeExternalName
				s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
				s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort, s.Spec.HealthCheckNodePort = 0, 0, 0
			},
			want: func(*corev1.Service) {},
		},
		{
			name: "to cluster traffic: no health check port carried over",
			mutate: func(s *corev1.Service) {
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
				s.Spec.HealthCheckNodePort = 0
			},
			want: func(*corev1.Service) {},
		},
		{
			name:   "a changed clusterIP leaves clusterIPs alone",
			mutate: func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.0.0.7", nil },
			want:   func(*corev1.Service) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := old.DeepCopy()
			tt.mutate(svc)
			want := svc.DeepCopy()
			tt.want(want)
			patchAllocatedValues(svc, old.DeepCopy())
			if diff := cmp.Diff(want, svc); diff != "" {
				t.Errorf("patchAllocatedValues (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAfterDelete(t *testing.T) {
	a, _ := newTestAllocators(t)
	ctx := testCtx(t)
	preallocate(t, ctx, a, []string{"10.0.0.11"}, []int{30008})
	svc := created(t, ctx, a, newService(corev1.ServiceTypeLoadBalancer, func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}))
	ips, ports := allocationsOf(svc)
	if len(ips) != 1 || len(ports) != 2 {
		t.Fatalf("created service owns %v %v, want an IP and two ports", ips, ports)
	}
	a.afterDelete(svc, &metav1.DeleteOptions{})
	assertOwns(t, ctx, a, self, nil, nil)
	assertOwns(t, ctx, a, "ns/other", []string{"10.0.0.11"}, []string{"30008"})
}

func TestRepair(t *testing.T) {
	a, ctx := newTestAllocators(t)
	kv, prefix := shared.client, "/test/"+t.Name()+"/"
	// Allocations before the services were listed.
	kept := newService(corev1.ServiceTypeNodePort, func(s *corev1.Service) {
		s.Spec.ClusterIP = "10.0.0.2"
		s.Spec.Ports[0].NodePort = 30001
	})
	kept = created(t, ctx, a, kept)
	preallocate(t, ctx, a, []string{"10.0.0.3", "10.0.0.5"}, []int{30002})
	// A headless and an ExternalName service own nothing, even with a stale clusterIP.
	headless := newService(corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Name = "headless"; s.Spec.ClusterIP = corev1.ClusterIPNone })
	external := newService(corev1.ServiceTypeExternalName, func(s *corev1.Service) { s.Name = "ext"; s.Spec.ClusterIP = "10.0.0.5" })
	resp, err := kv.Put(ctx, prefix+"services-listed", "x")
	if err != nil {
		t.Fatal(err)
	}
	listRevision := resp.Header.Revision

	// Allocations after the list: an in-flight create.
	if err := a.IPs.AllocateIP(ctx, net.ParseIP("10.0.0.4"), "ns/inflight"); err != nil {
		t.Fatal(err)
	}
	if err := a.Ports.AllocatePort(ctx, 30003, "ns/inflight"); err != nil {
		t.Fatal(err)
	}

	services := []corev1.Service{*kept, *headless, *external}
	state := func() ([]string, []string) {
		t.Helper()
		usedIPs, err := a.IPs.Used(ctx)
		if err != nil {
			t.Fatal(err)
		}
		usedPorts, err := a.Ports.Used(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(usedIPs)), slices.Sorted(maps.Keys(usedPorts))
	}
	repair := func(rev int64, wantIPs, wantPorts []string) {
		t.Helper()
		if err := a.Repair(ctx, services, rev); err != nil {
			t.Fatalf("Repair: %v", err)
		}
		gotIPs, gotPorts := state()
		if !slices.Equal(gotIPs, wantIPs) {
			t.Errorf("IPs after repair = %v, want %v", gotIPs, wantIPs)
		}
		if !slices.Equal(gotPorts, wantPorts) {
			t.Errorf("ports after repair = %v, want %v", gotPorts, wantPorts)
		}
	}
	// First pass: leaks are only suspected; nothing is freed.
	repair(listRevision, []string{"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"}, []string{"30001", "30002", "30003"})

	// Second pass with a later list: the leaks seen twice go; the in-flight
	// items (created after the first list) are only now suspected.
	resp, err = kv.Put(ctx, prefix+"services-listed", "y")
	if err != nil {
		t.Fatal(err)
	}
	later := resp.Header.Revision
	repair(later, []string{"10.0.0.2", "10.0.0.4"}, []string{"30001", "30003"})

	// Third pass: the in-flight items, still unowned, go too.
	repair(later, []string{"10.0.0.2"}, []string{"30001"})
	assertOwns(t, ctx, a, "ns/inflight", nil, nil)
	ips, ports := allocationsOf(kept)
	assertOwns(t, ctx, a, self, ips, ports)
}
