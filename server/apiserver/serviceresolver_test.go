package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestClusterIPResolver(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	add := func(name string, spec corev1.ServiceSpec) {
		if err := idx.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	add("hook", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.43.0.5", Ports: []corev1.ServicePort{{Port: 443}}})
	add("headless", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 443}}})
	add("ext", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "hooks.example.com"})
	r := clusterIPResolver{services: corelisters.NewServiceLister(idx)}
	for _, tc := range []struct {
		name    string
		port    int32
		want    string
		wantErr bool
	}{
		{"hook", 443, "https://10.43.0.5:443", false},
		{"hook", 8443, "", true},
		{"headless", 443, "", true},
		{"ext", 8443, "https://hooks.example.com:8443", false},
		{"missing", 443, "", true},
	} {
		u, err := r.ResolveEndpoint("ns", tc.name, tc.port)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s:%d: err = %v", tc.name, tc.port, err)
			continue
		}
		if err == nil && u.String() != tc.want {
			t.Errorf("%s:%d = %s, want %s", tc.name, tc.port, u, tc.want)
		}
	}
}
