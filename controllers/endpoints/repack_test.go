package endpoints

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestRepack(t *testing.T) {
	a, b, c := addr("a", "10.0.0.1"), addr("b", "10.0.0.2"), addr("c", "10.0.0.3")
	p80, p90 := epPort("http", 80), epPort("admin", 90)
	tests := []struct {
		name string
		in   []corev1.EndpointSubset
		want []corev1.EndpointSubset
	}{
		{
			name: "addresses sharing ports merge, sorted",
			in: []corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{b}, Ports: []corev1.EndpointPort{p80}},
				{Addresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p80}},
				{NotReadyAddresses: []corev1.EndpointAddress{c}, Ports: []corev1.EndpointPort{p80}},
			},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{a, b}, NotReadyAddresses: []corev1.EndpointAddress{c}, Ports: []corev1.EndpointPort{p80}}},
		},
		{
			name: "ports with the same addresses merge, sorted by name",
			in: []corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p80}},
				{Addresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p90}},
				{Addresses: []corev1.EndpointAddress{b}, Ports: []corev1.EndpointPort{p90}},
			},
			want: []corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{a, b}, Ports: []corev1.EndpointPort{p90}},
				{Addresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p80}},
			},
		},
		{
			name: "duplicates collapse and not-ready wins",
			in: []corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{a, a}, Ports: []corev1.EndpointPort{p80}},
				{NotReadyAddresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p80}},
			},
			want: []corev1.EndpointSubset{{NotReadyAddresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p80}}},
		},
		{
			name: "port-less subsets stay port-less",
			in: []corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{b}},
				{Addresses: []corev1.EndpointAddress{a}},
			},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{a, b}}},
		},
		{
			name: "nothing",
			want: []corev1.EndpointSubset{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Repack(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// Repacking is idempotent.
			if diff := cmp.Diff(got, Repack(got)); diff != "" {
				t.Errorf("repacking again changed it (-first +second):\n%s", diff)
			}
		})
	}
}

func addrs(prefix string, n int) []corev1.EndpointAddress {
	out := make([]corev1.EndpointAddress, n)
	for i := range out {
		out[i] = corev1.EndpointAddress{IP: fmt.Sprintf("%s.%d.%d", prefix, i/250, i%250)}
	}
	return out
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name                    string
		subsets                 []corev1.EndpointSubset
		want                    bool
		wantReady, wantNotReady []int // per subset
	}{
		{
			name:    "within capacity",
			subsets: []corev1.EndpointSubset{{Addresses: addrs("10.0", 600), NotReadyAddresses: addrs("10.1", 400)}},
			want:    false, wantReady: []int{600}, wantNotReady: []int{400},
		},
		{
			name: "not-ready addresses are cut in proportion",
			subsets: []corev1.EndpointSubset{
				{Addresses: addrs("10.0", 800), NotReadyAddresses: addrs("10.1", 150)},
				{Addresses: addrs("10.2", 100), NotReadyAddresses: addrs("10.3", 50)},
			},
			want: true, wantReady: []int{800, 100}, wantNotReady: []int{75, 25},
		},
		{
			name: "ready addresses beyond capacity drop every not-ready one",
			subsets: []corev1.EndpointSubset{
				{Addresses: addrs("10.0", 1500), NotReadyAddresses: addrs("10.1", 10)},
				{Addresses: addrs("10.2", 500)},
			},
			want: true, wantReady: []int{750, 250}, wantNotReady: []int{0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := &corev1.Endpoints{Subsets: tt.subsets}
			if got := truncate(ep); got != tt.want {
				t.Fatalf("truncate = %v, want %v", got, tt.want)
			}
			var ready, notReady []int
			for _, s := range ep.Subsets {
				ready = append(ready, len(s.Addresses))
				notReady = append(notReady, len(s.NotReadyAddresses))
			}
			if !cmp.Equal(ready, tt.wantReady) || !cmp.Equal(notReady, tt.wantNotReady) {
				t.Errorf("ready %v not ready %v, want %v and %v", ready, notReady, tt.wantReady, tt.wantNotReady)
			}
		})
	}
}
