package eviction

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/k1s/k1s/internal/thresholds"
)

// observation is one signal's available amount and capacity.
type observation struct {
	available resource.Quantity
	capacity  resource.Quantity
	time      time.Time
}

type observations map[thresholds.Signal]observation

// signalResource is the resource each signal measures.
var signalResource = map[thresholds.Signal]corev1.ResourceName{
	thresholds.MemoryAvailable:   corev1.ResourceMemory,
	thresholds.NodeFsAvailable:   corev1.ResourceEphemeralStorage,
	thresholds.NodeFsInodesFree:  resourceInodes,
	thresholds.ImageFsAvailable:  corev1.ResourceEphemeralStorage,
	thresholds.ImageFsInodesFree: resourceInodes,
	thresholds.PIDAvailable:      resourcePIDs,
}

// signalCondition is the node condition each signal drives.
var signalCondition = map[thresholds.Signal]corev1.NodeConditionType{
	thresholds.MemoryAvailable:   corev1.NodeMemoryPressure,
	thresholds.NodeFsAvailable:   corev1.NodeDiskPressure,
	thresholds.NodeFsInodesFree:  corev1.NodeDiskPressure,
	thresholds.ImageFsAvailable:  corev1.NodeDiskPressure,
	thresholds.ImageFsInodesFree: corev1.NodeDiskPressure,
	thresholds.PIDAvailable:      corev1.NodePIDPressure,
}

const (
	resourceInodes corev1.ResourceName = "inodes"
	resourcePIDs   corev1.ResourceName = "pids"
)

func bytesQ(v uint64) resource.Quantity     { return *resource.NewQuantity(int64(v), resource.BinarySI) }
func countQ(v uint64) resource.Quantity     { return *resource.NewQuantity(int64(v), resource.DecimalSI) }
func metaTime(t statsapi.FsStats) time.Time { return t.Time.Time }

// observe reads the signals from a summary, as upstream's kubelet:
// memory.available from the node's memory stats, nodefs from the node's
// filesystem, imagefs from the runtime's image filesystem, pid.available
// from the node's rlimit stats.
func observe(s *statsapi.Summary) observations {
	out := observations{}
	if m := s.Node.Memory; m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
		out[thresholds.MemoryAvailable] = observation{
			available: bytesQ(*m.AvailableBytes),
			capacity:  bytesQ(*m.AvailableBytes + *m.WorkingSetBytes),
			time:      m.Time.Time,
		}
	}
	fsObs := func(fs *statsapi.FsStats, bytesSig, inodesSig thresholds.Signal) {
		if fs == nil {
			return
		}
		if fs.AvailableBytes != nil && fs.CapacityBytes != nil {
			out[bytesSig] = observation{available: bytesQ(*fs.AvailableBytes), capacity: bytesQ(*fs.CapacityBytes), time: metaTime(*fs)}
		}
		if fs.InodesFree != nil && fs.Inodes != nil {
			out[inodesSig] = observation{available: countQ(*fs.InodesFree), capacity: countQ(*fs.Inodes), time: metaTime(*fs)}
		}
	}
	fsObs(s.Node.Fs, thresholds.NodeFsAvailable, thresholds.NodeFsInodesFree)
	if s.Node.Runtime != nil {
		fsObs(s.Node.Runtime.ImageFs, thresholds.ImageFsAvailable, thresholds.ImageFsInodesFree)
	}
	if r := s.Node.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil {
		avail := *r.MaxPID - *r.NumOfRunningProcesses
		out[thresholds.PIDAvailable] = observation{
			available: *resource.NewQuantity(avail, resource.DecimalSI),
			capacity:  *resource.NewQuantity(*r.MaxPID, resource.DecimalSI),
			time:      r.Time.Time,
		}
	}
	return out
}

// quantity is t's value against the signal's capacity; with reclaim,
// plus its minimum reclaim.
func (t Threshold) quantity(capacity resource.Quantity, reclaim bool) resource.Quantity {
	q := t.Value.Of(capacity)
	if reclaim && t.MinReclaim != nil {
		q.Add(t.MinReclaim.Of(capacity))
	}
	return q
}

// met returns the indexes of the thresholds in idx whose signal is below
// them (with reclaim, below them plus their minimum reclaim). A signal
// with no observation meets nothing.
func met(ts []Threshold, idx []int, obs observations, reclaim bool) []int {
	var out []int
	for _, i := range idx {
		o, ok := obs[ts[i].Signal]
		if !ok {
			continue
		}
		q := ts[i].quantity(o.capacity, reclaim)
		if q.Cmp(o.available) > 0 {
			out = append(out, i)
		}
	}
	return out
}

func allIndexes(ts []Threshold) []int {
	out := make([]int, len(ts))
	for i := range ts {
		out[i] = i
	}
	return out
}

func union(a, b []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, l := range [][]int{a, b} {
		for _, i := range l {
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	sort.Ints(out)
	return out
}

// conditionsOf are the node conditions the thresholds drive.
func conditionsOf(ts []Threshold, idx []int) []corev1.NodeConditionType {
	var out []corev1.NodeConditionType
	for _, i := range idx {
		c, ok := signalCondition[ts[i].Signal]
		if ok && !hasCondition(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func hasCondition(l []corev1.NodeConditionType, c corev1.NodeConditionType) bool {
	for _, x := range l {
		if x == c {
			return true
		}
	}
	return false
}
