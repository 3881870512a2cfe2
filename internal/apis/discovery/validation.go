package discovery

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

const (
	maxTopologyLabels = 16
	maxAddresses      = 100
	maxPorts          = 20000
	// MaxEndpoints is the largest number of endpoints one slice may hold.
	MaxEndpoints = 1000
	maxZoneHints = 8
	maxNodeHints = 8
	// strictIPValidation mirrors the StrictIPCIDRValidation feature gate, on
	// by default in v1.37.
	strictIPValidation = true
)

var (
	addressTypes = []string{string(discoveryv1.AddressTypeFQDN), string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6)}
	protocols    = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
)

// ValidateEndpointSlice validates an EndpointSlice on create.
func ValidateEndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	return validateEndpointSlice(es, nil)
}

// ValidateEndpointSliceUpdate validates an update of an EndpointSlice.
// addressType is immutable. When the endpoints list is unchanged, problems
// in it are not reported again, so slices written by older servers stay
// editable.
func ValidateEndpointSliceUpdate(es, old *discoveryv1.EndpointSlice) field.ErrorList {
	errs := validateEndpointSlice(es, old)
	errs = append(errs, validateObjectMetaUpdate(&es.ObjectMeta, &old.ObjectMeta)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(es.AddressType, old.AddressType, field.NewPath("addressType"))...)
}

func validateEndpointSlice(es, old *discoveryv1.EndpointSlice) field.ErrorList {
	errs := validateObjectMeta(&es.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validateAddressType(es.AddressType)...)
	errs = append(errs, validatePorts(es.Ports, field.NewPath("ports"))...)
	epErrs := validateEndpoints(es.Endpoints, es.AddressType, field.NewPath("endpoints"))
	if len(epErrs) > 0 && old != nil && equality.Semantic.DeepEqual(old.Endpoints, es.Endpoints) {
		epErrs = nil
	}
	return append(errs, epErrs...)
}

func validateAddressType(t discoveryv1.AddressType) field.ErrorList {
	p := field.NewPath("addressType")
	switch t {
	case "":
		return field.ErrorList{field.Required(p, "")}
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, t, addressTypes)}
}

func validateEndpoints(endpoints []discoveryv1.Endpoint, addrType discoveryv1.AddressType, p *field.Path) field.ErrorList {
	if len(endpoints) > MaxEndpoints {
		return field.ErrorList{field.TooMany(p, len(endpoints), MaxEndpoints)}
	}
	var errs field.ErrorList
	for i := range endpoints {
		ep := &endpoints[i]
		ip := p.Index(i)
		ap := ip.Child("addresses")
		switch {
		case len(ep.Addresses) == 0:
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		case len(ep.Addresses) > maxAddresses:
			errs = append(errs, field.TooMany(ap, len(ep.Addresses), maxAddresses))
		}
		for j, addr := range ep.Addresses {
			errs = append(errs, validateAddress(addr, addrType, ap, ap.Index(j))...)
		}
		if ep.NodeName != nil {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*ep.NodeName, false) {
				errs = append(errs, field.Invalid(ip.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		tp := ip.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxTopologyLabels {
			errs = append(errs, field.TooMany(tp, len(ep.DeprecatedTopology), maxTopologyLabels))
		}
		errs = append(errs, metav1validation.ValidateLabels(ep.DeprecatedTopology, tp)...)
		if ep.Hostname != nil {
			for _, msg := range validation.IsDNS1123Label(*ep.Hostname) {
				errs = append(errs, field.Invalid(ip.Child("hostname"), *ep.Hostname, msg))
			}
		}
		if ep.Hints != nil {
			errs = append(errs, validateHints(ep.Hints, ip.Child("hints"))...)
		}
	}
	return errs
}

// validateAddress checks one address against the slice's address type.
// Family mismatches are reported on the addresses list (listPath), as
// upstream does; format problems on the address itself (p). Addresses of an
// unknown type were already rejected through addressType.
func validateAddress(addr string, addrType discoveryv1.AddressType, listPath, p *field.Path) field.ErrorList {
	switch addrType {
	case discoveryv1.AddressTypeIPv4:
		if errs := validation.IsValidIPForLegacyField(p, addr, strictIPValidation, nil); len(errs) > 0 {
			return errs
		}
		var errs field.ErrorList
		if !netutils.IsIPv4String(addr) {
			errs = append(errs, field.Invalid(listPath, addr, "must be an IPv4 address"))
		}
		return append(errs, validateEndpointIP(addr, p)...)
	case discoveryv1.AddressTypeIPv6:
		if errs := validation.IsValidIP(p, addr); len(errs) > 0 {
			return errs
		}
		var errs field.ErrorList
		if !netutils.IsIPv6String(addr) {
			errs = append(errs, field.Invalid(listPath, addr, "must be an IPv6 address"))
		}
		return append(errs, validateEndpointIP(addr, p)...)
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(p, addr)
	}
	return nil
}

// validateEndpointIP rejects addresses that can never be a pod or service
// backend: unspecified, loopback and link-local ones.
func validateEndpointIP(addr string, p *field.Path) field.ErrorList {
	ip := netutils.ParseIPSloppy(addr)
	if ip == nil {
		return field.ErrorList{field.Invalid(p, addr, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(p, addr, "may not be unspecified ("+addr+")"))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func validatePorts(ports []discoveryv1.EndpointPort, p *field.Path) field.ErrorList {
	if len(ports) > maxPorts {
		return field.ErrorList{field.TooMany(p, len(ports), maxPorts)}
	}
	var errs field.ErrorList
	names := make(map[string]bool, len(ports))
	for i := range ports {
		port := &ports[i]
		pp := p.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(pp.Child("name"), name, msg))
			}
		}
		if names[name] {
			errs = append(errs, field.Duplicate(pp.Child("name"), name))
		}
		names[name] = true
		switch {
		case port.Protocol == nil:
			errs = append(errs, field.Required(pp.Child("protocol"), ""))
		case *port.Protocol != corev1.ProtocolTCP && *port.Protocol != corev1.ProtocolUDP && *port.Protocol != corev1.ProtocolSCTP:
			errs = append(errs, field.NotSupported(pp.Child("protocol"), *port.Protocol, protocols))
		}
		if port.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*port.AppProtocol) {
				errs = append(errs, field.Invalid(pp.Child("appProtocol"), *port.AppProtocol, msg))
			}
		}
	}
	return errs
}

func validateHints(h *discoveryv1.EndpointHints, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	zp := p.Child("forZones")
	if len(h.ForZones) > maxZoneHints {
		return append(errs, field.TooMany(zp, len(h.ForZones), maxZoneHints))
	}
	zones := make(map[string]bool, len(h.ForZones))
	for i, z := range h.ForZones {
		np := zp.Index(i).Child("name")
		if zones[z.Name] {
			errs = append(errs, field.Duplicate(np, z.Name))
		}
		zones[z.Name] = true
		for _, msg := range validation.IsValidLabelValue(z.Name) {
			errs = append(errs, field.Invalid(np, z.Name, msg))
		}
	}
	fp := p.Child("forNodes")
	if len(h.ForNodes) > maxNodeHints {
		return append(errs, field.TooMany(fp, len(h.ForNodes), maxNodeHints))
	}
	nodes := make(map[string]bool, len(h.ForNodes))
	for i, n := range h.ForNodes {
		np := fp.Index(i).Child("name")
		if nodes[n.Name] {
			errs = append(errs, field.Duplicate(np, n.Name))
		}
		nodes[n.Name] = true
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(n.Name, false) {
			errs = append(errs, field.Invalid(np, n.Name, msg))
		}
	}
	return errs
}
