package core

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"
)

// DefaultServiceIPFamilies fills ipFamilyPolicy and ipFamilies for a
// single-stack IPv4 cluster, as upstream's service REST layer does at
// allocation time (it is not part of scheme defaulting). ExternalName
// services are left alone. An unset policy becomes SingleStack, except for a
// headless service without selector, which becomes RequireDualStack and
// lists both families, as upstream allows. Unset families become [IPv4].
func DefaultServiceIPFamilies(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	headlessSelectorless := spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0
	if spec.IPFamilyPolicy == nil {
		if headlessSelectorless {
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		} else {
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
		}
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		// A user-chosen cluster IP decides the primary family.
		if len(spec.ClusterIPs) > 0 && spec.ClusterIPs[0] != corev1.ClusterIPNone && netutils.IsIPv6String(spec.ClusterIPs[0]) {
			spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
		}
	}
	if headlessSelectorless && len(spec.IPFamilies) == 1 && *spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		other := corev1.IPv6Protocol
		if spec.IPFamilies[0] == corev1.IPv6Protocol {
			other = corev1.IPv4Protocol
		}
		spec.IPFamilies = append(spec.IPFamilies, other)
	}
}

// NormalizeServiceClusterIPs keeps spec.clusterIP and spec.clusterIPs in step
// before validation, as upstream's service REST layer does: on create
// (oldSvc nil) a lone clusterIP initialises clusterIPs; on update an omitted
// clusterIPs is taken from the old object when clusterIP did not change, and
// a changed or cleared clusterIP carries clusterIPs along.
func NormalizeServiceClusterIPs(newSvc, oldSvc *corev1.Service) {
	ns := &newSvc.Spec
	if oldSvc == nil {
		if ns.ClusterIP != "" && len(ns.ClusterIPs) == 0 {
			ns.ClusterIPs = []string{ns.ClusterIP}
		}
		return
	}
	oldSpec := &oldSvc.Spec
	if len(oldSpec.ClusterIPs) > 0 && len(ns.ClusterIPs) == 0 && oldSpec.ClusterIP == ns.ClusterIP {
		ns.ClusterIPs = oldSpec.ClusterIPs
	}
	if oldSpec.ClusterIP != ns.ClusterIP && sameStrings(oldSpec.ClusterIPs, ns.ClusterIPs) {
		if ns.ClusterIP == "" {
			ns.ClusterIPs = nil
		} else {
			ns.ClusterIPs = []string{ns.ClusterIP}
		}
	}
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var (
	supportedServiceTypes = sets.New(corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort,
		corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName)
	supportedSessionAffinity   = sets.New(corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone)
	supportedIPFamilies        = sets.New(corev1.IPv4Protocol, corev1.IPv6Protocol)
	supportedIPFamilyPolicies  = sets.New(corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack)
	supportedExternalPolicies  = sets.New(corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal)
	supportedInternalPolicies  = sets.New(corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal)
	supportedLoadBalancerModes = sets.New(corev1.LoadBalancerIPModeVIP, corev1.LoadBalancerIPModeProxy)
	supportedTrafficDistrib    = []string{corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode}
)

func isHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// ValidateService validates a Service on create. The service name must be a
// DNS-1123 label. Call NormalizeServiceClusterIPs first.
func ValidateService(svc *corev1.Service) field.ErrorList {
	errs := validateMeta(&svc.ObjectMeta, true, nameIsLabel, field.NewPath("metadata"))
	return append(errs, validateService(svc, nil)...)
}

// ValidateServiceUpdate validates a Service update: cluster IPs and IP
// families may only be added or released as dual-stack rules allow (any
// change is possible to and from ExternalName), loadBalancerClass and the
// health check node port are immutable while they apply.
func ValidateServiceUpdate(svc, oldSvc *corev1.Service) field.ErrorList {
	errs := validateMetaUpdate(&svc.ObjectMeta, &oldSvc.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateClusterIPsUpdate(oldSvc, svc)...)
	errs = append(errs, validateIPFamiliesUpdate(oldSvc, svc)...)
	if oldSvc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		!ptr.Equal(oldSvc.Spec.LoadBalancerClass, svc.Spec.LoadBalancerClass) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "loadBalancerClass"), svc.Spec.LoadBalancerClass, "may not change once set"))
	}
	if needsHealthCheck(oldSvc) && needsHealthCheck(svc) && oldSvc.Spec.HealthCheckNodePort != svc.Spec.HealthCheckNodePort {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), "field is immutable"))
	}
	return append(errs, validateService(svc, oldSvc)...)
}

// ValidateServiceStatusUpdate validates a status update (load balancer
// ingress).
func ValidateServiceStatusUpdate(svc, oldSvc *corev1.Service) field.ErrorList {
	errs := validateMetaUpdate(&svc.ObjectMeta, &oldSvc.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateLoadBalancerStatus(&svc.Status.LoadBalancer, &oldSvc.Status.LoadBalancer, &svc.Spec, field.NewPath("status", "loadBalancer"))...)
}

func validateService(svc, oldSvc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	headless := isHeadless(svc)

	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if headless {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0],
				fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		// A trailing dot marks a fully qualified name.
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			errs = append(errs, dnsSubdomain(cname, specPath.Child("externalName"))...)
		} else {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		}
	}

	portsPath := specPath.Child("ports")
	names := sets.New[string]()
	for i := range spec.Ports {
		errs = append(errs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, names, portsPath.Index(i))...)
	}
	if spec.Selector != nil {
		errs = append(errs, metavalidation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}

	switch {
	case spec.SessionAffinity == "":
		errs = append(errs, field.Required(specPath.Child("sessionAffinity"), ""))
	case !supportedSessionAffinity.Has(spec.SessionAffinity):
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity, sets.List(supportedSessionAffinity)))
	}
	cfgPath := specPath.Child("sessionAffinityConfig")
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		errs = append(errs, validateClientIPConfig(spec.SessionAffinityConfig, cfgPath)...)
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(cfgPath, "must not be set when session affinity is None"))
		}
	}

	errs = append(errs, validateClusterIPsFields(svc, oldSvc)...)

	var oldExternal []string
	if oldSvc != nil {
		oldExternal = oldSvc.Spec.ExternalIPs
	}
	for i, ip := range spec.ExternalIPs {
		p := specPath.Child("externalIPs").Index(i)
		if ipErrs := validIP(p, ip, oldExternal); len(ipErrs) != 0 {
			errs = append(errs, ipErrs...)
		} else {
			errs = append(errs, validateEndpointIP(ip, p)...)
		}
	}

	switch {
	case spec.Type == "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	case !supportedServiceTypes.Has(spec.Type):
		errs = append(errs, field.NotSupported(specPath.Child("type"), spec.Type, sets.List(supportedServiceTypes)))
	}

	nodePorts := sets.New[string]()
	ports := sets.New[string]()
	for i, port := range spec.Ports {
		p := portsPath.Index(i)
		if port.NodePort != 0 {
			if spec.Type == corev1.ServiceTypeClusterIP {
				errs = append(errs, field.Forbidden(p.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
			key := fmt.Sprintf("%s/%d", port.Protocol, port.NodePort)
			if nodePorts.Has(key) {
				errs = append(errs, field.Duplicate(p.Child("nodePort"), port.NodePort))
			}
			nodePorts.Insert(key)
		}
		key := fmt.Sprintf("%s/%d", port.Protocol, port.Port)
		if ports.Has(key) {
			errs = append(errs, field.Duplicate(p, corev1.ServicePort{Protocol: port.Protocol, Port: port.Port}))
		}
		ports.Insert(key)
	}

	if len(spec.LoadBalancerSourceRanges) > 0 {
		p := specPath.Child("LoadBalancerSourceRanges")
		if spec.Type != corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
		}
		var old []string
		if oldSvc != nil {
			for _, v := range oldSvc.Spec.LoadBalancerSourceRanges {
				old = append(old, strings.TrimSpace(v))
			}
		}
		for i, v := range spec.LoadBalancerSourceRanges {
			errs = append(errs, validCIDR(p.Index(i), strings.TrimSpace(v), old)...)
		}
	} else if v, ok := svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]; ok {
		p := field.NewPath("metadata", "annotations").Key(corev1.AnnotationLoadBalancerSourceRangesKey)
		if spec.Type != corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
		}
		if oldSvc == nil || oldSvc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey] != v {
			if v = strings.TrimSpace(v); v != "" {
				for _, cidr := range strings.Split(v, ",") {
					errs = append(errs, validCIDR(p, strings.TrimSpace(cidr), nil)...)
				}
			}
		}
	}

	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		errs = append(errs, field.Required(specPath.Child("allocateLoadBalancerNodePorts"), ""))
	}
	if spec.LoadBalancerClass != nil {
		if spec.Type == corev1.ServiceTypeLoadBalancer {
			errs = append(errs, qualifiedName(*spec.LoadBalancerClass, specPath.Child("loadBalancerClass"))...)
		} else {
			errs = append(errs, field.Forbidden(specPath.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
		}
	}

	etpPath := specPath.Child("externalTrafficPolicy")
	if !externallyAccessible(svc) {
		if spec.ExternalTrafficPolicy != "" {
			errs = append(errs, field.Invalid(etpPath, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	} else if spec.ExternalTrafficPolicy == "" {
		errs = append(errs, field.Required(etpPath, ""))
	} else if !supportedExternalPolicies.Has(spec.ExternalTrafficPolicy) {
		errs = append(errs, field.NotSupported(etpPath, spec.ExternalTrafficPolicy, sets.List(supportedExternalPolicies)))
	}
	hcPath := specPath.Child("healthCheckNodePort")
	if !needsHealthCheck(svc) {
		if spec.HealthCheckNodePort != 0 {
			errs = append(errs, field.Invalid(hcPath, spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
	} else if spec.HealthCheckNodePort == 0 {
		errs = append(errs, field.Required(hcPath, ""))
	} else {
		for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(hcPath, spec.HealthCheckNodePort, msg))
		}
	}

	itpPath := specPath.Child("internalTrafficPolicy")
	if spec.InternalTrafficPolicy == nil {
		switch spec.Type {
		case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
			errs = append(errs, field.Required(itpPath, ""))
		}
	} else if !supportedInternalPolicies.Has(*spec.InternalTrafficPolicy) {
		errs = append(errs, field.NotSupported(itpPath, *spec.InternalTrafficPolicy, sets.List(supportedInternalPolicies)))
	}
	if td := spec.TrafficDistribution; td != nil && !contains(supportedTrafficDistrib, *td) {
		errs = append(errs, field.NotSupported(specPath.Child("trafficDistribution"), *td, supportedTrafficDistrib))
	}
	return errs
}

func validateServicePort(sp *corev1.ServicePort, requireName bool, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && sp.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if sp.Name != "" {
		errs = append(errs, dnsLabel(sp.Name, fldPath.Child("name"))...)
		if names.Has(sp.Name) {
			errs = append(errs, field.Duplicate(fldPath.Child("name"), sp.Name))
		} else {
			names.Insert(sp.Name)
		}
	}
	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), sp.Port, msg))
	}
	errs = append(errs, validateProtocol(sp.Protocol, fldPath.Child("protocol"))...)
	errs = append(errs, validatePortNumOrName(sp.TargetPort, fldPath.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		errs = append(errs, qualifiedName(*sp.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return errs
}

func validateClientIPConfig(cfg *corev1.SessionAffinityConfig, fldPath *field.Path) field.ErrorList {
	const when = "when session affinity type is ClientIP"
	switch {
	case cfg == nil:
		return field.ErrorList{field.Required(fldPath, when)}
	case cfg.ClientIP == nil:
		return field.ErrorList{field.Required(fldPath.Child("clientIP"), when)}
	case cfg.ClientIP.TimeoutSeconds == nil:
		return field.ErrorList{field.Required(fldPath.Child("clientIP", "timeoutSeconds"), when)}
	}
	if t := *cfg.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPAffinitySeconds {
		return field.ErrorList{field.Invalid(fldPath.Child("clientIP", "timeoutSeconds"), t,
			fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds))}
	}
	return nil
}

// validateClusterIPsFields checks clusterIP/clusterIPs/ipFamilies/
// ipFamilyPolicy for non-ExternalName services.
func validateClusterIPsFields(svc, oldSvc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	ipsPath := specPath.Child("clusterIPs")
	famPath := specPath.Child("ipFamilies")

	if spec.ClusterIP != "" {
		if len(spec.ClusterIPs) == 0 {
			errs = append(errs, field.Required(ipsPath, ""))
		} else if spec.ClusterIPs[0] != spec.ClusterIP {
			errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(spec.ClusterIPs) != 0 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}

	seen := sets.New[corev1.IPFamily]()
	for i, fam := range spec.IPFamilies {
		if !supportedIPFamilies.Has(fam) {
			errs = append(errs, field.NotSupported(famPath.Index(i), fam, sets.List(supportedIPFamilies)))
		}
		if seen.Has(fam) {
			errs = append(errs, field.Duplicate(famPath.Index(i), fam))
		}
		seen.Insert(fam)
	}
	if p := spec.IPFamilyPolicy; p != nil && !supportedIPFamilyPolicies.Has(*p) {
		errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *p, sets.List(supportedIPFamilyPolicies)))
	}

	var old []string
	if oldSvc != nil {
		old = oldSvc.Spec.ClusterIPs
	}
	badIPs := false
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				badIPs = true
				errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		ipErrs := validIP(ipsPath.Index(i), ip, old)
		badIPs = badIPs || len(ipErrs) > 0
		errs = append(errs, ipErrs...)
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	if badIPs {
		return errs
	}
	if len(spec.ClusterIPs) > 1 {
		if dual, err := netutils.IsDualStackIPStrings(spec.ClusterIPs); err != nil || !dual {
			errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may specify no more than one IP for each IP family"))
		}
	}
	if !isHeadless(svc) {
		for i, ip := range spec.ClusterIPs {
			if i >= len(spec.IPFamilies) {
				break
			}
			v6 := netutils.IsIPv6String(ip)
			if spec.IPFamilies[i] == corev1.IPv4Protocol && v6 {
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv4 value as indicated by `ipFamilies[%v]`", i)))
			}
			if spec.IPFamilies[i] == corev1.IPv6Protocol && !v6 {
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv6 value as indicated by `ipFamilies[%v]`", i)))
			}
		}
	}
	return errs
}

func validateClusterIPsUpdate(oldSvc, svc *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || oldSvc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if isHeadless(oldSvc) && isHeadless(svc) {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("spec", "clusterIPs")
	oldIPs, newIPs := oldSvc.Spec.ClusterIPs, svc.Spec.ClusterIPs
	switch {
	case len(oldIPs) == len(newIPs):
		for i := range oldIPs {
			if oldIPs[i] != newIPs[i] {
				errs = append(errs, field.Invalid(p.Index(i), newIPs, "may not change once set"))
			}
		}
	case len(oldIPs) > len(newIPs):
		if len(newIPs) == 0 {
			errs = append(errs, field.Invalid(p.Index(0), newIPs, "primary clusterIP can not be unset"))
		} else if newIPs[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(p.Index(0), newIPs, "may not change once set"))
		}
		if len(newIPs) == 1 && (svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary clusterIP"))
		}
	default:
		if len(oldIPs) > 0 && newIPs[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(p.Index(0), newIPs, "may not change once set"))
		}
	}
	return errs
}

func validateIPFamiliesUpdate(oldSvc, svc *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || oldSvc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if isHeadless(oldSvc) || isHeadless(svc) {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("spec", "ipFamilies")
	oldF, newF := oldSvc.Spec.IPFamilies, svc.Spec.IPFamilies
	switch {
	case len(oldF) == len(newF):
		for i := range oldF {
			if oldF[i] != newF[i] {
				errs = append(errs, field.Invalid(p.Index(0), newF, "may not change once set"))
			}
		}
	case len(oldF) > len(newF):
		if len(newF) == 0 {
			errs = append(errs, field.Invalid(p.Index(0), newF, "primary ipFamily can not be unset"))
		} else if newF[0] != oldF[0] {
			errs = append(errs, field.Invalid(p.Index(0), newF, "may not change once set"))
		}
		if len(newF) == 1 && (svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary ipFamily"))
		}
	default:
		if len(oldF) > 0 && newF[0] != oldF[0] {
			errs = append(errs, field.Invalid(p.Index(0), newF, "may not change once set"))
		}
	}
	return errs
}

func validateLoadBalancerStatus(st, oldSt *corev1.LoadBalancerStatus, spec *corev1.ServiceSpec, fldPath *field.Path) field.ErrorList {
	ingPath := fldPath.Child("ingress")
	if spec.Type != corev1.ServiceTypeLoadBalancer && len(st.Ingress) != 0 {
		return field.ErrorList{field.Forbidden(ingPath, "may only be used when `spec.type` is 'LoadBalancer'")}
	}
	var old []string
	if oldSt != nil {
		for _, ing := range oldSt.Ingress {
			if ing.IP != "" {
				old = append(old, ing.IP)
			}
		}
	}
	var errs field.ErrorList
	for i, ing := range st.Ingress {
		p := ingPath.Index(i)
		if ing.IP != "" {
			errs = append(errs, validIP(p.Child("ip"), ing.IP, old)...)
		}
		switch {
		case ing.IPMode == nil:
			if ing.IP != "" {
				errs = append(errs, field.Required(p.Child("ipMode"), "must be specified when `ip` is set"))
			}
		case ing.IP == "":
			errs = append(errs, field.Forbidden(p.Child("ipMode"), "may not be specified when `ip` is not set"))
		case !supportedLoadBalancerModes.Has(*ing.IPMode):
			errs = append(errs, field.NotSupported(p.Child("ipMode"), *ing.IPMode, sets.List(supportedLoadBalancerModes)))
		}
		if ing.Hostname != "" {
			errs = append(errs, dnsSubdomain(ing.Hostname, p.Child("hostname"))...)
			if netutils.ParseIPSloppy(ing.Hostname) != nil {
				errs = append(errs, field.Invalid(p.Child("hostname"), ing.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

// validateEndpointIP rejects addresses that make no sense as endpoints:
// unspecified, loopback and link-local ones.
func validateEndpointIP(addr string, fldPath *field.Path) field.ErrorList {
	ip := netutils.ParseIPSloppy(addr)
	if ip == nil {
		return field.ErrorList{field.Invalid(fldPath, addr, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(fldPath, addr, fmt.Sprintf("may not be unspecified (%v)", addr)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(fldPath, addr, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(fldPath, addr, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(fldPath, addr, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

// maxClientIPAffinitySeconds is the largest ClientIP session affinity
// timeout (one day).
const maxClientIPAffinitySeconds = 86400

// DropServiceTypeDependentFields clears, on an update that changes a
// Service's type, the fields the new type has no use for that were
// allocated or defaulted for the old one — only where the user left them
// as they were (a change is theirs, and validation judges it), as
// upstream's service strategy does: the cluster IPs and IP families of a
// Service becoming ExternalName, node ports and the health-check node port
// no longer needed, allocateLoadBalancerNodePorts and loadBalancerClass of
// a former LoadBalancer, externalTrafficPolicy of a Service no longer
// reachable from outside; and the load-balancer status of a Service that
// is no longer a LoadBalancer.
func DropServiceTypeDependentFields(svc, oldSvc *corev1.Service) {
	if oldSvc == nil {
		return
	}
	if needsClusterIPs(oldSvc) && !needsClusterIPs(svc) {
		if svc.Spec.ClusterIP == oldSvc.Spec.ClusterIP && sameStrings(svc.Spec.ClusterIPs, oldSvc.Spec.ClusterIPs) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
		if slices.Equal(svc.Spec.IPFamilies, oldSvc.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if ptr.Equal(svc.Spec.IPFamilyPolicy, oldSvc.Spec.IPFamilyPolicy) {
			svc.Spec.IPFamilyPolicy = nil
		}
	}
	if needsNodePorts(oldSvc) && !needsNodePorts(svc) && sameNodePorts(svc, oldSvc) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheck(oldSvc) && !needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort == oldSvc.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	if oldSvc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if svc.Spec.AllocateLoadBalancerNodePorts != nil && ptr.Equal(svc.Spec.AllocateLoadBalancerNodePorts, oldSvc.Spec.AllocateLoadBalancerNodePorts) {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if ptr.Equal(svc.Spec.LoadBalancerClass, oldSvc.Spec.LoadBalancerClass) {
			svc.Spec.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(oldSvc) && !externallyAccessible(svc) && svc.Spec.ExternalTrafficPolicy == oldSvc.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

// needsClusterIPs: every type but ExternalName holds a cluster IP (or None).
func needsClusterIPs(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName
}

func needsNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

func sameNodePorts(a, b *corev1.Service) bool {
	for _, p := range a.Spec.Ports {
		for _, q := range b.Spec.Ports {
			if p.Name == q.Name && p.Port == q.Port && p.Protocol == q.Protocol && p.NodePort != q.NodePort {
				return false
			}
		}
	}
	return true
}
