package storage

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestDefaultCSIDriver(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	d := &storagev1.CSIDriver{}
	s.Default(d)
	sp := d.Spec
	if !*sp.AttachRequired || *sp.PodInfoOnMount || *sp.StorageCapacity || *sp.RequiresRepublish || *sp.SELinuxMount || *sp.PreventPodSchedulingIfMissing {
		t.Errorf("booleans = %+v", sp)
	}
	if *sp.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy || len(sp.VolumeLifecycleModes) != 1 || sp.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		t.Errorf("fsGroupPolicy %v, modes %v", *sp.FSGroupPolicy, sp.VolumeLifecycleModes)
	}
	kept := &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}}}
	DefaultCSIDriver(kept)
	if *kept.Spec.AttachRequired || kept.Spec.VolumeLifecycleModes[0] != storagev1.VolumeLifecycleEphemeral {
		t.Errorf("explicit values overwritten: %+v", kept.Spec)
	}
}

func validDriver() *storagev1.CSIDriver {
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com", ResourceVersion: "1"},
		Spec: storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To[int64](3600)}}}}
	DefaultCSIDriver(d)
	return d
}

func TestValidateCSIDriver(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*storagev1.CSIDriver)
		want   []errKey
	}{
		{name: "valid", mutate: func(*storagev1.CSIDriver) {}},
		{name: "unset attachRequired", mutate: func(d *storagev1.CSIDriver) { d.Spec.AttachRequired = nil }, want: []errKey{e(field.ErrorTypeRequired, "spec.attachedRequired")}},
		{name: "bad fsGroupPolicy", mutate: func(d *storagev1.CSIDriver) { d.Spec.FSGroupPolicy = ptr.To(storagev1.FSGroupPolicy("x")) }, want: []errKey{e(field.ErrorTypeNotSupported, "spec.fsGroupPolicy")}},
		{name: "bad mode", mutate: func(d *storagev1.CSIDriver) { d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{"Forever"} }, want: []errKey{e(field.ErrorTypeNotSupported, "spec.volumeLifecycleModes")}},
		{name: "short token", mutate: func(d *storagev1.CSIDriver) { d.Spec.TokenRequests[0].ExpirationSeconds = ptr.To[int64](60) }, want: []errKey{e(field.ErrorTypeInvalid, "spec.tokenRequests[0].expirationSeconds")}},
		{name: "duplicate audience", mutate: func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = append(d.Spec.TokenRequests, d.Spec.TokenRequests[0])
		}, want: []errKey{e(field.ErrorTypeDuplicate, "spec.tokenRequests[1].audience")}},
		{name: "secrets without tokens", mutate: func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = nil
			d.Spec.ServiceAccountTokenInSecrets = ptr.To(true)
		}, want: []errKey{e(field.ErrorTypeInvalid, "spec.serviceAccountTokenInSecrets")}},
		{name: "short allocatable period", mutate: func(d *storagev1.CSIDriver) { d.Spec.NodeAllocatableUpdatePeriodSeconds = ptr.To[int64](5) }, want: []errKey{e(field.ErrorTypeInvalid, "spec.nodeAllocatableUpdatePeriodSeconds")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := validDriver()
			tc.mutate(d)
			expectErrs(t, ValidateCSIDriver(d), tc.want...)
		})
	}
	old, d := validDriver(), validDriver()
	d.Spec.AttachRequired = ptr.To(false)
	d.Spec.PodInfoOnMount = ptr.To(true)
	expectErrs(t, ValidateCSIDriverUpdate(d, old), e(field.ErrorTypeInvalid, "spec.attachedRequired"))
}

func validCSINode() *storagev1.CSINode {
	return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-a", ResourceVersion: "1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "csi.example.com", NodeID: "i-1", TopologyKeys: []string{"topology.example.com/zone"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](8)}},
	}}}
}

func TestValidateCSINode(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*storagev1.CSINode)
		want   []errKey
	}{
		{name: "valid", mutate: func(*storagev1.CSINode) {}},
		{name: "no node ID", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].NodeID = "" }, want: []errKey{e(field.ErrorTypeRequired, "spec.drivers[0].nodeID")}},
		{name: "duplicate driver", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers = append(n.Spec.Drivers, n.Spec.Drivers[0]) }, want: []errKey{e(field.ErrorTypeDuplicate, "spec.drivers[1].name")}},
		{name: "bad topology key", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].TopologyKeys = []string{"bad key"} }, want: []errKey{e(field.ErrorTypeInvalid, "spec.drivers[0]")}},
		{name: "negative count", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].Allocatable.Count = ptr.To[int32](-1) }, want: []errKey{e(field.ErrorTypeInvalid, "spec.drivers[0].allocatable.count")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := validCSINode()
			tc.mutate(n)
			expectErrs(t, ValidateCSINode(n), tc.want...)
		})
	}
	// Only a driver's allocatable count may change.
	old, n := validCSINode(), validCSINode()
	n.Spec.Drivers[0].Allocatable.Count = ptr.To[int32](16)
	expectErrs(t, ValidateCSINodeUpdate(n, old))
	n.Spec.Drivers[0].NodeID = "i-2"
	expectErrs(t, ValidateCSINodeUpdate(n, old), e(field.ErrorTypeInvalid, "spec.drivers"))
	// Storage health in the status.
	n = validCSINode()
	n.Status.StorageHealth = []storagev1.StorageHealth{{Name: "csi.example.com", HealthConditions: []storagev1.StorageHealthCondition{{Status: "Fine"}}}}
	expectErrs(t, ValidateCSINodeStatusUpdate(n, old),
		e(field.ErrorTypeNotSupported, "status.storageHealth[0].healthConditions[0].status"), e(field.ErrorTypeRequired, "status.storageHealth[0].healthConditions[0].reason"))
}

func TestValidateCSIStorageCapacity(t *testing.T) {
	valid := func() *storagev1.CSIStorageCapacity {
		return &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "1"}, StorageClassName: "fast",
			NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}, Capacity: ptr.To(resource.MustParse("10Gi"))}
	}
	expectErrs(t, ValidateCSIStorageCapacity(valid()))
	c := valid()
	c.Capacity = ptr.To(resource.MustParse("-1"))
	c.StorageClassName = "Fast!"
	expectErrs(t, ValidateCSIStorageCapacity(c), e(field.ErrorTypeInvalid, "capacity"), e(field.ErrorTypeInvalid, "storageClassName"))
	c = valid()
	c.Namespace = ""
	expectErrs(t, ValidateCSIStorageCapacity(c), e(field.ErrorTypeRequired, "metadata.namespace"))
	old, c := valid(), valid()
	c.NodeTopology = nil
	c.StorageClassName = "slow"
	expectErrs(t, ValidateCSIStorageCapacityUpdate(c, old), e(field.ErrorTypeInvalid, "nodeTopology"), e(field.ErrorTypeInvalid, "storageClassName"))
}

func TestValidateVolumeAttachment(t *testing.T) {
	valid := func() *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va", ResourceVersion: "1"}, Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "csi.example.com", NodeName: "node-a", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}}}
	}
	inline := &corev1.PersistentVolumeSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "h"}}}
	tests := []struct {
		name   string
		mutate func(*storagev1.VolumeAttachment)
		want   []errKey
	}{
		{name: "valid", mutate: func(*storagev1.VolumeAttachment) {}},
		{name: "inline", mutate: func(v *storagev1.VolumeAttachment) {
			v.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: inline.DeepCopy()}
		}},
		{name: "inline with capacity and no CSI", mutate: func(v *storagev1.VolumeAttachment) {
			spec := inline.DeepCopy()
			spec.CSI, spec.HostPath = nil, &corev1.HostPathVolumeSource{Path: "/x"}
			spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
			v.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: spec}
		}, want: []errKey{e(field.ErrorTypeForbidden, "spec.source.inlineVolumeSpec.capacity"), e(field.ErrorTypeRequired, "spec.source.inlineVolumeSpec.csi")}},
		{name: "no source", mutate: func(v *storagev1.VolumeAttachment) { v.Spec.Source = storagev1.VolumeAttachmentSource{} }, want: []errKey{e(field.ErrorTypeRequired, "spec.source")}},
		{name: "two sources", mutate: func(v *storagev1.VolumeAttachment) { v.Spec.Source.InlineVolumeSpec = inline.DeepCopy() }, want: []errKey{e(field.ErrorTypeForbidden, "spec.source")}},
		{name: "no attacher or node", mutate: func(v *storagev1.VolumeAttachment) { v.Spec.Attacher, v.Spec.NodeName = "", "" },
			want: []errKey{e(field.ErrorTypeRequired, "spec.attacher"), e(field.ErrorTypeInvalid, "spec.nodeName")}},
		{name: "negative error code", mutate: func(v *storagev1.VolumeAttachment) {
			v.Status.AttachError = &storagev1.VolumeError{ErrorCode: ptr.To[int32](-1)}
		}, want: []errKey{e(field.ErrorTypeInvalid, "status.attachError.errorCode")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := valid()
			tc.mutate(v)
			expectErrs(t, ValidateVolumeAttachment(v), tc.want...)
		})
	}
	old, v := valid(), valid()
	v.Spec.NodeName = "node-b"
	expectErrs(t, ValidateVolumeAttachmentUpdate(v, old), e(field.ErrorTypeInvalid, "spec"))
	v = valid()
	v.Status.Attached = true
	expectErrs(t, ValidateVolumeAttachmentStatusUpdate(v, old))
}

func TestValidateVolumeAttributesClass(t *testing.T) {
	valid := func() *storagev1.VolumeAttributesClass {
		return &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold", ResourceVersion: "1"}, DriverName: "csi.example.com", Parameters: map[string]string{"iops": "500"}}
	}
	expectErrs(t, ValidateVolumeAttributesClass(valid()))
	c := valid()
	c.DriverName, c.Parameters = "", nil
	expectErrs(t, ValidateVolumeAttributesClass(c), e(field.ErrorTypeRequired, "driverName"), e(field.ErrorTypeRequired, "parameters"))
	old, c := valid(), valid()
	c.DriverName = "other.example.com"
	c.Parameters = map[string]string{"iops": "1000"}
	expectErrs(t, ValidateVolumeAttributesClassUpdate(c, old), e(field.ErrorTypeForbidden, "driverName"), e(field.ErrorTypeForbidden, "parameters"))
}
