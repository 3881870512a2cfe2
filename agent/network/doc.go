// Package network owns the node's pod network configuration: the CNI
// conflist the container runtime reads (WriteConfig), the node's pod CIDR
// (PodCIDRFromNode), and the masquerade of pod traffic leaving the cluster
// (EnsureMasquerade).
//
// The conflist chains the standard plugins: bridge (a cni0 bridge that is
// the pods' gateway, with host-local addresses from the node's pod CIDR)
// and portmap (hostPort). The loopback interface is not in the list: the
// CRI runtime brings lo up in every pod network namespace itself.
//
// The bridge's own ipMasq is off: the bridge plugin only exempts the node's
// own pod subnet from it, so pod traffic to other nodes' pods would lose its
// source address, and it adds iptables chains for every pod. Instead one
// chain, K1S-POSTROUTING, masquerades traffic from the node's pod CIDR to
// anywhere outside the cluster CIDR.
package network
