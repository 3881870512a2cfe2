package dns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ensureLink makes sure a dummy link name exists, is up and carries
// addr as a /32 (/128), reusing what is there: a restart neither
// recreates the link nor re-adds the address, so pods' queries keep a
// route throughout. Other global addresses on the link (a former
// --cluster-dns) are removed. A kernel without the dummy driver gets a
// bridge without ports instead, which holds a local address alike.
func ensureLink(name string, addr netip.Addr) error {
	link, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		err = netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: name}})
		if errors.Is(err, unix.EOPNOTSUPP) {
			err = netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}})
		}
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("add link: %w", err)
		}
		if link, err = netlink.LinkByName(name); err != nil {
			return fmt.Errorf("find link: %w", err)
		}
	case err != nil:
		return fmt.Errorf("find link: %w", err)
	}
	if err := ours(link); err != nil {
		return err
	}
	if link.Attrs().Flags&net.FlagUp == 0 {
		if err := netlink.LinkSetUp(link); err != nil {
			return fmt.Errorf("set link up: %w", err)
		}
	}
	family := netlink.FAMILY_V4
	bits := 32
	if addr.Is6() {
		family, bits = netlink.FAMILY_V6, 128
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_ALL)
	if errors.Is(err, netlink.ErrDumpInterrupted) {
		addrs, err = netlink.AddrList(link, netlink.FAMILY_ALL)
	}
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	have := false
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		switch {
		case ip.Unmap() == addr && ones == bits:
			have = true
		case ip.IsLinkLocalUnicast():
			// the kernel's own IPv6 link-local address
		default:
			if err := netlink.AddrDel(link, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
				return fmt.Errorf("remove stale address %s: %w", a.IPNet, err)
			}
		}
	}
	if have {
		return nil
	}
	want := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(addr.AsSlice()), Mask: net.CIDRMask(bits, bits)}}
	if family == netlink.FAMILY_V6 {
		want.Flags = unix.IFA_F_NODAD // usable at once: nothing else can hold it on a dummy
	}
	if err := netlink.AddrAdd(link, want); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add address %s: %w", want.IPNet, err)
	}
	return nil
}

// ours checks that an existing link is one ensureLink makes: a dummy, or
// a bridge without ports.
func ours(link netlink.Link) error {
	name := link.Attrs().Name
	switch link.Type() {
	case "dummy":
		return nil
	case "bridge":
		links, err := netlink.LinkList()
		if err != nil {
			return fmt.Errorf("list links: %w", err)
		}
		for _, l := range links {
			if l.Attrs().MasterIndex == link.Attrs().Index {
				return fmt.Errorf("link %s is a bridge with ports (%s), not k1s's", name, l.Attrs().Name)
			}
		}
		return nil
	}
	return fmt.Errorf("link %s is a %s link, not k1s's dummy", name, link.Type())
}

// RemoveLink deletes the link carrying the cluster DNS address
// (Config.LinkName; k1s killall calls it). A missing link is no error; a
// link of that name that ensureLink would not have made is left alone,
// with an error.
func RemoveLink(name string) error {
	link, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		return nil
	case err != nil:
		return fmt.Errorf("find link %s: %w", name, err)
	}
	if err := ours(link); err != nil {
		return fmt.Errorf("%w: not removed", err)
	}
	if err := netlink.LinkDel(link); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("remove link %s: %w", name, err)
	}
	return nil
}
