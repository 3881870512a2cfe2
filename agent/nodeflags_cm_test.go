package agent

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeFlagsContainerManager(t *testing.T) {
	defaults := NodeFlags{CgroupRoot: "/", CgroupsPerQOS: true, EvictionHard: DefaultEvictionHard,
		EnforceNodeAllocatable: "pods", PodMaxPids: -1, CPUManagerPolicy: "none"}
	with := func(f func(*NodeFlags)) NodeFlags { n := defaults; f(&n); return n }
	tests := []struct {
		name    string
		flags   NodeFlags
		check   func(t *testing.T, f NodeFlags)
		wantErr string
	}{
		{name: "zero value: no cgroups, nothing reserved", flags: NodeFlags{}, check: func(t *testing.T, f NodeFlags) {
			c, _ := f.ContainerManager()
			if c.CgroupsPerQOS || len(c.HardEviction) != 0 || len(c.KubeReserved) != 0 {
				t.Errorf("config %+v", c)
			}
		}},
		{name: "defaults", flags: defaults, check: func(t *testing.T, f NodeFlags) {
			c, _ := f.ContainerManager()
			if !c.CgroupsPerQOS || len(c.HardEviction) != 2 || len(c.EnforceNodeAllocatable) != 1 || c.EnforceNodeAllocatable[0] != "pods" {
				t.Errorf("config %+v", c)
			}
		}},
		{name: "reservations", flags: with(func(f *NodeFlags) { f.KubeReserved, f.SystemReserved = "cpu=500m,memory=1Gi", "memory=256Mi" }),
			check: func(t *testing.T, f NodeFlags) {
				c, _ := f.ContainerManager()
				if q := c.KubeReserved[corev1.ResourceCPU]; q.MilliValue() != 500 {
					t.Errorf("kube reserved %v", c.KubeReserved)
				}
				if q := c.SystemReserved[corev1.ResourceMemory]; q.Value() != 256<<20 {
					t.Errorf("system reserved %v", c.SystemReserved)
				}
			}},
		{name: "enforcement none", flags: with(func(f *NodeFlags) { f.EnforceNodeAllocatable = "none" }), check: func(t *testing.T, f NodeFlags) {
			if c, _ := f.ContainerManager(); len(c.EnforceNodeAllocatable) != 0 {
				t.Errorf("enforce %v", c.EnforceNodeAllocatable)
			}
		}},
		{name: "no per-QoS cgroups with pods enforced", flags: with(func(f *NodeFlags) { f.CgroupsPerQOS = false }), wantErr: "--enforce-node-allocatable"},
		{name: "static cpu manager", flags: with(func(f *NodeFlags) { f.CPUManagerPolicy = "static" }), wantErr: "--cpu-manager-policy"},
		{name: "bad eviction threshold", flags: with(func(f *NodeFlags) { f.EvictionHard = "memory.available>1Gi" }), wantErr: "--eviction-hard"},
		{name: "bad reservation", flags: with(func(f *NodeFlags) { f.SystemReserved = "memory=lots" }), wantErr: "--system-reserved: memory=lots"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.flags.ContainerManager()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, tt.flags)
		})
	}
}
