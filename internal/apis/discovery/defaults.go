package discovery

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds the EndpointSlice and EndpointSliceList defaulters to
// s.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&discoveryv1.EndpointSlice{}, func(obj interface{}) {
		DefaultEndpointSlice(obj.(*discoveryv1.EndpointSlice))
	})
	s.AddTypeDefaultingFunc(&discoveryv1.EndpointSliceList{}, func(obj interface{}) {
		list := obj.(*discoveryv1.EndpointSliceList)
		for i := range list.Items {
			DefaultEndpointSlice(&list.Items[i])
		}
	})
	return nil
}

// DefaultEndpointSlice gives every port an empty name and the TCP protocol
// when those are unset.
func DefaultEndpointSlice(es *discoveryv1.EndpointSlice) {
	for i := range es.Ports {
		p := &es.Ports[i]
		if p.Name == nil {
			name := ""
			p.Name = &name
		}
		if p.Protocol == nil {
			tcp := corev1.ProtocolTCP
			p.Protocol = &tcp
		}
	}
}
