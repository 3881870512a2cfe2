// Package thresholds parses the kubelet's eviction threshold flags
// (--eviction-hard, --eviction-soft, --eviction-minimum-reclaim) into
// thresholds, and computes what a hard threshold reserves from the node's
// allocatable. The node's container manager (agent/cm, for allocatable)
// and its eviction manager (agent/eviction, for behaviour) share this one
// parser, so a flag means the same to both.
package thresholds

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal, named as upstream's.
type Signal string

// The signals upstream's kubelet knows on Linux.
const (
	MemoryAvailable            Signal = "memory.available"
	NodeFsAvailable            Signal = "nodefs.available"
	NodeFsInodesFree           Signal = "nodefs.inodesFree"
	ImageFsAvailable           Signal = "imagefs.available"
	ImageFsInodesFree          Signal = "imagefs.inodesFree"
	ContainerFsAvailable       Signal = "containerfs.available"
	ContainerFsInodesFree      Signal = "containerfs.inodesFree"
	AllocatableMemoryAvailable Signal = "allocatableMemory.available"
	PIDAvailable               Signal = "pid.available"
)

// Known reports whether s is a signal a threshold may name.
func Known(s Signal) bool {
	switch s {
	case MemoryAvailable, NodeFsAvailable, NodeFsInodesFree, ImageFsAvailable, ImageFsInodesFree,
		ContainerFsAvailable, ContainerFsInodesFree, AllocatableMemoryAvailable, PIDAvailable:
		return true
	}
	return false
}

// DefaultHard is upstream's --eviction-hard default on Linux, used when
// the flag is not given at all.
func DefaultHard() map[string]string {
	return map[string]string{
		string(MemoryAvailable):   "100Mi",
		string(NodeFsAvailable):   "10%",
		string(NodeFsInodesFree):  "5%",
		string(ImageFsAvailable):  "15%",
		string(ImageFsInodesFree): "5%",
	}
}

// Value is a threshold's amount: an absolute quantity, or a fraction
// (0 < Percentage <= 1) of the resource's capacity.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float32
}

// Of is the value as a quantity of capacity.
func (v Value) Of(capacity resource.Quantity) resource.Quantity {
	if v.Quantity != nil {
		return v.Quantity.DeepCopy()
	}
	return *resource.NewQuantity(int64(float64(capacity.Value())*float64(v.Percentage)), resource.BinarySI)
}

func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(math.Round(float64(v.Percentage)*1e6)/1e4, 'f', -1, 64) + "%"
}

// Threshold is one signal's eviction threshold: met when the signal's
// observed value is below Value (every signal's operator is LessThan).
type Threshold struct {
	Signal Signal
	Value  Value
}

// ParseMap reads a flag value of the form "signal<value,signal<value"
// (--eviction-hard, --eviction-soft) into a map; sep is "<" for those,
// "=" for --eviction-minimum-reclaim and --eviction-soft-grace-period.
// flag names the flag in errors. An empty value is an empty map.
func ParseMap(flag, value, sep string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, sep)
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("--%s: %q is not signal%svalue", flag, item, sep)
		}
		out[k] = v
	}
	return out, nil
}

// Parse turns a signal → value map into thresholds, in signal order, as
// upstream's kubelet parses them: an unknown signal, a negative or zero
// quantity, or a percentage outside [0%, 100%] is an error naming flag;
// "0%" and "100%" turn a signal off.
func Parse(flag string, m map[string]string) ([]Threshold, error) {
	var out []Threshold
	var errs []error
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t, err := parseOne(Signal(k), m[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
			continue
		}
		if t != nil {
			out = append(out, *t)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// ParseFlag is ParseMap then Parse of a "signal<value,…" flag.
func ParseFlag(flag, value string) ([]Threshold, error) {
	m, err := ParseMap(flag, value, "<")
	if err != nil {
		return nil, err
	}
	return Parse(flag, m)
}

func parseOne(s Signal, val string) (*Threshold, error) {
	if !Known(s) {
		return nil, fmt.Errorf("unsupported eviction signal %q", s)
	}
	if p, ok := strings.CutSuffix(val, "%"); ok {
		if val == "0%" || val == "100%" {
			return nil, nil
		}
		f, err := strconv.ParseFloat(p, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a percentage", s, val)
		}
		if f < 0 || f > 100 {
			return nil, fmt.Errorf("%s: percentage %s must be between 0%% and 100%%", s, val)
		}
		return &Threshold{Signal: s, Value: Value{Percentage: float32(f) / 100}}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a quantity: %w", s, val, err)
	}
	if q.Sign() <= 0 {
		return nil, fmt.Errorf("%s: threshold %s must be positive", s, q.String())
	}
	return &Threshold{Signal: s, Value: Value{Quantity: &q}}, nil
}

// HardEvictionReservation is what hard thresholds hold back from the
// node's allocatable, as upstream's: memory.available reserves memory,
// nodefs.available ephemeral storage; other signals reserve nothing.
func HardEvictionReservation(hard []Threshold, capacity corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, t := range hard {
		switch t.Signal {
		case MemoryAvailable:
			out[corev1.ResourceMemory] = t.Value.Of(capacity[corev1.ResourceMemory])
		case NodeFsAvailable:
			out[corev1.ResourceEphemeralStorage] = t.Value.Of(capacity[corev1.ResourceEphemeralStorage])
		}
	}
	return out
}
