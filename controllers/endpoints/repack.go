package endpoints

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

type addrKey struct {
	ip  string
	uid types.UID
}

func keyOf(a *corev1.EndpointAddress) addrKey {
	k := addrKey{ip: a.IP}
	if a.TargetRef != nil {
		k.uid = a.TargetRef.UID
	}
	return k
}

// portKey identifies an endpoint port by value; noPort stands for the
// port-less entries of a headless Service.
func portKey(p *corev1.EndpointPort) string {
	if p == nil {
		return ""
	}
	app := ""
	if p.AppProtocol != nil {
		app = "=" + *p.AppProtocol
	}
	return p.Name + "/" + strconv.Itoa(int(p.Port)) + "/" + string(p.Protocol) + app
}

// Repack regroups subsets into the canonical form: one address (by IP and
// target UID) appears once per port; addresses that serve the same ports
// with the same readiness share a subset; an address that is both ready
// and not ready for a port counts as not ready. Addresses are ordered by
// IP then UID, ports by name, number and protocol, subsets by their first
// port and addresses, so that equal endpoints repack to equal subsets.
func Repack(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	addrs := map[addrKey]corev1.EndpointAddress{}
	ports := map[string]*corev1.EndpointPort{}
	byPort := map[string]map[addrKey]bool{} // port -> address -> ready
	note := func(port *corev1.EndpointPort, a *corev1.EndpointAddress, ready bool) {
		k := keyOf(a)
		if _, ok := addrs[k]; !ok {
			addrs[k] = *a
		}
		pk := portKey(port)
		if _, ok := ports[pk]; !ok {
			ports[pk] = port
		}
		set := byPort[pk]
		if set == nil {
			set = map[addrKey]bool{}
			byPort[pk] = set
		}
		if was, seen := set[k]; !seen || was {
			set[k] = ready
		}
	}
	for i := range subsets {
		s := &subsets[i]
		var sp []*corev1.EndpointPort
		for j := range s.Ports {
			sp = append(sp, &s.Ports[j])
		}
		if len(sp) == 0 {
			sp = []*corev1.EndpointPort{nil}
		}
		for _, p := range sp {
			for j := range s.Addresses {
				note(p, &s.Addresses[j], true)
			}
			for j := range s.NotReadyAddresses {
				note(p, &s.NotReadyAddresses[j], false)
			}
		}
	}

	type group struct {
		sig   string
		set   map[addrKey]bool
		ports []corev1.EndpointPort
	}
	groups := map[string]*group{}
	for pk, set := range byPort {
		keys := make([]addrKey, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareAddrKeys)
		var b strings.Builder
		for _, k := range keys {
			b.WriteString(k.ip)
			b.WriteByte('|')
			b.WriteString(string(k.uid))
			b.WriteByte('|')
			b.WriteString(strconv.FormatBool(set[k]))
			b.WriteByte(';')
		}
		sig := b.String()
		g := groups[sig]
		if g == nil {
			g = &group{sig: sig, set: set}
			groups[sig] = g
		}
		if p := ports[pk]; p != nil {
			g.ports = append(g.ports, *p)
		}
	}

	out := make([]corev1.EndpointSubset, 0, len(groups))
	sigs := make(map[int]string, len(groups))
	for _, g := range groups {
		s := corev1.EndpointSubset{}
		for k, ready := range g.set {
			if ready {
				s.Addresses = append(s.Addresses, addrs[k])
			} else {
				s.NotReadyAddresses = append(s.NotReadyAddresses, addrs[k])
			}
		}
		sortAddresses(s.Addresses)
		sortAddresses(s.NotReadyAddresses)
		slices.SortFunc(g.ports, comparePorts)
		s.Ports = g.ports
		sigs[len(out)] = g.sig
		out = append(out, s)
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		pa, pb := out[a].Ports, out[b].Ports
		switch {
		case len(pa) > 0 && len(pb) > 0:
			if c := comparePorts(pa[0], pb[0]); c != 0 {
				return c
			}
		case len(pa) > 0:
			return 1
		case len(pb) > 0:
			return -1
		}
		return strings.Compare(sigs[a], sigs[b])
	})
	sorted := make([]corev1.EndpointSubset, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}

func compareAddrKeys(a, b addrKey) int {
	return cmp.Or(strings.Compare(a.ip, b.ip), strings.Compare(string(a.uid), string(b.uid)))
}

func sortAddresses(list []corev1.EndpointAddress) {
	slices.SortFunc(list, func(a, b corev1.EndpointAddress) int { return compareAddrKeys(keyOf(&a), keyOf(&b)) })
}

func comparePorts(a, b corev1.EndpointPort) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), strings.Compare(string(a.Protocol), string(b.Protocol)),
		strings.Compare(portKey(&a), portKey(&b)))
}

// truncate cuts ep down to MaxCapacity addresses, keeping ready addresses
// first: when the ready ones alone exceed the capacity they are cut and
// every not-ready one dropped, else only not-ready ones are cut. Each
// subset keeps its share of the cut list (rounded up, the last ones
// taking what remains). It reports whether anything was cut.
func truncate(ep *corev1.Endpoints) bool {
	var ready, notReady int
	for _, s := range ep.Subsets {
		ready += len(s.Addresses)
		notReady += len(s.NotReadyAddresses)
	}
	if ready+notReady <= MaxCapacity {
		return false
	}
	cutReady := ready > MaxCapacity
	budget, total := MaxCapacity-ready, notReady
	if cutReady {
		budget, total = MaxCapacity, ready
	}
	left := budget
	for i := range ep.Subsets {
		s := &ep.Subsets[i]
		list := &s.NotReadyAddresses
		if cutReady {
			list = &s.Addresses
			s.NotReadyAddresses = nil
		}
		share := int(math.Ceil(float64(len(*list)) / float64(total) * float64(budget)))
		share = min(share, left, len(*list))
		*list = (*list)[:share]
		left -= share
	}
	return true
}
