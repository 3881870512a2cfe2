// Package proxy is the node's service proxy: kube-proxy's nftables mode,
// built into the agent. It watches Services and EndpointSlices and keeps
// one nftables table per IP family (`ip k1s-proxy`, `ip6 k1s-proxy`) that
// sends traffic for cluster IPs, node ports, external IPs and
// load-balancer addresses to the Services' endpoints, with upstream's
// behaviour: session affinity, internal and external traffic policies,
// terminating endpoints when no ready one is left, hairpin, masquerading,
// and rejection of traffic to a Service without endpoints or to a
// service-range address no Service holds (it never leaves the node).
//
// Why nftables (through sigs.k8s.io/knftables, kube-proxy's own library):
// a Service's rules are a few chains of its own plus elements in shared
// verdict maps, so one Service changes by a small transaction, and the
// kernel applies each transaction atomically. Without the nft command or
// nf_tables in the kernel, New fails naming what is missing and the node
// runs without Services (the agent logs it); there is no iptables mode.
//
// Writing: the first write after start, and any write after a failure or
// after the periodic check finds the kernel's table differs from what was
// written (it lists the table beside the writes, which never wait for
// it), replaces the whole table in one transaction; otherwise only
// the Services whose Service or EndpointSlices changed are rewritten
// (their chains flushed and refilled, their map and set elements added
// and removed, shared ones reference-counted). Chains no longer used are
// flushed at once and deleted a second later (older kernels need the
// pause). The rules stay in the kernel when k1s stops, so traffic keeps
// flowing while it restarts; `k1s killall` deletes the tables (Cleanup).
//
// It also serves kube-proxy's /healthz on :10256 and the health-check
// node ports of externalTrafficPolicy: Local load-balancers, and clears
// UDP conntrack entries that point at endpoints gone.
package proxy
