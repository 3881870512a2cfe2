package nodestatus

import (
	"context"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestStatusExternalAddressesAndMaxPods: --node-external-ip and
// --node-external-dns become ExternalIP and ExternalDNS addresses, and
// --kubelet-arg=max-pods the pods capacity and allocatable.
func TestStatusExternalAddressesAndMaxPods(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ext      []net.IP
		dns      []string
		maxPods  int64
		wantPods int64
		want     []corev1.NodeAddress
	}{
		{name: "none", wantPods: 110, want: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "192.168.5.10"}, {Type: corev1.NodeInternalIP, Address: "fd00::10"},
			{Type: corev1.NodeHostName, Address: "node1.lab"}}},
		{name: "external", ext: []net.IP{net.ParseIP("203.0.113.7"), net.ParseIP("2001:db8::7")}, dns: []string{"node1.example.com"}, maxPods: 250, wantPods: 250,
			want: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "192.168.5.10"}, {Type: corev1.NodeInternalIP, Address: "fd00::10"},
				{Type: corev1.NodeExternalIP, Address: "203.0.113.7"}, {Type: corev1.NodeExternalIP, Address: "2001:db8::7"},
				{Type: corev1.NodeHostName, Address: "node1.lab"}, {Type: corev1.NodeExternalDNS, Address: "node1.example.com"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.ExternalIPs, cfg.ExternalDNS, cfg.MaxPods = tc.ext, tc.dns, tc.maxPods
			m, _, _, _ := newTest(t, cfg)
			st := m.status(context.Background(), nil)
			if diff := cmp.Diff(tc.want, st.Addresses); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
			if got := st.Capacity[corev1.ResourcePods]; got.Value() != tc.wantPods {
				t.Errorf("pods capacity %s, want %d", got.String(), tc.wantPods)
			}
			if got := st.Allocatable[corev1.ResourcePods]; got.Value() != tc.wantPods {
				t.Errorf("pods allocatable %s, want %d", got.String(), tc.wantPods)
			}
		})
	}
}
