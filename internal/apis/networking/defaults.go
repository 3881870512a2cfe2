package networking

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds a defaulting function for every kind of the group and
// its List to s.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&networkingv1.NetworkPolicy{}, func(obj interface{}) {
		DefaultNetworkPolicy(obj.(*networkingv1.NetworkPolicy))
	})
	s.AddTypeDefaultingFunc(&networkingv1.NetworkPolicyList{}, func(obj interface{}) {
		list := obj.(*networkingv1.NetworkPolicyList)
		for i := range list.Items {
			DefaultNetworkPolicy(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&networkingv1.Ingress{}, func(obj interface{}) {
		DefaultIngress(obj.(*networkingv1.Ingress))
	})
	s.AddTypeDefaultingFunc(&networkingv1.IngressList{}, func(obj interface{}) {
		list := obj.(*networkingv1.IngressList)
		for i := range list.Items {
			DefaultIngress(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&networkingv1.IngressClass{}, func(obj interface{}) {
		DefaultIngressClass(obj.(*networkingv1.IngressClass))
	})
	s.AddTypeDefaultingFunc(&networkingv1.IngressClassList{}, func(obj interface{}) {
		list := obj.(*networkingv1.IngressClassList)
		for i := range list.Items {
			DefaultIngressClass(&list.Items[i])
		}
	})
	return nil
}

// DefaultNetworkPolicy sets policyTypes when none are given (Ingress, plus
// Egress when egress rules exist) and the protocol of every ingress and egress
// port to TCP when unset.
func DefaultNetworkPolicy(np *networkingv1.NetworkPolicy) {
	if len(np.Spec.PolicyTypes) == 0 {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(np.Spec.Egress) > 0 {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
	for i := range np.Spec.Ingress {
		for j := range np.Spec.Ingress[i].Ports {
			defaultNetworkPolicyPort(&np.Spec.Ingress[i].Ports[j])
		}
	}
	for i := range np.Spec.Egress {
		for j := range np.Spec.Egress[i].Ports {
			defaultNetworkPolicyPort(&np.Spec.Egress[i].Ports[j])
		}
	}
}

func defaultNetworkPolicyPort(p *networkingv1.NetworkPolicyPort) {
	if p.Protocol == nil {
		tcp := corev1.ProtocolTCP
		p.Protocol = &tcp
	}
}

// DefaultIngress sets defaults on an Ingress. networking.k8s.io/v1 defaults
// nothing on Ingress: in particular pathType is required, not defaulted, and
// validation rejects a path without one.
func DefaultIngress(ing *networkingv1.Ingress) {}

// DefaultIngressClass sets parameters.scope to Cluster when parameters are
// given without a scope.
func DefaultIngressClass(ic *networkingv1.IngressClass) {
	if ic.Spec.Parameters != nil && ic.Spec.Parameters.Scope == nil {
		scope := networkingv1.IngressClassParametersReferenceScopeCluster
		ic.Spec.Parameters.Scope = &scope
	}
}
