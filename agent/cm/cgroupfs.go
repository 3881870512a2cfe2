package cm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
)

// cgroupfs creates, sets and removes cgroups by writing the cgroup
// filesystem (the kubelet's cgroupfs driver). Names are absolute cgroup
// paths ("/kubepods/burstable/pod<uid>").
type cgroupfs struct {
	// unified is the cgroup v2 mount; "" on cgroup v1.
	unified string
	// v1 maps each cgroup v1 controller k1s sets to its mount point.
	v1 map[string]string
	// all are every v1 hierarchy's mount point (named ones too): a
	// removed cgroup goes from each, where the runtime may have made it.
	all []string
}

// v1Controllers are the cgroup v1 controllers a k1s cgroup is created in
// (the runtime creates the others as it needs them).
var v1Controllers = []string{"cpu", "cpuacct", "memory", "pids"}

// v2Controllers are the controllers enabled for k1s's cgroups on v2.
var v2Controllers = []string{"cpu", "memory", "pids"}

// newCgroupfs finds the host's cgroup mounts.
func newCgroupfs() (*cgroupfs, error) {
	if cgroups.IsCgroup2UnifiedMode() {
		return &cgroupfs{unified: "/sys/fs/cgroup"}, nil
	}
	mounts, err := cgroups.GetCgroupMounts(true)
	if err != nil {
		return nil, fmt.Errorf("find cgroup mounts: %w", err)
	}
	c := &cgroupfs{v1: map[string]string{}}
	seen := map[string]bool{}
	for _, m := range mounts {
		if !seen[m.Mountpoint] {
			seen[m.Mountpoint] = true
			c.all = append(c.all, m.Mountpoint)
		}
		for _, s := range m.Subsystems {
			if prev, ok := c.v1[s]; !ok || len(m.Mountpoint) < len(prev) {
				c.v1[s] = m.Mountpoint
			}
		}
	}
	for _, s := range v1Controllers {
		if c.v1[s] == "" {
			return nil, fmt.Errorf("cgroup v1 controller %q is not mounted", s)
		}
	}
	sort.Strings(c.all)
	return c, nil
}

// dirs are name's directories, one per hierarchy k1s creates it in.
func (c *cgroupfs) dirs(name string) []string {
	if c.unified != "" {
		return []string{filepath.Join(c.unified, name)}
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range v1Controllers {
		d := filepath.Join(c.v1[s], name)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// Exists reports whether name exists in every hierarchy k1s uses.
func (c *cgroupfs) Exists(name string) bool {
	for _, d := range c.dirs(name) {
		if _, err := os.Stat(d); err != nil {
			return false
		}
	}
	return true
}

// Ensure creates name (and its parents) where missing and sets rc.
func (c *cgroupfs) Ensure(name string, rc *ResourceConfig) error {
	if c.unified != "" {
		if err := c.enableV2(name); err != nil {
			return err
		}
	}
	for _, d := range c.dirs(name) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", name, err)
		}
	}
	return c.Set(name, rc)
}

// enableV2 makes cpu, memory and pids available to name: each ancestor
// delegates them to its children (cgroup.subtree_control).
func (c *cgroupfs) enableV2(name string) error {
	want := strings.Join(prefixed("+", v2Controllers), " ")
	dir := c.unified
	for _, part := range strings.Split(strings.Trim(name, "/"), "/") {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(want), 0o644); err != nil {
			return fmt.Errorf("enable %s in cgroup %s: %w", want, strings.TrimPrefix(dir, c.unified), err)
		}
		dir = filepath.Join(dir, part)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", strings.TrimPrefix(dir, c.unified), err)
		}
	}
	return nil
}

func prefixed(p string, in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = p + s
	}
	return out
}

// Set writes rc's values to name.
func (c *cgroupfs) Set(name string, rc *ResourceConfig) error {
	if rc == nil {
		return nil
	}
	var errs []error
	write := func(dir, file, val string) {
		if err := os.WriteFile(filepath.Join(dir, name, file), []byte(val), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("cgroup %s: set %s to %s: %w", name, file, val, err))
		}
	}
	if c.unified != "" {
		d := c.unified
		if rc.CPUShares != nil {
			write(d, "cpu.weight", strconv.FormatUint(cgroups.ConvertCPUSharesToCgroupV2Value(*rc.CPUShares), 10))
		}
		if rc.CPUQuota != nil || rc.CPUPeriod != nil {
			period := uint64(QuotaPeriod)
			if rc.CPUPeriod != nil {
				period = *rc.CPUPeriod
			}
			quota := "max"
			if rc.CPUQuota != nil && *rc.CPUQuota > 0 {
				quota = strconv.FormatInt(*rc.CPUQuota, 10)
			}
			write(d, "cpu.max", quota+" "+strconv.FormatUint(period, 10))
		}
		if rc.Memory != nil {
			write(d, "memory.max", limitV2(*rc.Memory))
		}
		if rc.PidsLimit != nil {
			write(d, "pids.max", limitV2(*rc.PidsLimit))
		}
		return errors.Join(errs...)
	}
	if rc.CPUShares != nil {
		write(c.v1["cpu"], "cpu.shares", strconv.FormatUint(*rc.CPUShares, 10))
	}
	if rc.CPUPeriod != nil {
		write(c.v1["cpu"], "cpu.cfs_period_us", strconv.FormatUint(*rc.CPUPeriod, 10))
	}
	if rc.CPUQuota != nil {
		q := *rc.CPUQuota
		if q <= 0 {
			q = -1
		}
		write(c.v1["cpu"], "cpu.cfs_quota_us", strconv.FormatInt(q, 10))
	}
	if rc.Memory != nil {
		m := *rc.Memory
		if m <= 0 {
			m = -1
		}
		write(c.v1["memory"], "memory.limit_in_bytes", strconv.FormatInt(m, 10))
	}
	if rc.PidsLimit != nil {
		write(c.v1["pids"], "pids.max", limitV2(*rc.PidsLimit))
	}
	return errors.Join(errs...)
}

func limitV2(v int64) string {
	if v <= 0 {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

// Children lists the cgroups directly under name (in the memory
// hierarchy on v1).
func (c *cgroupfs) Children(name string) ([]string, error) {
	dir := filepath.Join(c.unified, name)
	if c.unified == "" {
		dir = filepath.Join(c.v1["memory"], name)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Remove removes name and the cgroups below it from every hierarchy,
// deepest first. A cgroup with processes in it cannot be removed: the
// error says so and nothing else of it is touched.
func (c *cgroupfs) Remove(name string) error {
	roots := c.all
	if c.unified != "" {
		roots = []string{c.unified}
	}
	var errs []error
	for _, r := range roots {
		if err := removeTree(filepath.Join(r, name)); err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// removeTree rmdirs dir's subdirectories, then dir (cgroup directories
// hold only kernel files, which rmdir takes with them).
func removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
