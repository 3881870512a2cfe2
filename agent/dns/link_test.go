package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"

	"github.com/miekg/dns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// newNetns makes a network namespace for the test, closed (and so freed)
// with it. The thread that made it is never given back to the runtime.
func newNetns(t *testing.T) netns.NsHandle {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	type result struct {
		h   netns.NsHandle
		err error
	}
	ch := make(chan result)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		h, err := netns.New()
		ch <- result{h, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Skipf("new network namespace: %v", r.err)
	}
	t.Cleanup(func() { r.h.Close() })
	return r.h
}

// inNetns runs f on a thread of its own inside ns and returns its error.
func inNetns(ns netns.NsHandle, f func() error) error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := netns.Set(ns); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}

func linkAddrs(name string) (int, []string, error) {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return 0, nil, err
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return 0, nil, err
	}
	var out []string
	for _, a := range addrs {
		if !a.IP.IsLinkLocalUnicast() {
			out = append(out, a.IPNet.String())
		}
	}
	return link.Attrs().Index, out, nil
}

func TestEnsureLinkIdempotent(t *testing.T) {
	ns := newNetns(t)
	err := inNetns(ns, func() error {
		v4 := netip.MustParseAddr("10.43.0.10")
		if err := ensureLink("k1s-dns", v4); err != nil {
			return err
		}
		idx, addrs, err := linkAddrs("k1s-dns")
		if err != nil {
			return err
		}
		if fmt.Sprint(addrs) != "[10.43.0.10/32]" {
			return fmt.Errorf("addresses %v, want [10.43.0.10/32]", addrs)
		}
		if link, err := netlink.LinkByName("k1s-dns"); err == nil {
			t.Logf("link type %s", link.Type()) // bridge where the kernel has no dummy driver
		}
		// Again: the same link, the address not re-added.
		if err := ensureLink("k1s-dns", v4); err != nil {
			return err
		}
		idx2, addrs, err := linkAddrs("k1s-dns")
		if err != nil {
			return err
		}
		if idx2 != idx || fmt.Sprint(addrs) != "[10.43.0.10/32]" {
			return fmt.Errorf("second ensure: index %d→%d, addresses %v", idx, idx2, addrs)
		}
		// A changed --cluster-dns replaces the old address.
		if err := ensureLink("k1s-dns", netip.MustParseAddr("10.96.0.10")); err != nil {
			return err
		}
		if _, addrs, _ = linkAddrs("k1s-dns"); fmt.Sprint(addrs) != "[10.96.0.10/32]" {
			return fmt.Errorf("after a change: %v, want [10.96.0.10/32]", addrs)
		}
		// IPv6, usable at once.
		if err := ensureLink("k1s-dns6", netip.MustParseAddr("fd00::a")); err != nil {
			return err
		}
		if _, addrs, _ = linkAddrs("k1s-dns6"); fmt.Sprint(addrs) != "[fd00::a/128]" {
			return fmt.Errorf("IPv6: %v, want [fd00::a/128]", addrs)
		}
		// Not a link of ours: refused, and not removed.
		if err := ensureLink("lo", v4); err == nil {
			return errors.New("ensureLink took over lo")
		}
		if err := RemoveLink("lo"); err == nil {
			return errors.New("RemoveLink removed lo")
		}
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br-test"}}); err != nil {
			return err
		}
		port := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "br-port", MasterIndex: 0}, PeerName: "br-port-peer"}
		if err := netlink.LinkAdd(port); err != nil {
			return err
		}
		br, err := netlink.LinkByName("br-test")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetMasterByIndex(port, br.Attrs().Index); err != nil {
			return err
		}
		if err := RemoveLink("br-test"); err == nil {
			return errors.New("RemoveLink removed a bridge with ports")
		}
		for _, name := range []string{"k1s-dns", "k1s-dns6"} {
			if err := RemoveLink(name); err != nil {
				return err
			}
			if _, err := netlink.LinkByName(name); err == nil {
				return fmt.Errorf("%s still there after RemoveLink", name)
			}
			if err := RemoveLink(name); err != nil {
				return fmt.Errorf("RemoveLink of a missing link: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestServeOnLink runs the server as the node does, on a dummy link it
// makes, in a namespace of the test's own, and queries it there.
func TestServeOnLink(t *testing.T) {
	ns := newNetns(t)
	if err := inNetns(ns, func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	}); err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, Config{ClusterDNS: net.ParseIP("10.43.0.10"), LinkName: "k1s-dns"}, true, clusterObjects()...)
	ctx, cancel := context.WithCancel(env.ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		// Run makes the link and its sockets on this thread, so in ns.
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		errc <- env.s.Run(ctx)
	}()
	select {
	case <-env.s.Ready():
	case err := <-errc:
		t.Fatalf("Run: %v", err)
	}
	if got := env.s.Addr().String(); got != "10.43.0.10:53" {
		t.Errorf("Addr %s, want 10.43.0.10:53", got)
	}
	err := inNetns(ns, func() error {
		for _, proto := range []string{"udp", "tcp"} {
			c := &dns.Client{Net: proto}
			resp, _, err := c.Exchange(question("web.default.svc.cluster.local.", dns.TypeA), "10.43.0.10:53")
			if err != nil {
				return fmt.Errorf("%s: %w", proto, err)
			}
			if got := rrs(resp.Answer); len(got) != 1 || got[0] != "web.default.svc.cluster.local. 5 IN A 10.43.0.20" {
				return fmt.Errorf("%s: answer %v", proto, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Run: %v", err)
	}
	// The link outlives Run; RemoveLink (killall) takes it away.
	if err := inNetns(ns, func() error {
		if _, _, err := linkAddrs("k1s-dns"); err != nil {
			return fmt.Errorf("link gone after Run: %w", err)
		}
		return RemoveLink("k1s-dns")
	}); err != nil {
		t.Error(err)
	}
}
