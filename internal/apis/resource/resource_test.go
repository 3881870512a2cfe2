package resource

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	c := &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
		{Name: "a", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "c", Tolerations: []resourcev1.DeviceToleration{{Key: "k"}}}},
		{Name: "b", FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "x", DeviceClassName: "c", AllocationMode: resourcev1.DeviceAllocationModeAll}}},
	}}}}
	s.Default(c)
	e := c.Spec.Devices.Requests[0].Exactly
	if e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 || e.Tolerations[0].Operator != resourcev1.DeviceTolerationOpEqual {
		t.Errorf("exact request = %+v", e)
	}
	if sub := c.Spec.Devices.Requests[1].FirstAvailable[0]; sub.Count != 0 {
		t.Errorf("All request got a count: %+v", sub)
	}
	r := &resourcev1.DeviceTaintRule{}
	s.Default(r)
	if r.Spec.Taint.TimeAdded == nil || time.Since(r.Spec.Taint.TimeAdded.Time) > time.Minute {
		t.Errorf("timeAdded = %v", r.Spec.Taint.TimeAdded)
	}
}

func validClaim() *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "ns", ResourceVersion: "1"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{
				{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com",
					Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.example.com"].model == "a100"`}}}}},
				{Name: "nic", FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "fast", DeviceClassName: "nic.example.com"}, {Name: "slow", DeviceClassName: "nic.example.com"}}},
			},
			Constraints: []resourcev1.DeviceConstraint{{Requests: []string{"gpu", "nic/fast"}, MatchAttribute: ptr.To[resourcev1.FullyQualifiedName]("example.com/numa")}},
			Config: []resourcev1.DeviceClaimConfiguration{{Requests: []string{"gpu"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
				Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"mode":"shared"}`)}}}}},
		}}}
	DefaultResourceClaim(c)
	return c
}

func TestValidateResourceClaim(t *testing.T) {
	req := "spec.devices.requests"
	tests := []struct {
		name   string
		mutate func(*resourcev1.ResourceClaim)
		want   []errKey
	}{
		{name: "valid", mutate: func(*resourcev1.ResourceClaim) {}},
		{name: "no class", mutate: func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.DeviceClassName = "" },
			want: []errKey{e(field.ErrorTypeRequired, req+"[0].exactly.deviceClassName")}},
		{name: "exactly and firstAvailable", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests[1].Exactly = c.Spec.Devices.Requests[0].Exactly.DeepCopy()
		}, want: []errKey{e(field.ErrorTypeInvalid, req+"[1]")}},
		{name: "neither", mutate: func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly = nil },
			want: []errKey{e(field.ErrorTypeRequired, req+"[0]")}},
		{name: "duplicate request", mutate: func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[1].Name = "gpu" },
			want: []errKey{e(field.ErrorTypeDuplicate, req+"[1]"), e(field.ErrorTypeInvalid, "spec.devices.constraints[0].requests[1]")}},
		{name: "CEL syntax error", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Selectors[0].CEL.Expression = `device.driver ==`
		}, want: []errKey{e(field.ErrorTypeInvalid, req+"[0].exactly.selectors[0].cel.expression")}},
		{name: "CEL not boolean", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Selectors[0].CEL.Expression = `device.driver`
		}, want: []errKey{e(field.ErrorTypeInvalid, req+"[0].exactly.selectors[0].cel.expression")}},
		{name: "count with All", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.AllocationMode = resourcev1.DeviceAllocationModeAll
		}, want: []errKey{e(field.ErrorTypeInvalid, req+"[0].exactly.count")}},
		{name: "unknown request in a constraint", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Constraints[0].Requests = []string{"nic/medium"}
		}, want: []errKey{e(field.ErrorTypeInvalid, "spec.devices.constraints[0].requests[0]")}},
		{name: "constraint without attribute", mutate: func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Constraints[0].MatchAttribute = nil },
			want: []errKey{e(field.ErrorTypeRequired, "spec.devices.constraints[0]")}},
		{name: "config not an object", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Config[0].Opaque.Parameters.Raw = []byte(`[1]`)
		}, want: []errKey{e(field.ErrorTypeInvalid, "spec.devices.config[0].opaque.parameters")}},
		{name: "bad toleration", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Tolerations = []resourcev1.DeviceToleration{{Key: "k", Operator: resourcev1.DeviceTolerationOpExists, Value: "v"}}
		}, want: []errKey{e(field.ErrorTypeInvalid, req+"[0].exactly.tolerations[0].value")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validClaim()
			tc.mutate(c)
			expectErrs(t, ValidateResourceClaim(c), tc.want...)
		})
	}
	old, c := validClaim(), validClaim()
	c.Spec.Devices.Requests[0].Exactly.Count = 2
	expectErrs(t, ValidateResourceClaimUpdate(c, old), e(field.ErrorTypeInvalid, "spec"))
}

func TestValidateResourceClaimStatusUpdate(t *testing.T) {
	result := resourcev1.DeviceRequestAllocationResult{Request: "gpu", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-0"}
	allocated := &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{result}}}
	consumer := resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: "p", UID: "u1"}
	tests := []struct {
		name     string
		old, new resourcev1.ResourceClaimStatus
		deleting bool
		want     []errKey
	}{
		{name: "empty allocation", new: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{}}},
		{name: "allocated and reserved", new: resourcev1.ResourceClaimStatus{Allocation: allocated, ReservedFor: []resourcev1.ResourceClaimConsumerReference{consumer}}},
		{name: "reserved without allocation", new: resourcev1.ResourceClaimStatus{ReservedFor: []resourcev1.ResourceClaimConsumerReference{consumer}},
			want: []errKey{e(field.ErrorTypeForbidden, "status.reservedFor")}},
		{name: "unknown request", new: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "tpu", Driver: "gpu.example.com", Pool: "p", Device: "d"}}}}},
			want: []errKey{e(field.ErrorTypeInvalid, "status.allocation.devices.results[0].request")}},
		{name: "allocation changed", old: resourcev1.ResourceClaimStatus{Allocation: allocated}, new: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{}},
			want: []errKey{e(field.ErrorTypeInvalid, "status.allocation")}},
		{name: "new consumer while deleting", old: resourcev1.ResourceClaimStatus{Allocation: allocated},
			new: resourcev1.ResourceClaimStatus{Allocation: allocated, ReservedFor: []resourcev1.ResourceClaimConsumerReference{consumer}}, deleting: true,
			want: []errKey{e(field.ErrorTypeForbidden, "status.reservedFor")}},
		{name: "status of an allocated device", old: resourcev1.ResourceClaimStatus{Allocation: allocated},
			new: resourcev1.ResourceClaimStatus{Allocation: allocated, Devices: []resourcev1.AllocatedDeviceStatus{{Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-0"}}}},
		{name: "status of another device", old: resourcev1.ResourceClaimStatus{Allocation: allocated},
			new:  resourcev1.ResourceClaimStatus{Allocation: allocated, Devices: []resourcev1.AllocatedDeviceStatus{{Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-1"}}},
			want: []errKey{e(field.ErrorTypeInvalid, "status.devices[0]")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validClaim()
			old.Status = tc.old
			c := old.DeepCopy()
			c.Status = tc.new
			if tc.deleting {
				now := metav1.Now()
				old.DeletionTimestamp, c.DeletionTimestamp = &now, &now
			}
			expectErrs(t, ValidateResourceClaimStatusUpdate(c, old), tc.want...)
		})
	}
}

func TestDropDisabledClaimStatusFields(t *testing.T) {
	result := resourcev1.DeviceRequestAllocationResult{Request: "gpu", Driver: "d", Pool: "p", Device: "x",
		SkipNodeOperations: []resourcev1.SkipNodeOperation{"NodePrepareResources"}}
	old := resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{result}}}}
	st := resourcev1.ResourceClaimStatus{Devices: []resourcev1.AllocatedDeviceStatus{{Driver: "d", Pool: "p", Device: "x"}}}
	DropDisabledClaimStatusFields(&st, &resourcev1.ResourceClaimStatus{})
	if len(st.Devices) != 1 {
		t.Errorf("device status dropped though nothing was deallocated: %+v", st.Devices)
	}
	// Deallocation removes the device's status.
	st = resourcev1.ResourceClaimStatus{Devices: []resourcev1.AllocatedDeviceStatus{{Driver: "d", Pool: "p", Device: "x"}}}
	DropDisabledClaimStatusFields(&st, &old)
	if st.Devices != nil {
		t.Errorf("status of a deallocated device kept: %+v", st.Devices)
	}
	// Skipped node operations (alpha) are dropped unless already used.
	st = *old.DeepCopy()
	DropDisabledClaimStatusFields(&st, &resourcev1.ResourceClaimStatus{})
	if st.Allocation.Devices.Results[0].SkipNodeOperations != nil {
		t.Errorf("skipNodeOperations kept")
	}
	st = *old.DeepCopy()
	DropDisabledClaimStatusFields(&st, &old)
	if st.Allocation.Devices.Results[0].SkipNodeOperations == nil {
		t.Errorf("skipNodeOperations in use dropped")
	}
}

func TestValidateDeviceClass(t *testing.T) {
	valid := func() *resourcev1.DeviceClass {
		return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com", ResourceVersion: "1"}, Spec: resourcev1.DeviceClassSpec{
			Selectors:            []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "false"}}},
			ExtendedResourceName: ptr.To("example.com/gpu"),
		}}
	}
	expectErrs(t, ValidateDeviceClass(valid()))
	c := valid()
	c.Spec.Selectors = append(c.Spec.Selectors, resourcev1.DeviceSelector{})
	c.Spec.ExtendedResourceName = ptr.To("cpu")
	expectErrs(t, ValidateDeviceClass(c), e(field.ErrorTypeRequired, "spec.selectors[1].cel"), e(field.ErrorTypeInvalid, "spec.extendedResourceName"))
	old := valid()
	c = valid()
	c.Spec.Selectors[0].CEL.Expression = "1 == 0"
	expectErrs(t, ValidateDeviceClassUpdate(c, old))
}

func TestValidateResourceClaimTemplate(t *testing.T) {
	tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns", ResourceVersion: "1"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: validClaim().Spec}}
	expectErrs(t, ValidateResourceClaimTemplate(tmpl))
	bad := tmpl.DeepCopy()
	bad.Spec.Name = "fixed"
	bad.Spec.Spec.Devices.Requests[0].Name = "Not A Label"
	expectErrs(t, ValidateResourceClaimTemplate(bad), e(field.ErrorTypeForbidden, "spec.metadata.name"),
		e(field.ErrorTypeInvalid, "spec.spec.devices.requests[0].name"), e(field.ErrorTypeInvalid, "spec.spec.devices.constraints[0].requests[0]"),
		e(field.ErrorTypeInvalid, "spec.spec.devices.config[0].requests[0]"))
	upd := tmpl.DeepCopy()
	upd.Spec.Spec.Devices.Requests[0].Exactly.Count = 3
	expectErrs(t, ValidateResourceClaimTemplateUpdate(upd, tmpl), e(field.ErrorTypeInvalid, "spec"))
}

func validSlice() *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "slice", ResourceVersion: "1"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "gpu.example.com", Pool: resourcev1.ResourcePool{Name: "node-a", Generation: 1, ResourceSliceCount: 1}, NodeName: ptr.To("node-a"),
		Devices: []resourcev1.Device{{Name: "gpu-0",
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: ptr.To("a100")}, "driverVersion": {VersionValue: ptr.To("1.2.3")}},
			Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("40Gi")}},
			Taints:     []resourcev1.DeviceTaint{{Key: "example.com/unhealthy", Effect: resourcev1.DeviceTaintEffectNoSchedule}},
		}},
	}}
	DefaultResourceSlice(s)
	return s
}

func TestValidateResourceSlice(t *testing.T) {
	dev := "spec.devices[0]"
	tests := []struct {
		name   string
		mutate func(*resourcev1.ResourceSlice)
		want   []errKey
	}{
		{name: "valid", mutate: func(*resourcev1.ResourceSlice) {}},
		{name: "all nodes", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.NodeName, s.Spec.AllNodes = nil, ptr.To(true) }},
		{name: "no node selection", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.NodeName = nil }, want: []errKey{e(field.ErrorTypeRequired, "spec")}},
		{name: "two node selections", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.AllNodes = ptr.To(true) }, want: []errKey{e(field.ErrorTypeInvalid, "spec")}},
		{name: "allNodes false", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.AllNodes = ptr.To(false) }, want: []errKey{e(field.ErrorTypeInvalid, "spec.allNodes")}},
		{name: "no pool", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.Pool = resourcev1.ResourcePool{} },
			want: []errKey{e(field.ErrorTypeRequired, "spec.pool.name"), e(field.ErrorTypeInvalid, "spec.pool.resourceSliceCount")}},
		{name: "bad version", mutate: func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices[0].Attributes["driverVersion"] = resourcev1.DeviceAttribute{VersionValue: ptr.To("v1")}
		}, want: []errKey{e(field.ErrorTypeInvalid, dev+".attributes[driverVersion].version")}},
		{name: "two values", mutate: func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices[0].Attributes["model"] = resourcev1.DeviceAttribute{StringValue: ptr.To("a"), IntValue: ptr.To[int64](1)}
		}, want: []errKey{e(field.ErrorTypeInvalid, dev+".attributes[model]")}},
		{name: "bad attribute name", mutate: func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices[0].Attributes["bad name"] = resourcev1.DeviceAttribute{BoolValue: ptr.To(true)}
		}, want: []errKey{e(field.ErrorTypeInvalid, dev+".attributes")}},
		{name: "request policy on a single-allocation device", mutate: func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices[0].Capacity["memory"] = resourcev1.DeviceCapacity{Value: resource.MustParse("1Gi"), RequestPolicy: &resourcev1.CapacityRequestPolicy{}}
		}, want: []errKey{e(field.ErrorTypeForbidden, dev+".capacity[memory].requestPolicy")}},
		{name: "range default off the step", mutate: func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices[0].AllowMultipleAllocations = ptr.To(true)
			s.Spec.Devices[0].Capacity["memory"] = resourcev1.DeviceCapacity{Value: resource.MustParse("10Gi"), RequestPolicy: &resourcev1.CapacityRequestPolicy{
				Default: ptr.To(resource.MustParse("3Gi")), ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("2Gi")), Step: ptr.To(resource.MustParse("2Gi"))}}}
		}, want: []errKey{e(field.ErrorTypeInvalid, dev+".capacity[memory].requestPolicy.validRange.step")}},
		{name: "bad taint effect", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.Devices[0].Taints[0].Effect = "Evict" },
			want: []errKey{e(field.ErrorTypeNotSupported, dev+".taints[0].effect")}},
		{name: "per-device node without the switch", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.Devices[0].NodeName = ptr.To("node-a") },
			want: []errKey{e(field.ErrorTypeInvalid, dev)}},
		{name: "counters and devices", mutate: func(s *resourcev1.ResourceSlice) {
			s.Spec.SharedCounters = []resourcev1.CounterSet{{Name: "mem", Counters: map[string]resourcev1.Counter{"memory": {Value: resource.MustParse("1Gi")}}}}
		}, want: []errKey{e(field.ErrorTypeInvalid, "spec")}},
		{name: "duplicate device", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.Devices = append(s.Spec.Devices, s.Spec.Devices[0]) },
			want: []errKey{e(field.ErrorTypeDuplicate, "spec.devices[1]")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validSlice()
			tc.mutate(s)
			expectErrs(t, ValidateResourceSlice(s), tc.want...)
		})
	}
	old, s := validSlice(), validSlice()
	s.Spec.Driver = "other.example.com"
	s.Spec.NodeName = ptr.To("node-b")
	expectErrs(t, ValidateResourceSliceUpdate(s, old), e(field.ErrorTypeInvalid, "spec.driver"), e(field.ErrorTypeInvalid, "spec.nodeName"))
}

func TestDropDisabledSliceFields(t *testing.T) {
	s := validSlice()
	s.Spec.SkipNodeOperations = []resourcev1.SkipNodeOperation{"*"}
	s.Spec.Devices[0].Attributes["list"] = resourcev1.DeviceAttribute{IntValues: []int64{1}}
	s.Spec.Devices[0].NodeAllocatableResources = map[corev1.ResourceName]resourcev1.NodeAllocatableResource{corev1.ResourceCPU: {}}
	DropDisabledSliceFields(&s.Spec, nil)
	if s.Spec.SkipNodeOperations != nil || s.Spec.Devices[0].Attributes["list"].IntValues != nil || s.Spec.Devices[0].NodeAllocatableResources != nil {
		t.Errorf("alpha fields kept: %+v", s.Spec)
	}
	old := validSlice()
	old.Spec.SkipNodeOperations = []resourcev1.SkipNodeOperation{"*"}
	s = old.DeepCopy()
	DropDisabledSliceFields(&s.Spec, &old.Spec)
	if s.Spec.SkipNodeOperations == nil {
		t.Errorf("a field in use was dropped")
	}
}

func TestValidateDeviceTaintRule(t *testing.T) {
	valid := func() *resourcev1.DeviceTaintRule {
		r := &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "r", ResourceVersion: "1"}, Spec: resourcev1.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To("gpu.example.com"), Pool: ptr.To("node-a"), Device: ptr.To("gpu-0")},
			Taint:          resourcev1.DeviceTaint{Key: "example.com/maintenance", Value: "yes", Effect: resourcev1.DeviceTaintEffectNoExecute}}}
		DefaultDeviceTaintRule(r)
		return r
	}
	expectErrs(t, ValidateDeviceTaintRule(valid()))
	r := valid()
	r.Spec.Taint.Key = "Bad Key"
	r.Spec.DeviceSelector.Device = ptr.To("GPU_0")
	expectErrs(t, ValidateDeviceTaintRule(r), e(field.ErrorTypeInvalid, "spec.taint.key"), e(field.ErrorTypeInvalid, "spec.deviceSelector.device"))
	old := valid()
	r = valid()
	r.Status.Conditions = make([]metav1.Condition, 9)
	for i := range r.Status.Conditions {
		r.Status.Conditions[i] = metav1.Condition{Type: "T" + string(rune('a'+i)), Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: metav1.Now()}
	}
	expectErrs(t, ValidateDeviceTaintRuleStatusUpdate(r, old), e(field.ErrorTypeTooMany, "status.conditions"))
}
