package resource

import (
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds the defaulters of ResourceClaim,
// ResourceClaimTemplate, ResourceSlice and DeviceTaintRule (and their
// lists) to s.
func RegisterDefaults(s *runtime.Scheme) error {
	add := func(obj runtime.Object, fn func(any)) { s.AddTypeDefaultingFunc(obj, fn) }
	add(&resourcev1.ResourceClaim{}, func(o any) { DefaultResourceClaim(o.(*resourcev1.ResourceClaim)) })
	add(&resourcev1.ResourceClaimList{}, func(o any) {
		l := o.(*resourcev1.ResourceClaimList)
		for i := range l.Items {
			DefaultResourceClaim(&l.Items[i])
		}
	})
	add(&resourcev1.ResourceClaimTemplate{}, func(o any) { DefaultResourceClaimTemplate(o.(*resourcev1.ResourceClaimTemplate)) })
	add(&resourcev1.ResourceClaimTemplateList{}, func(o any) {
		l := o.(*resourcev1.ResourceClaimTemplateList)
		for i := range l.Items {
			DefaultResourceClaimTemplate(&l.Items[i])
		}
	})
	add(&resourcev1.ResourceSlice{}, func(o any) { DefaultResourceSlice(o.(*resourcev1.ResourceSlice)) })
	add(&resourcev1.ResourceSliceList{}, func(o any) {
		l := o.(*resourcev1.ResourceSliceList)
		for i := range l.Items {
			DefaultResourceSlice(&l.Items[i])
		}
	})
	add(&resourcev1.DeviceTaintRule{}, func(o any) { DefaultDeviceTaintRule(o.(*resourcev1.DeviceTaintRule)) })
	add(&resourcev1.DeviceTaintRuleList{}, func(o any) {
		l := o.(*resourcev1.DeviceTaintRuleList)
		for i := range l.Items {
			DefaultDeviceTaintRule(&l.Items[i])
		}
	})
	return nil
}

// DefaultResourceClaim defaults the claim's requests (see
// DefaultDeviceClaim) and the operator of its allocation's tolerations.
func DefaultResourceClaim(c *resourcev1.ResourceClaim) {
	DefaultDeviceClaim(&c.Spec.Devices)
	if a := c.Status.Allocation; a != nil {
		for i := range a.Devices.Results {
			defaultTolerations(a.Devices.Results[i].Tolerations)
		}
	}
}

// DefaultResourceClaimTemplate defaults the template's claim spec.
func DefaultResourceClaimTemplate(t *resourcev1.ResourceClaimTemplate) {
	DefaultDeviceClaim(&t.Spec.Spec.Devices)
}

// DefaultDeviceClaim sets each request's (and sub-request's) allocation
// mode to ExactCount and its count to one when unset, and tolerations'
// operator to Equal.
func DefaultDeviceClaim(d *resourcev1.DeviceClaim) {
	for i := range d.Requests {
		r := &d.Requests[i]
		if e := r.Exactly; e != nil {
			defaultAllocation(&e.AllocationMode, &e.Count)
			defaultTolerations(e.Tolerations)
		}
		for j := range r.FirstAvailable {
			s := &r.FirstAvailable[j]
			defaultAllocation(&s.AllocationMode, &s.Count)
			defaultTolerations(s.Tolerations)
		}
	}
}

func defaultAllocation(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

func defaultTolerations(ts []resourcev1.DeviceToleration) {
	for i := range ts {
		if ts[i].Operator == "" {
			ts[i].Operator = resourcev1.DeviceTolerationOpEqual
		}
	}
}

// DefaultResourceSlice sets the time a device taint was added, when unset.
func DefaultResourceSlice(s *resourcev1.ResourceSlice) {
	for i := range s.Spec.Devices {
		for j := range s.Spec.Devices[i].Taints {
			defaultTaint(&s.Spec.Devices[i].Taints[j])
		}
	}
}

// DefaultDeviceTaintRule sets the time its taint was added, when unset.
func DefaultDeviceTaintRule(r *resourcev1.DeviceTaintRule) {
	defaultTaint(&r.Spec.Taint)
}

func defaultTaint(t *resourcev1.DeviceTaint) {
	if t.TimeAdded == nil {
		t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
}
