package service

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustPortRange(t *testing.T, s string) utilnet.PortRange {
	t.Helper()
	pr, err := utilnet.ParsePortRange(s)
	if err != nil {
		t.Fatal(err)
	}
	return *pr
}

func TestAllocateIP(t *testing.T) {
	kv, prefix := testKV(t)
	ctx := testCtx(t)
	a := NewIPAllocator(kv, prefix, mustCIDR(t, "10.96.0.0/28"))
	if err := a.AllocateIP(ctx, net.ParseIP("10.96.0.5"), "ns/taken"); err != nil {
		t.Fatalf("allocate 10.96.0.5: %v", err)
	}
	tests := []struct {
		name      string
		ip        string
		wantErr   error
		wantRange bool
	}{
		{"free address", "10.96.0.6", nil, false},
		{"first usable", "10.96.0.1", nil, false},
		{"last usable", "10.96.0.14", nil, false},
		{"duplicate", "10.96.0.5", ErrAllocated, false},
		{"network address", "10.96.0.0", nil, true},
		{"broadcast address", "10.96.0.15", nil, true},
		{"outside the CIDR", "10.96.1.1", nil, true},
		{"other family", "fd00::5", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.AllocateIP(ctx, net.ParseIP(tt.ip), "ns/"+tt.name)
			switch {
			case tt.wantRange:
				var nr *ErrNotInRange
				if !errors.As(err, &nr) {
					t.Fatalf("AllocateIP(%s) = %v, want *ErrNotInRange", tt.ip, err)
				}
				if nr.ValidRange != "10.96.0.0/28" {
					t.Errorf("ValidRange = %s, want 10.96.0.0/28", nr.ValidRange)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("AllocateIP(%s) = %v, want %v", tt.ip, err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("AllocateIP(%s): %v", tt.ip, err)
			}
		})
	}
	used, err := a.Used(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"10.96.0.5": "ns/taken", "10.96.0.6": "ns/free address", "10.96.0.1": "ns/first usable", "10.96.0.14": "ns/last usable"}
	if len(used) != len(want) {
		t.Errorf("Used = %v, want %v", used, want)
	}
	for ip, owner := range want {
		if used[ip].Owner != owner || used[ip].CreateRevision == 0 {
			t.Errorf("Used[%s] = %+v, want owner %s", ip, used[ip], owner)
		}
	}
}

func TestAllocateNextIPUntilFull(t *testing.T) {
	tests := []struct {
		cidr  string
		first string
		last  string
	}{
		{"10.96.0.16/28", "10.96.0.17", "10.96.0.30"},
		{"fd00:10:96::/124", "fd00:10:96::1", "fd00:10:96::e"},
	}
	for _, tt := range tests {
		t.Run(tt.cidr, func(t *testing.T) {
			kv, prefix := testKV(t)
			ctx := testCtx(t)
			cidr := mustCIDR(t, tt.cidr)
			a := NewIPAllocator(kv, prefix, cidr)
			seen := map[string]bool{}
			for i := 0; i < 14; i++ {
				ip, err := a.AllocateNextIP(ctx, fmt.Sprintf("ns/s%d", i))
				if err != nil {
					t.Fatalf("allocation %d: %v", i, err)
				}
				if !cidr.Contains(ip) {
					t.Errorf("%s is outside %s", ip, cidr)
				}
				if ip.Equal(cidr.IP) {
					t.Errorf("allocated the network address %s", ip)
				}
				if seen[ip.String()] {
					t.Errorf("%s allocated twice", ip)
				}
				seen[ip.String()] = true
			}
			if !seen[tt.first] || !seen[tt.last] {
				t.Errorf("allocated %v, want every address from %s to %s", seen, tt.first, tt.last)
			}
			if _, err := a.AllocateNextIP(ctx, "ns/extra"); !errors.Is(err, ErrFull) {
				t.Fatalf("allocation in a full range = %v, want ErrFull", err)
			}
			freed := net.ParseIP(tt.first)
			if err := a.ReleaseIP(ctx, freed); err != nil {
				t.Fatalf("ReleaseIP: %v", err)
			}
			ip, err := a.AllocateNextIP(ctx, "ns/again")
			if err != nil {
				t.Fatalf("allocation after release: %v", err)
			}
			if !ip.Equal(freed) {
				t.Errorf("got %s after releasing %s", ip, freed)
			}
			// Releasing an address outside the range is a no-op.
			if err := a.ReleaseIP(ctx, net.ParseIP("192.0.2.1")); err != nil {
				t.Errorf("ReleaseIP outside the range = %v", err)
			}
		})
	}
}

// Two allocators over the same prefix (two apiservers on one etcd) never
// hand out the same address.
func TestAllocateNextIPConcurrent(t *testing.T) {
	kv, prefix := testKV(t)
	ctx := testCtx(t)
	cidr := mustCIDR(t, "10.96.0.32/28")
	a, b := NewIPAllocator(kv, prefix, cidr), NewIPAllocator(kv, prefix, cidr)
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	errs := make(chan error, 14)
	for i := 0; i < 14; i++ {
		alloc := a
		if i%2 == 1 {
			alloc = b
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ip, err := alloc.AllocateNextIP(ctx, fmt.Sprintf("ns/c%d", i))
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			got = append(got, ip.String())
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent allocation: %v", err)
	}
	sort.Strings(got)
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Errorf("%s allocated twice", got[i])
		}
	}
	if len(got) != 14 {
		t.Errorf("allocated %d addresses, want 14", len(got))
	}
}

func TestPortAllocator(t *testing.T) {
	kv, prefix := testKV(t)
	ctx := testCtx(t)
	a := NewPortAllocator(kv, prefix, mustPortRange(t, "30000-30004"))
	tests := []struct {
		name      string
		port      int
		wantErr   error
		wantRange bool
	}{
		{"first", 30000, nil, false},
		{"last", 30004, nil, false},
		{"duplicate", 30000, ErrAllocated, false},
		{"below", 29999, nil, true},
		{"above", 30005, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.AllocatePort(ctx, tt.port, "ns/"+tt.name)
			switch {
			case tt.wantRange:
				var nr *ErrNotInRange
				if !errors.As(err, &nr) {
					t.Fatalf("AllocatePort(%d) = %v, want *ErrNotInRange", tt.port, err)
				}
				if nr.ValidRange != "30000-30004" {
					t.Errorf("ValidRange = %s, want 30000-30004", nr.ValidRange)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("AllocatePort(%d) = %v, want %v", tt.port, err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("AllocatePort(%d): %v", tt.port, err)
			}
		})
	}

	seen := map[int]bool{30000: true, 30004: true}
	for i := 0; i < 3; i++ {
		p, err := a.AllocateNextPort(ctx, "ns/next")
		if err != nil {
			t.Fatalf("AllocateNextPort %d: %v", i, err)
		}
		if p < 30000 || p > 30004 || seen[p] {
			t.Errorf("AllocateNextPort returned %d (already seen: %v)", p, seen[p])
		}
		seen[p] = true
	}
	if _, err := a.AllocateNextPort(ctx, "ns/extra"); !errors.Is(err, ErrFull) {
		t.Fatalf("AllocateNextPort in a full range = %v, want ErrFull", err)
	}
	if err := a.ReleasePort(ctx, 30002); err != nil {
		t.Fatal(err)
	}
	if err := a.ReleasePort(ctx, 80); err != nil {
		t.Errorf("ReleasePort outside the range = %v", err)
	}
	if p, err := a.AllocateNextPort(ctx, "ns/again"); err != nil || p != 30002 {
		t.Errorf("AllocateNextPort after release = %d, %v; want 30002", p, err)
	}
	used, err := a.Used(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for p := 30000; p <= 30004; p++ {
		if _, ok := used[strconv.Itoa(p)]; !ok {
			t.Errorf("port %d missing from Used", p)
		}
	}
}

func TestReleaseName(t *testing.T) {
	kv, prefix := testKV(t)
	ctx := testCtx(t)
	a := NewPortAllocator(kv, prefix, mustPortRange(t, "30000-30009"))
	if err := a.AllocatePort(ctx, 30001, "ns/a"); err != nil {
		t.Fatal(err)
	}
	used, err := a.Used(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rev := used["30001"].CreateRevision
	// A stale revision (the key was freed and taken again since) deletes nothing.
	if err := a.ReleaseName(ctx, "30001", rev-1); err != nil {
		t.Fatal(err)
	}
	if used, _ := a.Used(ctx); used["30001"].Owner != "ns/a" {
		t.Fatalf("ReleaseName with a stale revision freed the port")
	}
	if err := a.ReleaseName(ctx, "30001", rev); err != nil {
		t.Fatal(err)
	}
	if used, _ := a.Used(ctx); len(used) != 0 {
		t.Errorf("Used after ReleaseName = %v, want empty", used)
	}
}
