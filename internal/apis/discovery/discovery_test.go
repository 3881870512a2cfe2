package discovery

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestDefaultEndpointSlice(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	es := &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{}, {Name: ptr.To("dns"), Protocol: ptr.To(corev1.ProtocolUDP)}}}
	s.Default(es)
	if es.Ports[0].Name == nil || *es.Ports[0].Name != "" {
		t.Errorf("port[0].name = %v, want \"\"", es.Ports[0].Name)
	}
	if es.Ports[0].Protocol == nil || *es.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("port[0].protocol = %v, want TCP", es.Ports[0].Protocol)
	}
	if *es.Ports[1].Name != "dns" || *es.Ports[1].Protocol != corev1.ProtocolUDP {
		t.Errorf("explicit port overwritten: %+v", es.Ports[1])
	}
}

func validSlice() *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "default", ResourceVersion: "1"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses: []string{"10.42.0.5"},
			NodeName:  ptr.To("node-a"),
			Hostname:  ptr.To("web-0"),
			Zone:      ptr.To("zone-a"),
			Hints:     &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}, ForNodes: []discoveryv1.ForNode{{Name: "node-a"}}},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), AppProtocol: ptr.To("kubernetes.io/h2c")}},
	}
	DefaultEndpointSlice(es)
	return es
}

func TestValidateEndpointSlice(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*discoveryv1.EndpointSlice)
		want   []errKey
	}{
		{name: "valid", mutate: func(*discoveryv1.EndpointSlice) {}},
		{
			name:   "missing address type",
			mutate: func(es *discoveryv1.EndpointSlice) { es.AddressType = "" },
			want:   []errKey{e(field.ErrorTypeRequired, "addressType")},
		},
		{
			name:   "unknown address type",
			mutate: func(es *discoveryv1.EndpointSlice) { es.AddressType = "IPv5" },
			want:   []errKey{e(field.ErrorTypeNotSupported, "addressType")},
		},
		{
			name:   "ipv6 address in ipv4 slice",
			mutate: func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Addresses = []string{"fd00::1"} },
			want:   []errKey{e(field.ErrorTypeInvalid, "endpoints[0].addresses")},
		},
		{
			name:   "garbage address",
			mutate: func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Addresses = []string{"ten.0.0.1"} },
			want:   []errKey{e(field.ErrorTypeInvalid, "endpoints[0].addresses[0]")},
		},
		{
			name:   "loopback address",
			mutate: func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Addresses = []string{"127.0.0.1"} },
			want:   []errKey{e(field.ErrorTypeInvalid, "endpoints[0].addresses[0]")},
		},
		{
			name: "ipv6 slice",
			mutate: func(es *discoveryv1.EndpointSlice) {
				es.AddressType = discoveryv1.AddressTypeIPv6
				es.Endpoints[0].Addresses = []string{"fd00::1"}
			},
		},
		{
			name: "fqdn slice",
			mutate: func(es *discoveryv1.EndpointSlice) {
				es.AddressType = discoveryv1.AddressTypeFQDN
				es.Endpoints[0].Addresses = []string{"db.example.com", "not_a_name"}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "endpoints[0].addresses[1]")},
		},
		{
			name:   "no addresses",
			mutate: func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Addresses = nil },
			want:   []errKey{e(field.ErrorTypeRequired, "endpoints[0].addresses")},
		},
		{
			name: "too many endpoints",
			mutate: func(es *discoveryv1.EndpointSlice) {
				es.Endpoints = nil
				for i := 0; i < MaxEndpoints+1; i++ {
					es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)}})
				}
			},
			want: []errKey{e(field.ErrorTypeTooMany, "endpoints")},
		},
		{
			name: "exactly max endpoints",
			mutate: func(es *discoveryv1.EndpointSlice) {
				es.Endpoints = nil
				for i := 0; i < MaxEndpoints; i++ {
					es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)}})
				}
			},
		},
		{
			name: "bad node, hostname and hints",
			mutate: func(es *discoveryv1.EndpointSlice) {
				es.Endpoints[0].NodeName = ptr.To("Node_A")
				es.Endpoints[0].Hostname = ptr.To("web.0")
				es.Endpoints[0].Hints.ForZones = append(es.Endpoints[0].Hints.ForZones, discoveryv1.ForZone{Name: "zone-a"})
			},
			want: []errKey{
				e(field.ErrorTypeInvalid, "endpoints[0].nodeName"),
				e(field.ErrorTypeInvalid, "endpoints[0].hostname"),
				e(field.ErrorTypeDuplicate, "endpoints[0].hints.forZones[1].name"),
			},
		},
		{
			name: "duplicate and invalid ports",
			mutate: func(es *discoveryv1.EndpointSlice) {
				es.Ports = append(es.Ports,
					discoveryv1.EndpointPort{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP)},
					discoveryv1.EndpointPort{Name: ptr.To("Bad_Name"), Protocol: ptr.To(corev1.Protocol("ICMP"))},
					discoveryv1.EndpointPort{Name: ptr.To("x"), Protocol: nil, AppProtocol: ptr.To("not valid")},
				)
			},
			want: []errKey{
				e(field.ErrorTypeDuplicate, "ports[1].name"),
				e(field.ErrorTypeInvalid, "ports[2].name"),
				e(field.ErrorTypeNotSupported, "ports[2].protocol"),
				e(field.ErrorTypeRequired, "ports[3].protocol"),
				e(field.ErrorTypeInvalid, "ports[3].appProtocol"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			es := validSlice()
			tc.mutate(es)
			expectErrs(t, ValidateEndpointSlice(es), tc.want...)
		})
	}
}

func TestValidateEndpointSliceUpdate(t *testing.T) {
	old := validSlice()
	upd := old.DeepCopy()
	upd.AddressType = discoveryv1.AddressTypeFQDN
	upd.Endpoints[0].Addresses = []string{"web.example.com"}
	expectErrs(t, ValidateEndpointSliceUpdate(upd, old), e(field.ErrorTypeInvalid, "addressType"))

	// Unchanged invalid endpoints written earlier are not re-reported.
	stored := validSlice()
	stored.Endpoints[0].Addresses = []string{"127.0.0.1"}
	touched := stored.DeepCopy()
	touched.Labels = map[string]string{"x": "y"}
	expectErrs(t, ValidateEndpointSliceUpdate(touched, stored))

	changed := stored.DeepCopy()
	changed.Endpoints[0].Addresses = []string{"127.0.0.2"}
	expectErrs(t, ValidateEndpointSliceUpdate(changed, stored), e(field.ErrorTypeInvalid, "endpoints[0].addresses[0]"))
}
