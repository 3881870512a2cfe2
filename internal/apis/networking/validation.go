package networking

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// strictIPValidation mirrors the StrictIPCIDRValidation feature gate, on by
// default in v1.37: new IPs and CIDRs must be in canonical, unambiguous form.
const strictIPValidation = true

// ingressClassAnnotation is the deprecated annotation that selected an
// IngressClass before spec.ingressClassName existed.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// maxIngressClassControllerLen bounds spec.controller of an IngressClass.
const maxIngressClassControllerLen = 250

// ---- NetworkPolicy ----

// ValidateNetworkPolicy validates a NetworkPolicy on create.
func ValidateNetworkPolicy(np *networkingv1.NetworkPolicy) field.ErrorList {
	errs := validateObjectMeta(&np.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateNetworkPolicySpec(&np.Spec, npOptions{}, field.NewPath("spec"))...)
}

// ValidateNetworkPolicyUpdate validates an update of a NetworkPolicy. Invalid
// selector label values and CIDRs already present in the stored object are
// tolerated so that such objects remain editable.
func ValidateNetworkPolicyUpdate(np, old *networkingv1.NetworkPolicy) field.ErrorList {
	opts := npOptions{
		allowInvalidLabelValue: len(metav1validation.ValidateLabelSelector(&old.Spec.PodSelector, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0,
		knownCIDRs:             networkPolicyCIDRs(old),
	}
	errs := validateObjectMetaUpdate(&np.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateNetworkPolicySpec(&np.Spec, opts, field.NewPath("spec"))...)
}

type npOptions struct {
	allowInvalidLabelValue bool
	knownCIDRs             []string
}

func networkPolicyCIDRs(np *networkingv1.NetworkPolicy) []string {
	var out []string
	add := func(peers []networkingv1.NetworkPolicyPeer) {
		for _, p := range peers {
			if p.IPBlock != nil {
				out = append(out, p.IPBlock.CIDR)
				out = append(out, p.IPBlock.Except...)
			}
		}
	}
	for _, r := range np.Spec.Ingress {
		add(r.From)
	}
	for _, r := range np.Spec.Egress {
		add(r.To)
	}
	return out
}

func validateNetworkPolicySpec(spec *networkingv1.NetworkPolicySpec, opts npOptions, p *field.Path) field.ErrorList {
	selOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.allowInvalidLabelValue}
	errs := metav1validation.ValidateLabelSelector(&spec.PodSelector, selOpts, p.Child("podSelector"))
	for i, rule := range spec.Ingress {
		rp := p.Child("ingress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], rp.Child("ports").Index(j))...)
		}
		for j := range rule.From {
			errs = append(errs, validateNetworkPolicyPeer(&rule.From[j], opts, rp.Child("from").Index(j))...)
		}
	}
	for i, rule := range spec.Egress {
		rp := p.Child("egress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], rp.Child("ports").Index(j))...)
		}
		for j := range rule.To {
			errs = append(errs, validateNetworkPolicyPeer(&rule.To[j], opts, rp.Child("to").Index(j))...)
		}
	}
	allowed := []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
	if len(spec.PolicyTypes) > len(allowed) {
		return append(errs, field.Invalid(p.Child("policyTypes"), spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range spec.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(p.Child("policyTypes").Index(i), t, allowed))
		}
	}
	return errs
}

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Protocol != nil {
		switch *port.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(p.Child("protocol"), *port.Protocol,
				[]string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
		}
	}
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
			errs = append(errs, field.Invalid(p.Child("port"), port.Port.IntVal, msg))
		}
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*port.EndPort)) {
				errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, msg))
			}
		}
	default:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
			errs = append(errs, field.Invalid(p.Child("port"), port.Port.StrVal, msg))
		}
	}
	return errs
}

func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, opts npOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	selOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.allowInvalidLabelValue}
	n := 0
	if peer.PodSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, selOpts, p.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, selOpts, p.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		n++
		errs = append(errs, validateIPBlock(peer.IPBlock, opts.knownCIDRs, p.Child("ipBlock"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(p, "must specify a peer"))
	case n > 1 && peer.IPBlock != nil:
		errs = append(errs, field.Forbidden(p, "may not specify both ipBlock and another peer"))
	}
	return errs
}

// validateIPBlock checks cidr and that every except entry lies strictly
// inside it. CIDRs present in the stored object (knownCIDRs) skip the strict
// format check.
func validateIPBlock(b *networkingv1.IPBlock, knownCIDRs []string, p *field.Path) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(p.Child("cidr"), "")}
	}
	errs := validation.IsValidCIDRForLegacyField(p.Child("cidr"), b.CIDR, strictIPValidation, knownCIDRs)
	_, outer, err := netutils.ParseCIDRSloppy(b.CIDR)
	if err != nil {
		return errs
	}
	outerBits, _ := outer.Mask.Size()
	for i, ex := range b.Except {
		ep := p.Child("except").Index(i)
		errs = append(errs, validation.IsValidCIDRForLegacyField(ep, ex, strictIPValidation, knownCIDRs)...)
		_, inner, err := netutils.ParseCIDRSloppy(ex)
		if err != nil {
			continue
		}
		innerBits, _ := inner.Mask.Size()
		if !outer.Contains(inner.IP) || outerBits >= innerBits {
			errs = append(errs, field.Invalid(ep, ex, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}

// ---- Ingress ----

type ingressOptions struct {
	allowInvalidSecretName       bool
	allowInvalidWildcardHostRule bool
}

// ValidateIngress validates an Ingress on create. When both the deprecated
// kubernetes.io/ingress.class annotation and spec.ingressClassName are set
// they must agree.
func ValidateIngress(ing *networkingv1.Ingress) field.ErrorList {
	errs := validateIngress(ing, ingressOptions{})
	if v, ok := ing.Annotations[ingressClassAnnotation]; ok && ing.Spec.IngressClassName != nil && v != *ing.Spec.IngressClassName {
		errs = append(errs, field.Invalid(field.NewPath("annotations").Child(ingressClassAnnotation), v, "must match `ingressClassName` when both are specified"))
	}
	return errs
}

// ValidateIngressUpdate validates an update of an Ingress. Invalid TLS secret
// names and invalid rules under wildcard hosts that the stored object already
// had are tolerated.
func ValidateIngressUpdate(ing, old *networkingv1.Ingress) field.ErrorList {
	opts := ingressOptions{
		allowInvalidSecretName:       storedHasInvalidSecretName(old),
		allowInvalidWildcardHostRule: storedHasInvalidWildcardRule(old),
	}
	errs := validateObjectMetaUpdate(&ing.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateIngress(ing, opts)...)
}

// ValidateIngressStatusUpdate validates a write to the status subresource of
// an Ingress.
func ValidateIngressStatusUpdate(ing, old *networkingv1.Ingress) field.ErrorList {
	errs := validateObjectMetaUpdate(&ing.ObjectMeta, &old.ObjectMeta)
	p := field.NewPath("status", "loadBalancer", "ingress")
	var oldIPs []string
	for _, lb := range old.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			oldIPs = append(oldIPs, lb.IP)
		}
	}
	for i, lb := range ing.Status.LoadBalancer.Ingress {
		ip := p.Index(i)
		if lb.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(ip.Child("ip"), lb.IP, strictIPValidation, oldIPs)...)
		}
		if lb.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(lb.Hostname) {
				errs = append(errs, field.Invalid(ip.Child("hostname"), lb.Hostname, msg))
			}
			if netutils.ParseIPSloppy(lb.Hostname) != nil {
				errs = append(errs, field.Invalid(ip.Child("hostname"), lb.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

func validateIngress(ing *networkingv1.Ingress, opts ingressOptions) field.ErrorList {
	errs := validateObjectMeta(&ing.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateIngressSpec(&ing.Spec, opts, field.NewPath("spec"))...)
}

func validateIngressSpec(spec *networkingv1.IngressSpec, opts ingressOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(p, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(spec.DefaultBackend, p.Child("defaultBackend"))...)
	}
	for i := range spec.Rules {
		errs = append(errs, validateIngressRule(&spec.Rules[i], opts, p.Child("rules").Index(i))...)
	}
	for i, tls := range spec.TLS {
		tp := p.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			check := validation.IsDNS1123Subdomain
			if strings.Contains(host, "*") {
				check = validation.IsWildcardDNS1123Subdomain
			}
			for _, msg := range check(host) {
				errs = append(errs, field.Invalid(tp.Child("hosts").Index(j), host, msg))
			}
		}
		if !opts.allowInvalidSecretName && tls.SecretName != "" {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				errs = append(errs, field.Invalid(tp.Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if spec.IngressClassName != nil {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*spec.IngressClassName, false) {
			errs = append(errs, field.Invalid(p.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
	}
	return errs
}

func validateIngressRule(rule *networkingv1.IngressRule, opts ingressOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	wildcard := false
	if rule.Host != "" {
		hp := p.Child("host")
		if netutils.ParseIPSloppy(rule.Host) != nil {
			errs = append(errs, field.Invalid(hp, rule.Host, "must be a DNS name, not an IP address"))
		}
		if strings.Contains(rule.Host, "*") {
			wildcard = true
			for _, msg := range validation.IsWildcardDNS1123Subdomain(rule.Host) {
				errs = append(errs, field.Invalid(hp, rule.Host, msg))
			}
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(rule.Host) {
				errs = append(errs, field.Invalid(hp, rule.Host, msg))
			}
		}
	}
	if wildcard && opts.allowInvalidWildcardHostRule {
		return errs
	}
	return append(errs, validateIngressRuleValue(&rule.IngressRuleValue, p)...)
}

func validateIngressRuleValue(v *networkingv1.IngressRuleValue, p *field.Path) field.ErrorList {
	if v.HTTP == nil {
		return nil
	}
	var errs field.ErrorList
	hp := p.Child("http")
	if len(v.HTTP.Paths) == 0 {
		errs = append(errs, field.Required(hp.Child("paths"), ""))
	}
	for i := range v.HTTP.Paths {
		errs = append(errs, validateHTTPIngressPath(&v.HTTP.Paths[i], hp.Child("paths").Index(i))...)
	}
	return errs
}

var (
	forbiddenPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	forbiddenPathSuffixes  = []string{"/..", "/."}
)

func validateHTTPIngressPath(path *networkingv1.HTTPIngressPath, p *field.Path) field.ErrorList {
	if path.PathType == nil {
		return field.ErrorList{field.Required(p.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	pp := p.Child("path")
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(pp, path.Path, "must be an absolute path"))
		}
		for _, seq := range forbiddenPathSequences {
			if strings.Contains(path.Path, seq) {
				errs = append(errs, field.Invalid(pp, path.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range forbiddenPathSuffixes {
			if strings.HasSuffix(path.Path, suffix) {
				errs = append(errs, field.Invalid(pp, path.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(pp, path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("pathType"), *path.PathType, []string{
			string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix),
		}))
	}
	return append(errs, validateIngressBackend(&path.Backend, p.Child("backend"))...)
}

// validateIngressBackend requires exactly one of service and resource. A
// service backend needs a name and exactly one of port name or port number.
func validateIngressBackend(b *networkingv1.IngressBackend, p *field.Path) field.ErrorList {
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(p, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		return validateTypedLocalObjectReference(b.Resource, p.Child("resource"))
	case b.Service != nil:
		var errs field.ErrorList
		sp := p.Child("service")
		if b.Service.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		} else {
			for _, msg := range apimachineryvalidation.NameIsDNSLabel(b.Service.Name, false) {
				errs = append(errs, field.Invalid(sp.Child("name"), b.Service.Name, msg))
			}
		}
		port := b.Service.Port
		switch {
		case port.Name != "" && port.Number != 0:
			errs = append(errs, field.Invalid(p, "", "cannot set both port name & port number"))
		case port.Name != "":
			for _, msg := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(sp.Child("port", "name"), port.Name, msg))
			}
		case port.Number != 0:
			for _, msg := range validation.IsValidPortNum(int(port.Number)) {
				errs = append(errs, field.Invalid(sp.Child("port", "number"), port.Number, msg))
			}
		default:
			errs = append(errs, field.Required(p, "port name or number is required"))
		}
		return errs
	default:
		return field.ErrorList{field.Invalid(p, "", "resource or service backend is required")}
	}
}

func validateTypedLocalObjectReference(ref *corev1.TypedLocalObjectReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*ref.APIGroup) {
			errs = append(errs, field.Invalid(p.Child("apiGroup"), *ref.APIGroup, msg))
		}
	}
	errs = append(errs, requirePathSegment(ref.Kind, p.Child("kind"))...)
	return append(errs, requirePathSegment(ref.Name, p.Child("name"))...)
}

func requirePathSegment(v string, p *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func storedHasInvalidSecretName(old *networkingv1.Ingress) bool {
	for _, tls := range old.Spec.TLS {
		if tls.SecretName != "" && len(apimachineryvalidation.NameIsDNSSubdomain(tls.SecretName, false)) > 0 {
			return true
		}
	}
	return false
}

func storedHasInvalidWildcardRule(old *networkingv1.Ingress) bool {
	for i := range old.Spec.Rules {
		r := &old.Spec.Rules[i]
		if strings.Contains(r.Host, "*") && len(validateIngressRuleValue(&r.IngressRuleValue, nil)) > 0 {
			return true
		}
	}
	return false
}

// ---- IngressClass ----

// ValidateIngressClass validates an IngressClass on create.
func ValidateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	errs := validateObjectMeta(&ic.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	p := field.NewPath("spec")
	if len(ic.Spec.Controller) > maxIngressClassControllerLen {
		errs = append(errs, field.TooLong(p.Child("controller"), "", maxIngressClassControllerLen))
	}
	errs = append(errs, validation.IsDomainPrefixedPath(p.Child("controller"), ic.Spec.Controller)...)
	return append(errs, validateIngressClassParameters(ic.Spec.Parameters, p.Child("parameters"))...)
}

// ValidateIngressClassUpdate validates an update of an IngressClass;
// spec.controller is immutable.
func ValidateIngressClassUpdate(ic, old *networkingv1.IngressClass) field.ErrorList {
	errs := validateObjectMetaUpdate(&ic.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(ic.Spec.Controller, old.Spec.Controller, field.NewPath("spec", "controller"))...)
	return append(errs, ValidateIngressClass(ic)...)
}

func validateIngressClassParameters(params *networkingv1.IngressClassParametersReference, p *field.Path) field.ErrorList {
	if params == nil {
		return nil
	}
	var errs field.ErrorList
	if params.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*params.APIGroup) {
			errs = append(errs, field.Invalid(p.Child("apiGroup"), *params.APIGroup, msg))
		}
	}
	errs = append(errs, requirePathSegment(params.Kind, p.Child("kind"))...)
	errs = append(errs, requirePathSegment(params.Name, p.Child("name"))...)
	if params.Scope == nil {
		return append(errs, field.Required(p.Child("scope"), ""))
	}
	switch *params.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if params.Namespace == nil {
			errs = append(errs, field.Required(p.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		} else {
			for _, msg := range apimachineryvalidation.ValidateNamespaceName(*params.Namespace, false) {
				errs = append(errs, field.Invalid(p.Child("namespace"), *params.Namespace, msg))
			}
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if params.Namespace != nil {
			errs = append(errs, field.Forbidden(p.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("scope"), *params.Scope, []string{
			networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace,
		}))
	}
	return errs
}
