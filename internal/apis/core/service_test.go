package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// validService returns a service as the registry would validate it:
// defaulted, cluster IPs normalised and IP families filled.
func validService(mutate func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	if mutate != nil {
		mutate(svc)
	}
	DefaultService(svc)
	NormalizeServiceClusterIPs(svc, nil)
	DefaultServiceIPFamilies(svc)
	return svc
}

func TestValidateService(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Service)
		after  func(*corev1.Service) // applied after defaulting
		want   []e
	}{
		{"valid ClusterIP", nil, nil, nil},
		{"valid with cluster IP", func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.0.10" }, nil, nil},
		{"valid headless without ports", func(s *corev1.Service) {
			s.Spec.ClusterIP = corev1.ClusterIPNone
			s.Spec.Ports = nil
		}, nil, nil},
		{"valid NodePort", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
		}, nil, nil},
		{"valid LoadBalancer Local", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 31000
			s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", " 192.168.0.0/16 "}
		}, nil, nil},
		{"valid ExternalName", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "db.example.com."
			s.Spec.Ports = nil
		}, nil, nil},
		{"name must be a DNS label", func(s *corev1.Service) { s.Name = "web.site" }, nil, []e{invalid("metadata.name")}},
		{"ports required", func(s *corev1.Service) { s.Spec.Ports = nil }, nil, []e{required("spec.ports")}},
		{"port names required when several", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Port: 80}, {Port: 443}}
		}, nil, []e{required("spec.ports[0].name"), required("spec.ports[1].name")}},
		{"duplicate port names", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "http", Port: 8080})
		}, nil, []e{duplicate("spec.ports[1].name")}},
		{"duplicate port numbers", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "other", Port: 80})
		}, nil, []e{duplicate("spec.ports[1]")}},
		{"same port different protocol", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "udp", Port: 80, Protocol: corev1.ProtocolUDP})
		}, nil, nil},
		{"bad port name", func(s *corev1.Service) { s.Spec.Ports[0].Name = "HTTP" }, nil, []e{invalid("spec.ports[0].name")}},
		{"port zero", func(s *corev1.Service) { s.Spec.Ports[0].Port = 0; s.Spec.Ports[0].TargetPort = intstr.FromInt32(80) }, nil,
			[]e{invalid("spec.ports[0].port")}},
		{"bad target port name", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("-web") }, nil,
			[]e{invalid("spec.ports[0].targetPort")}},
		{"bad target port number", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(70000) }, nil,
			[]e{invalid("spec.ports[0].targetPort")}},
		{"bad protocol", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "ICMP" }, nil, []e{notSupported("spec.ports[0].protocol")}},
		{"nodePort on ClusterIP", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 }, nil, []e{forbidden("spec.ports[0].nodePort")}},
		{"bad selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "a b"} }, nil, []e{invalid("spec.selector")}},
		{"bad session affinity", nil, func(s *corev1.Service) { s.Spec.SessionAffinity = "Cookie" }, []e{notSupported("spec.sessionAffinity")}},
		{"ClientIP timeout out of range", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](100000)}}
		}, nil, []e{invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds")}},
		{"config with None affinity", nil, func(s *corev1.Service) {
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		}, []e{forbidden("spec.sessionAffinityConfig")}},
		{"bad type", nil, func(s *corev1.Service) { s.Spec.Type = "Ingress" }, []e{notSupported("spec.type")}},
		{"bad cluster IP", func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.0" }, nil, []e{invalid("spec.clusterIPs[0]")}},
		{"clusterIPs not matching clusterIP", func(s *corev1.Service) {
			s.Spec.ClusterIP = "10.43.0.10"
			s.Spec.ClusterIPs = []string{"10.43.0.11"}
		}, nil, []e{invalid("spec.clusterIPs")}},
		{"clusterIP family mismatch", func(s *corev1.Service) {
			s.Spec.ClusterIP = "fd00::10"
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}, nil, []e{invalid("spec.clusterIPs[0]")}},
		{"bad ip family", nil, func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{"IPv5"} }, []e{notSupported("spec.ipFamilies[0]")}},
		{"duplicate ip family", nil, func(s *corev1.Service) {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv4Protocol}
		}, []e{duplicate("spec.ipFamilies[1]")}},
		{"bad ip family policy", nil, func(s *corev1.Service) { s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicy("Maybe")) },
			[]e{notSupported("spec.ipFamilyPolicy")}},
		{"headless NodePort", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ClusterIP = corev1.ClusterIPNone
		}, nil, []e{invalid("spec.clusterIPs[0]")}},
		{"ExternalName without name", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }, nil,
			[]e{required("spec.externalName")}},
		{"ExternalName invalid", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "not_a_host"
		}, nil, []e{invalid("spec.externalName")}},
		{"ExternalName with cluster IP", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "db.example.com"
			s.Spec.ClusterIP = "10.43.0.10"
		}, nil, []e{forbidden("spec.clusterIPs")}},
		{"externalTrafficPolicy on ClusterIP", nil, func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}, []e{invalid("spec.externalTrafficPolicy")}},
		{"bad externalTrafficPolicy", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = "Nearest"
		}, nil, []e{notSupported("spec.externalTrafficPolicy")}},
		{"LB Local without health check port", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}, nil, []e{required("spec.healthCheckNodePort")}},
		{"source ranges on ClusterIP", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} }, nil,
			[]e{forbidden("spec.LoadBalancerSourceRanges")}},
		{"bad source range", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/33"}
		}, nil, []e{invalid("spec.LoadBalancerSourceRanges[0]")}},
		{"allocateLoadBalancerNodePorts on ClusterIP", func(s *corev1.Service) { s.Spec.AllocateLoadBalancerNodePorts = ptr.To(true) }, nil,
			[]e{forbidden("spec.allocateLoadBalancerNodePorts")}},
		{"loopback external IP", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"127.0.0.1"} }, nil,
			[]e{invalid("spec.externalIPs[0]")}},
		{"bad internal traffic policy", nil, func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicy("Zone"))
		}, []e{notSupported("spec.internalTrafficPolicy")}},
		{"missing internal traffic policy", nil, func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = nil },
			[]e{required("spec.internalTrafficPolicy")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := validService(tt.mutate)
			if tt.after != nil {
				tt.after(svc)
			}
			expectErrs(t, ValidateService(svc), tt.want...)
		})
	}
}

func TestValidateServiceUpdate(t *testing.T) {
	withIP := func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.0.10" }
	tests := []struct {
		name   string
		old    func(*corev1.Service)
		mutate func(*corev1.Service)
		want   []e
	}{
		{"selector may change", withIP, func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "v2"} }, nil},
		{"clusterIP immutable", withIP, func(s *corev1.Service) {
			s.Spec.ClusterIP = "10.43.0.11"
			s.Spec.ClusterIPs = []string{"10.43.0.11"}
		}, []e{invalid("spec.clusterIPs[0]")}},
		{"clusterIP may not be unset", withIP, func(s *corev1.Service) {
			s.Spec.ClusterIP = ""
			s.Spec.ClusterIPs = nil
		}, []e{invalid("spec.clusterIPs[0]")}},
		{"ipFamilies immutable", withIP, func(s *corev1.Service) {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
		}, []e{invalid("spec.ipFamilies[0]"), invalid("spec.clusterIPs[0]")}},
		{"to ExternalName", withIP, func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "db.example.com"
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
			s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = nil, nil
			s.Spec.InternalTrafficPolicy = nil
		}, nil},
		{"from ExternalName", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "db.example.com"
		}, func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeClusterIP
			s.Spec.ExternalName = ""
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.43.0.12", []string{"10.43.0.12"}
			s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
			s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
		}, nil},
		{"loadBalancerClass immutable", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.LoadBalancerClass = ptr.To("example.com/lb")
		}, func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/other") }, []e{invalid("spec.loadBalancerClass")}},
		{"namespace immutable", nil, func(s *corev1.Service) { s.Namespace = "other" }, []e{invalid("metadata.namespace")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validService(tt.old)
			old.ResourceVersion = "1"
			svc := old.DeepCopy()
			tt.mutate(svc)
			expectErrs(t, ValidateServiceUpdate(svc, old), tt.want...)
		})
	}
}

func TestValidateServiceStatusUpdate(t *testing.T) {
	old := validService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
	old.ResourceVersion = "1"
	ok := old.DeepCopy()
	ok.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.168.1.240", IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}
	expectErrs(t, ValidateServiceStatusUpdate(ok, old))

	bad := old.DeepCopy()
	bad.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.168.1"}, {Hostname: "10.0.0.1"}}
	expectErrs(t, ValidateServiceStatusUpdate(bad, old),
		invalid("status.loadBalancer.ingress[0].ip"),
		required("status.loadBalancer.ingress[0].ipMode"),
		invalid("status.loadBalancer.ingress[1].hostname"))

	cip := validService(nil)
	cip.ResourceVersion = "1"
	withIngress := cip.DeepCopy()
	withIngress.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}
	expectErrs(t, ValidateServiceStatusUpdate(withIngress, cip), forbidden("status.loadBalancer.ingress"))
}

func TestDropServiceTypeDependentFields(t *testing.T) {
	np := func() *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", ResourceVersion: "1"}, Spec: corev1.ServiceSpec{
			SessionAffinity: corev1.ServiceAffinityNone,
			Type:            corev1.ServiceTypeNodePort, ClusterIP: "10.0.0.5", ClusterIPs: []string{"10.0.0.5"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080, TargetPort: intstr.FromInt32(80)}},
		}}
	}
	t.Run("NodePort to ExternalName, fields as they were: cleared", func(t *testing.T) {
		old, svc := np(), np()
		svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
		DropServiceTypeDependentFields(svc, old)
		if svc.Spec.ClusterIP != "" || svc.Spec.ClusterIPs != nil || svc.Spec.IPFamilies != nil || svc.Spec.IPFamilyPolicy != nil ||
			svc.Spec.Ports[0].NodePort != 0 || svc.Spec.ExternalTrafficPolicy != "" {
			t.Errorf("not cleared: %+v", svc.Spec)
		}
		if errs := ValidateServiceUpdate(svc, old); len(errs) > 0 {
			t.Errorf("update invalid after clearing: %v", errs)
		}
	})
	t.Run("a field the user changed is kept for validation to judge", func(t *testing.T) {
		old, svc := np(), np()
		svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.0.0.9", []string{"10.0.0.9"}
		DropServiceTypeDependentFields(svc, old)
		if svc.Spec.ClusterIP != "10.0.0.9" {
			t.Errorf("user's cluster IP dropped: %+v", svc.Spec)
		}
	})
	t.Run("LoadBalancer to ClusterIP: status and node ports cleared", func(t *testing.T) {
		old := np()
		old.Spec.Type = corev1.ServiceTypeLoadBalancer
		old.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
		svc := old.DeepCopy()
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		DropServiceTypeDependentFields(svc, old)
		if svc.Spec.ClusterIP != "10.0.0.5" || svc.Spec.Ports[0].NodePort != 0 || len(svc.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("got %+v %+v", svc.Spec, svc.Status)
		}
	})
}
