// Package resource owns defaulting and validation for the resource.k8s.io/v1
// kinds the k1s apiserver serves (dynamic resource allocation):
// DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice and
// DeviceTaintRule.
//
// It works directly on the versioned k8s.io/api/resource/v1 types.
// Behaviour follows upstream Kubernetes v1.37 with its default feature
// gates: requests are exactly one of "exactly" and "firstAvailable", with
// an allocation mode (defaulted to ExactCount of one), a device class, CEL
// selectors (compiled by k8s.io/dynamic-resource-allocation/cel, as
// upstream, with its cost limit), tolerations; constraints and configs name
// requests; a claim's and a template's spec is immutable; a claim's status
// keeps an allocation once made and reserves it only while allocated; a
// slice names its driver and pool and exactly one of nodeName, nodeSelector,
// allNodes and perDeviceNodeSelection; devices carry bounded attributes,
// capacities, counters and taints (timeAdded defaulted). The fields of the
// alpha features that are off by default (derived attributes, list-typed
// attributes, counter compatibility groups, node-allocatable resources,
// skipped node operations, the partition type attribute) are dropped on
// write unless already in use, as upstream's strategies do. Field paths and
// error types match upstream. The code is written for k1s.
package resource
