// Package dns is the cluster DNS server that runs inside every node agent,
// in place of a CoreDNS Deployment. It answers at the cluster DNS address
// (--cluster-dns, 10.43.0.10 by default) that pods' resolv.conf names.
//
// # What it owns
//
// The cluster zone (--cluster-domain, cluster.local), following the
// Kubernetes DNS-Based Service Discovery specification 1.1.0 as CoreDNS's
// kubernetes plugin implements it:
//
//   - <svc>.<ns>.svc.<zone>: A/AAAA of a Service's cluster IPs (both
//     families for dual-stack Services); for a headless Service, the
//     addresses of its ready endpoints (ready condition nil or true; all
//     IPv4 and IPv6 EndpointSlices labelled kubernetes.io/service-name,
//     merged, each address once), NXDOMAIN when it has none; for an
//     ExternalName Service a CNAME to spec.externalName, followed (A, AAAA
//     and other types get the target's records too, resolved upstream, or
//     from the caches when the target is in the zone; a CNAME question gets
//     the CNAME alone). A Service with no cluster IP yet has no records.
//   - <endpoint>.<svc>.<ns>.svc.<zone>: the endpoint with that hostname or,
//     without a hostname, whose address the label spells (10-42-0-5,
//     2001-db8--5).
//   - _<port>._<proto>.<svc>.<ns>.svc.<zone> SRV: for a ClusterIP Service
//     one record per port, target the Service's name; for a headless one a
//     record per ready endpoint, target its endpoint name; the targets'
//     addresses in the additional section. SRV at the Service's own name
//     lists every port, named or not (as CoreDNS).
//   - PTR in in-addr.arpa and ip6.arpa for cluster IPs and ready endpoint
//     addresses.
//   - <a-b-c-d>.<ns>.pod.<zone>: the address the name spells (CoreDNS's
//     "pods insecure").
//   - dns-version.<zone> TXT "1.1.0"; the zone's SOA and NS (ns.dns.<zone>,
//     the cluster DNS address).
//
// Names are matched case-insensitively. Cluster records have a TTL of 5 s;
// names that do not exist are NXDOMAIN and names without records of the
// type are NODATA, both authoritative with the zone's SOA. Answers come
// live from the shared informers' caches (indexed by cluster IP, by
// Service and by endpoint address), so they keep working while the
// apiserver is away; until the caches have synced once, cluster names are
// SERVFAIL rather than a denial a client might cache.
//
// Every other name, and reverse names of addresses the caches do not know,
// is forwarded to the host's name servers (--resolv-conf, read again when
// it changes; systemd-resolved's stub replaced by its upstream servers,
// see internal/resolvconf), one after another over UDP, over TCP when an
// answer is truncated, SERVFAIL when none answers. Forwarded answers are
// cached (Config.CacheSize entries; for their smallest TTL up to 30 s,
// denials for their SOA's negative TTL up to 5 s; failures never) and a
// cached answer is served by copying its wire form, with the TTLs counted
// down. UDP answers are truncated (TC) to the client's EDNS0 buffer size
// (512 bytes without EDNS0); TCP is served on the same address and port.
//
// # Listener
//
// The server makes a dummy network interface (Config.LinkName, k1s-dns)
// carrying the cluster DNS address as a /32 (/128 for IPv6, without
// duplicate address detection) and binds UDP and TCP port 53 on that
// address. On a kernel without the dummy driver the link is a bridge
// without ports, which holds a local address alike. Pods reach it through their default
// route to the node, the node's own processes directly; the service proxy
// leaves that one address alone. The link is made idempotently — an
// existing link and address are reused, so a restart does not flap it —
// and outlives Run, so pods' queries keep a route while k1s restarts;
// RemoveLink (k1s killall) deletes it. With Config.ListenAddress set no
// link is managed (tests bind 127.0.0.1:0).
//
// # Metrics
//
// Metrics registered into the Deps.Metrics registry use CoreDNS's names and
// labels, so dashboards made for CoreDNS work: coredns_dns_requests_total
// (server, zone, view, proto, family, type), coredns_dns_request_duration_seconds,
// coredns_dns_request_size_bytes, coredns_dns_response_size_bytes,
// coredns_dns_responses_total (rcode, plugin: kubernetes, cache, forward),
// coredns_cache_entries, coredns_cache_requests_total,
// coredns_cache_hits_total (type success or denial),
// coredns_cache_misses_total, coredns_forward_requests_total and
// coredns_forward_responses_total (to, rcode) and
// coredns_proxy_request_duration_seconds (proxy_name "forward"). As with
// CoreDNS's default Corefile every query counts in zone ".".
package dns
