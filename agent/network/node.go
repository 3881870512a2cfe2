package network

import (
	"errors"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
)

// ErrNoPodCIDR means the node has no pod CIDR yet (the server allocates it
// after registration); the agent waits for the next Node update.
var ErrNoPodCIDR = errors.New("node has no pod CIDR yet")

// PodCIDRFromNode returns the node's IPv4 pod CIDR: the first IPv4 entry of
// spec.podCIDRs, else spec.podCIDR. It wraps ErrNoPodCIDR when there is none.
func PodCIDRFromNode(node *corev1.Node) (*net.IPNet, error) {
	cidrs := node.Spec.PodCIDRs
	if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
		cidrs = []string{node.Spec.PodCIDR}
	}
	if len(cidrs) == 0 {
		return nil, fmt.Errorf("node %q: %w", node.Name, ErrNoPodCIDR)
	}
	for _, c := range cidrs {
		ip, n, err := net.ParseCIDR(c)
		if err != nil {
			return nil, fmt.Errorf("node %q: invalid pod CIDR %q: %w", node.Name, c, err)
		}
		if ip.To4() != nil {
			return n, nil
		}
	}
	return nil, fmt.Errorf("node %q: no IPv4 pod CIDR in %v: %w", node.Name, cidrs, ErrNoPodCIDR)
}
