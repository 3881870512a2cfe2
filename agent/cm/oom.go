package cm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// OOMEvent is one kill by the kernel's OOM killer, read from the kernel
// log.
type OOMEvent struct {
	// System is a kill for want of memory on the whole node (not a
	// cgroup's limit): upstream's SystemOOM.
	System bool
	// Process and Pid are the victim.
	Process string
	Pid     int
	// Cgroup is the victim's memory cgroup.
	Cgroup string
	// PodUID and ContainerID are set when Cgroup is a pod's under this
	// node's kubepods tree.
	PodUID      types.UID
	ContainerID string
}

// OOMWatcher reports the kernel's OOM kills (the kubelet's OOMWatcher).
type OOMWatcher interface {
	// Run reads the kernel log from now on and calls handle for each kill
	// until ctx is cancelled.
	Run(ctx context.Context, handle func(OOMEvent)) error
}

// NewOOMWatcher watches /dev/kmsg; cgroupRoot (--cgroup-root) tells this
// node's pods from others'.
func NewOOMWatcher(cgroupRoot string) OOMWatcher {
	return &kmsgWatcher{path: "/dev/kmsg", kubepods: joinCgroup(cgroupRoot, "kubepods") + "/"}
}

type kmsgWatcher struct {
	path     string
	kubepods string
}

func (w *kmsgWatcher) Run(ctx context.Context, handle func(OOMEvent)) error {
	fd, err := syscall.Open(w.path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s for OOM events: %w", w.path, err)
	}
	// Only what the kernel logs from now on.
	if _, err := syscall.Seek(fd, 0, io.SeekEnd); err != nil {
		syscall.Close(fd)
		return fmt.Errorf("seek %s: %w", w.path, err)
	}
	f := os.NewFile(uintptr(fd), w.path) // non-blocking: reads park in the poller
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	defer f.Close()
	logger := klog.FromContext(ctx)
	buf := make([]byte, 8192)
	for {
		n, err := f.Read(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, syscall.EPIPE) {
				// Records were overwritten before we read them.
				continue
			}
			return fmt.Errorf("read %s: %w", w.path, err)
		}
		if ev, ok := parseOOMRecord(string(buf[:n]), w.kubepods); ok {
			logger.V(2).Info("OOM kill", "process", ev.Process, "pid", ev.Pid, "cgroup", ev.Cgroup, "system", ev.System)
			handle(ev)
		}
	}
}

// parseOOMRecord reads one /dev/kmsg record ("prio,seq,usec,flags;text");
// only the kernel's one-line OOM kill summary counts:
//
//	oom-kill:constraint=CONSTRAINT_MEMCG,…,oom_memcg=/…,task_memcg=/…/<id>,task=name,pid=123,uid=0
//
// kubepods ("/kubepods/" under the cgroup root) marks this node's pods.
func parseOOMRecord(record, kubepods string) (OOMEvent, bool) {
	_, text, ok := strings.Cut(record, ";")
	if !ok {
		return OOMEvent{}, false
	}
	text, _, _ = strings.Cut(text, "\n")
	body, ok := strings.CutPrefix(text, "oom-kill:")
	if !ok {
		return OOMEvent{}, false
	}
	var ev OOMEvent
	constraint := ""
	for _, kv := range strings.Split(body, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "constraint":
			constraint = v
		case "task_memcg":
			ev.Cgroup = v
		case "task":
			ev.Process = v
		case "pid":
			ev.Pid, _ = strconv.Atoi(v)
		}
	}
	// A kill within a cgroup's limit is CONSTRAINT_MEMCG; the others
	// (CONSTRAINT_NONE, cpuset, mempolicy) are the node running out.
	ev.System = constraint != "CONSTRAINT_MEMCG"
	if rest, ok := strings.CutPrefix(ev.Cgroup, kubepods); ok {
		for _, part := range strings.Split(rest, "/") {
			if uid, ok := strings.CutPrefix(part, "pod"); ok && uid != "" && ev.PodUID == "" {
				ev.PodUID = types.UID(uid)
				continue
			}
			if ev.PodUID != "" && part != "" {
				ev.ContainerID = part
				break
			}
		}
	}
	return ev, true
}
