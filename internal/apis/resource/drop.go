package resource

import (
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The drop functions clear, on create and update, the fields of alpha
// features that are off by default in v1.37, unless old already uses
// them (upstream's strategies do the same with the feature gates).

// DropDisabledClaimFields clears derived attributes (DRADerivedAttributes)
// from a claim spec.
func DropDisabledClaimFields(spec, old *resourcev1.ResourceClaimSpec) {
	if old != nil && claimUsesDerivedAttributes(old) {
		return
	}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			r.Exactly.DerivedAttributes = nil
		}
		for j := range r.FirstAvailable {
			r.FirstAvailable[j].DerivedAttributes = nil
		}
	}
}

func claimUsesDerivedAttributes(spec *resourcev1.ResourceClaimSpec) bool {
	for _, r := range spec.Devices.Requests {
		if r.Exactly != nil && len(r.Exactly.DerivedAttributes) > 0 {
			return true
		}
		for _, s := range r.FirstAvailable {
			if len(s.DerivedAttributes) > 0 {
				return true
			}
		}
	}
	return false
}

// DropDisabledClaimStatusFields clears skipped node operations
// (DRAOptionalNodeOperations) from allocation results, then the status of
// devices no longer allocated.
func DropDisabledClaimStatusFields(st, old *resourcev1.ResourceClaimStatus) {
	if !statusSkipsNodeOperations(old) && st.Allocation != nil {
		for i := range st.Allocation.Devices.Results {
			st.Allocation.Devices.Results[i].SkipNodeOperations = nil
		}
	}
	deallocated := sets.New[string]()
	if old.Allocation != nil {
		for _, r := range old.Allocation.Devices.Results {
			deallocated.Insert(deviceKey(r.Driver, r.Pool, r.Device, (*string)(r.ShareID)))
		}
	}
	if st.Allocation != nil {
		for _, r := range st.Allocation.Devices.Results {
			deallocated.Delete(deviceKey(r.Driver, r.Pool, r.Device, (*string)(r.ShareID)))
		}
	}
	kept := st.Devices[:0]
	for _, d := range st.Devices {
		if !deallocated.Has(deviceKey(d.Driver, d.Pool, d.Device, d.ShareID)) {
			kept = append(kept, d)
		}
	}
	st.Devices = kept
	if len(st.Devices) == 0 {
		st.Devices = nil
	}
}

func statusSkipsNodeOperations(st *resourcev1.ResourceClaimStatus) bool {
	if st == nil || st.Allocation == nil {
		return false
	}
	for _, r := range st.Allocation.Devices.Results {
		if len(r.SkipNodeOperations) > 0 {
			return true
		}
	}
	return false
}

// DropDisabledSliceFields clears from a slice spec the partition type
// attribute (DRAPartitionableDevicesType), skipped node operations
// (DRAOptionalNodeOperations), and from its devices counter
// compatibility groups (DRADeviceCompatibilityGroups), node-allocatable
// resources (DRANodeAllocatableResources) and list-typed attribute values
// (DRAListTypeAttributes).
func DropDisabledSliceFields(spec, old *resourcev1.ResourceSliceSpec) {
	if old == nil || old.PartitionTypeAttribute == nil {
		spec.PartitionTypeAttribute = nil
	}
	if old == nil || len(old.SkipNodeOperations) == 0 {
		spec.SkipNodeOperations = nil
	}
	var groups, nodeAlloc, lists bool
	if old != nil {
		for _, d := range old.Devices {
			for _, c := range d.ConsumesCounters {
				groups = groups || len(c.CompatibilityGroups) > 0
			}
			nodeAlloc = nodeAlloc || len(d.NodeAllocatableResources) > 0
			for _, a := range d.Attributes {
				lists = lists || a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil
			}
		}
	}
	for i := range spec.Devices {
		d := &spec.Devices[i]
		if !groups {
			for j := range d.ConsumesCounters {
				d.ConsumesCounters[j].CompatibilityGroups = nil
			}
		}
		if !nodeAlloc {
			d.NodeAllocatableResources = nil
		}
		if !lists {
			for k, a := range d.Attributes {
				if a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil {
					a.BoolValues, a.IntValues, a.StringValues, a.VersionValues = nil, nil, nil, nil
					d.Attributes[k] = a
				}
			}
		}
	}
}
