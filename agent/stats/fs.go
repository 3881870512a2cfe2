package stats

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/cadvisor/lib/machine"
	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// fsInfo is a filesystem's size from statfs.
type fsInfo struct {
	capacity, available, used uint64
	inodes, inodesFree        uint64
}

// realHost reads the machine.
type realHost struct{}

func (realHost) statfs(dir string) (fsInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fsInfo{}, err
	}
	bs := uint64(st.Bsize)
	return fsInfo{
		capacity:   st.Blocks * bs,
		available:  st.Bavail * bs,
		used:       (st.Blocks - st.Bfree) * bs,
		inodes:     st.Files,
		inodesFree: st.Ffree,
	}, nil
}

// du sums the disk blocks and counts the inodes under dir without
// following symbolic links or crossing into other filesystems, as the
// kubelet's du-based volume metrics do.
func (realHost) du(dir string) (uint64, uint64, error) {
	var root syscall.Stat_t
	if err := syscall.Lstat(dir, &root); err != nil {
		return 0, 0, err
	}
	var bytes, inodes uint64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return nil
		}
		if st.Dev != root.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		inodes++
		bytes += uint64(st.Blocks) * 512
		return nil
	})
	return bytes, inodes, err
}

// rlimit reads the kernel's pid limit and the number of tasks.
func (realHost) rlimit() (int64, int64, error) {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0, 0, err
	}
	maxPID, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, 0, err
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, 0, err
	}
	return maxPID, int64(si.Procs), nil
}

func (realHost) memoryCapacity() uint64 {
	m, err := machine.GetMachineMemoryCapacity()
	if err != nil {
		return 0
	}
	return m
}

func (realHost) numCores() int { return runtime.NumCPU() }

var bootTime = func() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(s, 0)
			}
		}
	}
	return time.Time{}
}()

func (realHost) bootTime() time.Time { return bootTime }

func (realHost) selfPid() int { return os.Getpid() }

// fsStats converts statfs numbers; used overrides the filesystem's used
// bytes when set.
func fsStats(now time.Time, f fsInfo) *statsapi.FsStats {
	capacity, avail, used := f.capacity, f.available, f.used
	inodes, free := f.inodes, f.inodesFree
	iused := inodes - free
	return &statsapi.FsStats{
		Time: metav1.NewTime(now), CapacityBytes: &capacity, AvailableBytes: &avail, UsedBytes: &used,
		Inodes: &inodes, InodesFree: &free, InodesUsed: &iused,
	}
}

// withUsage is a consumer's usage on the filesystem of base.
func withUsage(base *statsapi.FsStats, now time.Time, used, inodesUsed uint64) *statsapi.FsStats {
	out := &statsapi.FsStats{Time: metav1.NewTime(now), UsedBytes: &used, InodesUsed: &inodesUsed}
	if base != nil {
		out.CapacityBytes, out.AvailableBytes = base.CapacityBytes, base.AvailableBytes
		out.Inodes, out.InodesFree = base.Inodes, base.InodesFree
	}
	return out
}

// nodeFs is the agent's root directory's filesystem.
func (p *Provider) nodeFs(now time.Time) *statsapi.FsStats {
	f, err := p.host.statfs(p.cfg.RootDir)
	if err != nil {
		return nil
	}
	return fsStats(now, f)
}

// imageFs is the runtime's image filesystem: its size from statfs of the
// runtime's mount point, the bytes and inodes its images use from the
// runtime, as the kubelet reports it.
func (p *Provider) imageFs(ctx context.Context, now time.Time) *statsapi.FsStats {
	resp, err := p.images.ImageFsInfo(ctx)
	if err != nil || len(resp.GetImageFilesystems()) == 0 {
		klog.FromContext(ctx).V(4).Info("Image filesystem unknown", "err", err)
		return nil
	}
	usage := resp.ImageFilesystems[0]
	f, err := p.host.statfs(usage.GetFsId().GetMountpoint())
	if err != nil {
		return nil
	}
	out := fsStats(now, f)
	if u := usage.GetUsedBytes(); u != nil {
		v := u.Value
		out.UsedBytes = &v
	}
	if u := usage.GetInodesUsed(); u != nil {
		v := u.Value
		out.InodesUsed = &v
	}
	return out
}

// layerFs is a container's writable layer on the image filesystem.
func layerFs(now time.Time, l *runtimeapi.FilesystemUsage, imageFs *statsapi.FsStats) *statsapi.FsStats {
	var used, inodes uint64
	if l.UsedBytes != nil {
		used = l.UsedBytes.Value
	}
	if l.InodesUsed != nil {
		inodes = l.InodesUsed.Value
	}
	return withUsage(imageFs, now, used, inodes)
}

// walkVolumes measures every pod's volumes under the pods directory:
// <pods-dir>/<uid>/volumes/<plugin>/<name>.
func (p *Provider) walkVolumes(ctx context.Context) {
	now := p.clock.Now()
	pods, err := os.ReadDir(p.cfg.PodsDir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			klog.FromContext(ctx).V(2).Info("Cannot read the pods directory", "dir", p.cfg.PodsDir, "err", err)
		}
		return
	}
	out := map[string][]statsapi.VolumeStats{}
	for _, pod := range pods {
		if ctx.Err() != nil {
			return
		}
		volDir := filepath.Join(p.cfg.PodsDir, pod.Name(), "volumes")
		plugins, err := os.ReadDir(volDir)
		if err != nil {
			continue
		}
		for _, pl := range plugins {
			vols, err := os.ReadDir(filepath.Join(volDir, pl.Name()))
			if err != nil {
				continue
			}
			for _, v := range vols {
				dir := filepath.Join(volDir, pl.Name(), v.Name())
				f, err := p.host.statfs(dir)
				if err != nil {
					continue
				}
				used, inodes, err := p.host.du(dir)
				if err != nil {
					continue
				}
				vs := statsapi.VolumeStats{Name: v.Name(), FsStats: *withUsage(fsStats(now, f), now, used, inodes)}
				out[pod.Name()] = append(out[pod.Name()], vs)
			}
		}
	}
	if p.pvcs != nil {
		for uid, vols := range p.pvcs(ctx) {
			for _, v := range vols {
				f, err := p.host.statfs(v.Path)
				if err != nil {
					continue
				}
				used, inodes, err := p.host.du(v.Path)
				if err != nil {
					continue
				}
				out[uid] = append(out[uid], statsapi.VolumeStats{
					Name:    v.Name,
					PVCRef:  &statsapi.PVCReference{Name: v.Claim, Namespace: v.Namespace},
					FsStats: *withUsage(fsStats(now, f), now, used, inodes),
				})
			}
		}
	}
	p.mu.Lock()
	p.volumes = out
	p.mu.Unlock()
}

func readFirstLine(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	l, _, _ := strings.Cut(string(b), "\n")
	return l
}
