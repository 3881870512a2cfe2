package networking

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}

	ingressOnly := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{}}}},
	}}
	s.Default(ingressOnly)
	if got := ingressOnly.Spec.PolicyTypes; len(got) != 1 || got[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policyTypes = %v, want [Ingress]", got)
	}
	if p := ingressOnly.Spec.Ingress[0].Ports[0].Protocol; p == nil || *p != corev1.ProtocolTCP {
		t.Errorf("ingress port protocol = %v, want TCP", p)
	}

	withEgress := &networkingv1.NetworkPolicyList{Items: []networkingv1.NetworkPolicy{{Spec: networkingv1.NetworkPolicySpec{
		Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP)}, {}}}},
	}}}}
	s.Default(withEgress)
	np := withEgress.Items[0]
	if got := np.Spec.PolicyTypes; len(got) != 2 || got[1] != networkingv1.PolicyTypeEgress {
		t.Errorf("policyTypes = %v, want [Ingress Egress]", got)
	}
	if *np.Spec.Egress[0].Ports[0].Protocol != corev1.ProtocolUDP || *np.Spec.Egress[0].Ports[1].Protocol != corev1.ProtocolTCP {
		t.Errorf("egress protocols = %v %v", *np.Spec.Egress[0].Ports[0].Protocol, *np.Spec.Egress[0].Ports[1].Protocol)
	}

	explicit := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
	}}
	s.Default(explicit)
	if len(explicit.Spec.PolicyTypes) != 1 || explicit.Spec.PolicyTypes[0] != networkingv1.PolicyTypeEgress {
		t.Errorf("explicit policyTypes overwritten: %v", explicit.Spec.PolicyTypes)
	}

	ic := &networkingv1.IngressClass{Spec: networkingv1.IngressClassSpec{Parameters: &networkingv1.IngressClassParametersReference{Kind: "K", Name: "n"}}}
	s.Default(ic)
	if ic.Spec.Parameters.Scope == nil || *ic.Spec.Parameters.Scope != networkingv1.IngressClassParametersReferenceScopeCluster {
		t.Errorf("scope = %v, want Cluster", ic.Spec.Parameters.Scope)
	}
}

func validPolicy() *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "np", Namespace: "default", ResourceVersion: "1"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(80)), EndPort: ptr.To[int32](90)}},
				From:  []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.0.1.0/24"}}}},
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("dns"))}},
				To:    []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{}}},
			}},
		},
	}
	DefaultNetworkPolicy(np)
	return np
}

func TestValidateNetworkPolicy(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*networkingv1.NetworkPolicy)
		want   []errKey
	}{
		{name: "valid", mutate: func(*networkingv1.NetworkPolicy) {}},
		{
			name: "bad protocol",
			mutate: func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].Ports[0].Protocol = ptr.To(corev1.Protocol("ICMP"))
			},
			want: []errKey{e(field.ErrorTypeNotSupported, "spec.ingress[0].ports[0].protocol")},
		},
		{
			name:   "endPort below port",
			mutate: func(np *networkingv1.NetworkPolicy) { np.Spec.Ingress[0].Ports[0].EndPort = ptr.To[int32](70) },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.ingress[0].ports[0].endPort")},
		},
		{
			name:   "endPort with named port",
			mutate: func(np *networkingv1.NetworkPolicy) { np.Spec.Egress[0].Ports[0].EndPort = ptr.To[int32](70) },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.egress[0].ports[0].endPort")},
		},
		{
			name: "port out of range",
			mutate: func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].Ports[0] = networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(70000))}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.ingress[0].ports[0].port")},
		},
		{
			name:   "empty peer",
			mutate: func(np *networkingv1.NetworkPolicy) { np.Spec.Egress[0].To[0] = networkingv1.NetworkPolicyPeer{} },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.egress[0].to[0]")},
		},
		{
			name: "ipBlock with selector",
			mutate: func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].From[0].PodSelector = &metav1.LabelSelector{}
			},
			want: []errKey{e(field.ErrorTypeForbidden, "spec.ingress[0].from[0]")},
		},
		{
			name:   "missing cidr",
			mutate: func(np *networkingv1.NetworkPolicy) { np.Spec.Ingress[0].From[0].IPBlock = &networkingv1.IPBlock{} },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.ingress[0].from[0].ipBlock.cidr")},
		},
		{
			name: "invalid cidr",
			mutate: func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].From[0].IPBlock = &networkingv1.IPBlock{CIDR: "10.0.0.1/33"}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.ingress[0].from[0].ipBlock.cidr")},
		},
		{
			name:   "non-canonical cidr rejected by strict parsing",
			mutate: func(np *networkingv1.NetworkPolicy) { np.Spec.Ingress[0].From[0].IPBlock.CIDR = "10.0.0.5/16" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.ingress[0].from[0].ipBlock.cidr")},
		},
		{
			name: "except not inside cidr",
			mutate: func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].From[0].IPBlock.Except = []string{"192.168.0.0/24", "10.0.0.0/16"}
			},
			want: []errKey{
				e(field.ErrorTypeInvalid, "spec.ingress[0].from[0].ipBlock.except[0]"),
				e(field.ErrorTypeInvalid, "spec.ingress[0].from[0].ipBlock.except[1]"),
			},
		},
		{
			name:   "unknown policy type",
			mutate: func(np *networkingv1.NetworkPolicy) { np.Spec.PolicyTypes = []networkingv1.PolicyType{"Sideways"} },
			want:   []errKey{e(field.ErrorTypeNotSupported, "spec.policyTypes[0]")},
		},
		{
			name: "too many policy types",
			mutate: func(np *networkingv1.NetworkPolicy) {
				np.Spec.PolicyTypes = []networkingv1.PolicyType{"Ingress", "Egress", "Ingress"}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.policyTypes")},
		},
		{
			name: "bad pod selector value",
			mutate: func(np *networkingv1.NetworkPolicy) {
				np.Spec.PodSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn, Values: []string{"bad value"}}}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.podSelector.matchExpressions[0].values[0]")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			np := validPolicy()
			tc.mutate(np)
			expectErrs(t, ValidateNetworkPolicy(np), tc.want...)
		})
	}
}

func TestValidateNetworkPolicyUpdateToleratesStoredValues(t *testing.T) {
	old := validPolicy()
	old.Spec.Ingress[0].From[0].IPBlock.CIDR = "10.0.0.5/16"
	old.Spec.PodSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn, Values: []string{"bad value"}}}
	upd := old.DeepCopy()
	upd.Labels = map[string]string{"changed": "yes"}
	expectErrs(t, ValidateNetworkPolicyUpdate(upd, old))

	upd.Spec.Egress[0].To = append(upd.Spec.Egress[0].To, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "192.168.0.7/24"}})
	expectErrs(t, ValidateNetworkPolicyUpdate(upd, old), e(field.ErrorTypeInvalid, "spec.egress[0].to[1].ipBlock.cidr"))
}

func pathType(t networkingv1.PathType) *networkingv1.PathType { return &t }

func validIngress() *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"*.example.com"}, SecretName: "tls"}},
			Rules: []networkingv1.IngressRule{{
				Host: "www.example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
					{Path: "/api", PathType: pathType(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
						Service: &networkingv1.IngressServiceBackend{Name: "api", Port: networkingv1.ServiceBackendPort{Number: 8080}},
					}},
					{PathType: pathType(networkingv1.PathTypeImplementationSpecific), Backend: networkingv1.IngressBackend{
						Resource: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("example.com"), Kind: "Bucket", Name: "static"},
					}},
				}}},
			}},
		},
	}
}

func TestValidateIngress(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*networkingv1.Ingress)
		want   []errKey
	}{
		{name: "valid", mutate: func(*networkingv1.Ingress) {}},
		{
			name:   "no rules and no default backend",
			mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules = nil },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec")},
		},
		{
			name:   "ip host",
			mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "1.2.3.4" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.rules[0].host")},
		},
		{
			name:   "wildcard host ok",
			mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "*.example.com" },
		},
		{
			name:   "wildcard in the middle",
			mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "www.*.example.com" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.rules[0].host")},
		},
		{
			name:   "missing path type",
			mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths[0].PathType = nil },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.rules[0].http.paths[0].pathType")},
		},
		{
			name:   "unknown path type",
			mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths[0].PathType = pathType("Regex") },
			want:   []errKey{e(field.ErrorTypeNotSupported, "spec.rules[0].http.paths[0].pathType")},
		},
		{
			name:   "prefix path must be absolute",
			mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths[0].Path = "api" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].path")},
		},
		{
			name: "exact path with dot segment",
			mutate: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].HTTP.Paths[0].PathType = pathType(networkingv1.PathTypeExact)
				ing.Spec.Rules[0].HTTP.Paths[0].Path = "/a/.."
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].path")},
		},
		{
			name:   "implementation specific relative path",
			mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths[1].Path = "static" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.rules[0].http.paths[1].path")},
		},
		{
			name:   "empty paths",
			mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths = nil },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.rules[0].http.paths")},
		},
		{
			name: "both backends",
			mutate: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].HTTP.Paths[1].Backend.Service = ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.rules[0].http.paths[1].backend")},
		},
		{
			name: "no backend",
			mutate: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].HTTP.Paths[1].Backend = networkingv1.IngressBackend{}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.rules[0].http.paths[1].backend")},
		},
		{
			name: "service port name and number",
			mutate: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name = "http"
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].backend")},
		},
		{
			name: "service port missing",
			mutate: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number = 0
			},
			want: []errKey{e(field.ErrorTypeRequired, "spec.rules[0].http.paths[0].backend")},
		},
		{
			name: "service name missing and bad port number",
			mutate: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service = &networkingv1.IngressServiceBackend{Port: networkingv1.ServiceBackendPort{Number: 70000}}
			},
			want: []errKey{
				e(field.ErrorTypeRequired, "spec.rules[0].http.paths[0].backend.service.name"),
				e(field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].backend.service.port.number"),
			},
		},
		{
			name: "service name may start with a digit (relaxed)",
			mutate: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = "1api"
			},
		},
		{
			name: "resource backend missing kind",
			mutate: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].HTTP.Paths[1].Backend.Resource.Kind = ""
			},
			want: []errKey{e(field.ErrorTypeRequired, "spec.rules[0].http.paths[1].backend.resource.kind")},
		},
		{
			name: "bad tls host and secret",
			mutate: func(ing *networkingv1.Ingress) {
				ing.Spec.TLS[0] = networkingv1.IngressTLS{Hosts: []string{"Bad_Host"}, SecretName: "Bad_Secret"}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.tls[0].hosts[0]"), e(field.ErrorTypeInvalid, "spec.tls[0].secretName")},
		},
		{
			name: "class annotation disagrees",
			mutate: func(ing *networkingv1.Ingress) {
				ing.Annotations = map[string]string{"kubernetes.io/ingress.class": "traefik"}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "annotations.kubernetes.io/ingress.class")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ing := validIngress()
			tc.mutate(ing)
			expectErrs(t, ValidateIngress(ing), tc.want...)
		})
	}
}

func TestValidateIngressUpdate(t *testing.T) {
	old := validIngress()
	old.Spec.TLS[0].SecretName = "Bad_Secret"
	old.Spec.Rules[0].Host = "*.example.com"
	old.Spec.Rules[0].HTTP.Paths[0].Path = "relative"
	upd := old.DeepCopy()
	upd.Labels = map[string]string{"x": "y"}
	expectErrs(t, ValidateIngressUpdate(upd, old))

	// The annotation/ingressClassName agreement is a create-only check.
	upd.Annotations = map[string]string{"kubernetes.io/ingress.class": "traefik"}
	expectErrs(t, ValidateIngressUpdate(upd, old))

	fresh := validIngress()
	bad := fresh.DeepCopy()
	bad.Spec.TLS[0].SecretName = "Bad_Secret"
	expectErrs(t, ValidateIngressUpdate(bad, fresh), e(field.ErrorTypeInvalid, "spec.tls[0].secretName"))
}

func TestValidateIngressStatusUpdate(t *testing.T) {
	old := validIngress()
	old.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "010.0.0.1"}}
	upd := old.DeepCopy()
	upd.Status.LoadBalancer.Ingress = append(upd.Status.LoadBalancer.Ingress,
		networkingv1.IngressLoadBalancerIngress{IP: "010.0.0.2"},
		networkingv1.IngressLoadBalancerIngress{Hostname: "10.0.0.3"},
		networkingv1.IngressLoadBalancerIngress{IP: "10.0.0.4", Hostname: "lb.example.com"},
	)
	expectErrs(t, ValidateIngressStatusUpdate(upd, old),
		e(field.ErrorTypeInvalid, "status.loadBalancer.ingress[1].ip"),
		e(field.ErrorTypeInvalid, "status.loadBalancer.ingress[2].hostname"))
}

func TestValidateIngressClass(t *testing.T) {
	valid := func() *networkingv1.IngressClass {
		return &networkingv1.IngressClass{
			ObjectMeta: metav1.ObjectMeta{Name: "nginx", ResourceVersion: "1"},
			Spec: networkingv1.IngressClassSpec{
				Controller: "k8s.io/ingress-nginx",
				Parameters: &networkingv1.IngressClassParametersReference{
					APIGroup: ptr.To("k8s.example.com"), Kind: "IngressParameters", Name: "external-lb",
					Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace), Namespace: ptr.To("infra"),
				},
			},
		}
	}
	tests := []struct {
		name   string
		mutate func(*networkingv1.IngressClass)
		want   []errKey
	}{
		{name: "valid", mutate: func(*networkingv1.IngressClass) {}},
		{
			name:   "controller without domain",
			mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "nginx" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.controller")},
		},
		{
			name:   "namespace scope without namespace",
			mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters.Namespace = nil },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.parameters.namespace")},
		},
		{
			name: "cluster scope with namespace",
			mutate: func(ic *networkingv1.IngressClass) {
				ic.Spec.Parameters.Scope = ptr.To(networkingv1.IngressClassParametersReferenceScopeCluster)
			},
			want: []errKey{e(field.ErrorTypeForbidden, "spec.parameters.namespace")},
		},
		{
			name:   "unknown scope",
			mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters.Scope = ptr.To("Galaxy") },
			want:   []errKey{e(field.ErrorTypeNotSupported, "spec.parameters.scope")},
		},
		{
			name:   "missing scope",
			mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters.Scope = nil },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.parameters.scope")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ic := valid()
			tc.mutate(ic)
			expectErrs(t, ValidateIngressClass(ic), tc.want...)
		})
	}

	old := valid()
	upd := old.DeepCopy()
	upd.Spec.Controller = "example.com/other"
	expectErrs(t, ValidateIngressClassUpdate(upd, old), e(field.ErrorTypeInvalid, "spec.controller"))
}
