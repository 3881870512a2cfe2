// Package service allocates what a Service owns beyond its object: a
// cluster IP from the service CIDR and node ports from the node-port range.
//
// Allocations are etcd keys created with a compare-and-swap, so several
// apiservers sharing one etcd never hand out the same address, and a
// crash between allocating and storing the Service leaves only a key that
// the repair loop frees.
package service

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ErrFull is returned when a range has no free item.
var ErrFull = errors.New("range is full")

// ErrAllocated is returned when a specific item is taken.
var ErrAllocated = errors.New("provided value is already allocated")

// ErrNotInRange is returned when a specific item is outside the range.
type ErrNotInRange struct{ ValidRange string }

func (e *ErrNotInRange) Error() string {
	return fmt.Sprintf("provided value is not in the valid range. The range of valid values is %s", e.ValidRange)
}

// KV is the part of an etcd client the allocator uses.
type KV interface {
	clientv3.KV
}

// Range allocates the integers [0, size) under an etcd key prefix. Item i is
// stored at prefix+name(i) with the owner as value.
type Range struct {
	kv     KV
	prefix string
	size   int
	name   func(i int) string
}

// Allocate takes item i for owner.
func (r *Range) Allocate(ctx context.Context, i int, owner string) error {
	key := r.prefix + r.name(i)
	resp, err := r.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, owner)).
		Commit()
	if err != nil {
		return fmt.Errorf("allocate %s: %w", key, err)
	}
	if !resp.Succeeded {
		return ErrAllocated
	}
	return nil
}

// AllocateNext takes a free item for owner: random probes first, then a scan.
func (r *Range) AllocateNext(ctx context.Context, owner string) (int, error) {
	for attempt := 0; attempt < 16; attempt++ {
		i := rand.IntN(r.size)
		err := r.Allocate(ctx, i, owner)
		if err == nil {
			return i, nil
		}
		if !errors.Is(err, ErrAllocated) {
			return 0, err
		}
	}
	used, err := r.Used(ctx)
	if err != nil {
		return 0, err
	}
	start := rand.IntN(r.size)
	for n := 0; n < r.size; n++ {
		i := (start + n) % r.size
		if _, taken := used[r.name(i)]; taken {
			continue
		}
		err := r.Allocate(ctx, i, owner)
		if err == nil {
			return i, nil
		}
		if !errors.Is(err, ErrAllocated) {
			return 0, err
		}
	}
	return 0, ErrFull
}

// Release frees item i.
func (r *Range) Release(ctx context.Context, i int) error {
	if _, err := r.kv.Delete(ctx, r.prefix+r.name(i)); err != nil {
		return fmt.Errorf("release %s: %w", r.prefix+r.name(i), err)
	}
	return nil
}

// Allocation is one allocated item with its owner and creation revision.
type Allocation struct {
	Owner          string
	CreateRevision int64
}

// Used lists allocated item names with their owners.
func (r *Range) Used(ctx context.Context) (map[string]Allocation, error) {
	resp, err := r.kv.Get(ctx, r.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", r.prefix, err)
	}
	out := make(map[string]Allocation, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), r.prefix)] = Allocation{Owner: string(kv.Value), CreateRevision: kv.CreateRevision}
	}
	return out, nil
}

// ReleaseName frees an item by its key name (used by repair).
func (r *Range) ReleaseName(ctx context.Context, name string, ifCreateRevision int64) error {
	key := r.prefix + name
	_, err := r.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", ifCreateRevision)).
		Then(clientv3.OpDelete(key)).
		Commit()
	return err
}

// IPAllocator hands out addresses of a CIDR, skipping its network and
// broadcast addresses.
type IPAllocator struct {
	*Range
	cidr *net.IPNet
	base *big.Int
}

// NewIPAllocator allocates addresses of cidr under prefix.
func NewIPAllocator(kv KV, prefix string, cidr *net.IPNet) *IPAllocator {
	ones, bits := cidr.Mask.Size()
	size := new(big.Int).Lsh(big.NewInt(1), uint(bits-ones)).Int64() - 2
	if size > 1<<20 {
		size = 1 << 20
	}
	a := &IPAllocator{cidr: cidr, base: new(big.Int).SetBytes(cidr.IP.To16())}
	a.Range = &Range{kv: kv, prefix: prefix, size: int(size), name: func(i int) string { return a.ipAt(i).String() }}
	return a
}

func (a *IPAllocator) ipAt(i int) net.IP {
	n := new(big.Int).Add(a.base, big.NewInt(int64(i)+1))
	b := n.FillBytes(make([]byte, 16))
	ip := net.IP(b)
	if v4 := ip.To4(); v4 != nil && a.cidr.IP.To4() != nil {
		return v4
	}
	return ip
}

func (a *IPAllocator) indexOf(ip net.IP) (int, error) {
	if !a.cidr.Contains(ip) {
		return 0, &ErrNotInRange{ValidRange: a.cidr.String()}
	}
	n := new(big.Int).Sub(new(big.Int).SetBytes(ip.To16()), a.base)
	i := int(n.Int64()) - 1
	if i < 0 || i >= a.size {
		return 0, &ErrNotInRange{ValidRange: a.cidr.String()}
	}
	return i, nil
}

// AllocateIP takes ip for owner.
func (a *IPAllocator) AllocateIP(ctx context.Context, ip net.IP, owner string) error {
	i, err := a.indexOf(ip)
	if err != nil {
		return err
	}
	return a.Allocate(ctx, i, owner)
}

// AllocateNextIP takes a free address for owner.
func (a *IPAllocator) AllocateNextIP(ctx context.Context, owner string) (net.IP, error) {
	i, err := a.AllocateNext(ctx, owner)
	if err != nil {
		return nil, err
	}
	return a.ipAt(i), nil
}

// ReleaseIP frees ip; addresses outside the range are ignored.
func (a *IPAllocator) ReleaseIP(ctx context.Context, ip net.IP) error {
	i, err := a.indexOf(ip)
	if err != nil {
		return nil
	}
	return a.Release(ctx, i)
}

// PortAllocator hands out ports of a range.
type PortAllocator struct {
	*Range
	pr utilnet.PortRange
}

// NewPortAllocator allocates ports of pr under prefix.
func NewPortAllocator(kv KV, prefix string, pr utilnet.PortRange) *PortAllocator {
	a := &PortAllocator{pr: pr}
	a.Range = &Range{kv: kv, prefix: prefix, size: pr.Size, name: func(i int) string { return strconv.Itoa(pr.Base + i) }}
	return a
}

// AllocatePort takes port for owner.
func (a *PortAllocator) AllocatePort(ctx context.Context, port int, owner string) error {
	if !a.pr.Contains(port) {
		return &ErrNotInRange{ValidRange: a.pr.String()}
	}
	return a.Allocate(ctx, port-a.pr.Base, owner)
}

// AllocateNextPort takes a free port for owner.
func (a *PortAllocator) AllocateNextPort(ctx context.Context, owner string) (int, error) {
	i, err := a.AllocateNext(ctx, owner)
	if err != nil {
		return 0, err
	}
	return a.pr.Base + i, nil
}

// ReleasePort frees port; ports outside the range are ignored.
func (a *PortAllocator) ReleasePort(ctx context.Context, port int) error {
	if !a.pr.Contains(port) {
		return nil
	}
	return a.Release(ctx, port-a.pr.Base)
}
