package storage

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/core"
)

const (
	maxAttachedVolumeMetadataSize = 256 * 1024
	maxVolumeErrorMessageSize     = 1024
	csiNodeIDMaxLength            = 256
	maxStorageHealthConditions    = 16
)

// DefaultCSIDriver sets attachRequired true, podInfoOnMount,
// storageCapacity, requiresRepublish, seLinuxMount and
// preventPodSchedulingIfMissing false, fsGroupPolicy
// ReadWriteOnceWithFSType and volumeLifecycleModes [Persistent] when unset.
func DefaultCSIDriver(d *storagev1.CSIDriver) {
	s := &d.Spec
	setBool := func(p **bool, v bool) {
		if *p == nil {
			*p = &v
		}
	}
	setBool(&s.AttachRequired, true)
	setBool(&s.PodInfoOnMount, false)
	setBool(&s.StorageCapacity, false)
	setBool(&s.RequiresRepublish, false)
	setBool(&s.SELinuxMount, false)
	setBool(&s.PreventPodSchedulingIfMissing, false)
	if s.FSGroupPolicy == nil {
		p := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
		s.FSGroupPolicy = &p
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
}

// ValidateCSIDriver validates a CSIDriver on create: its name is a DNS
// subdomain and every defaulted field is set.
func ValidateCSIDriver(d *storagev1.CSIDriver) field.ErrorList {
	errs := validateObjectMeta(&d.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateCSIDriverSpec(&d.Spec, field.NewPath("spec"))...)
}

// ValidateCSIDriverUpdate validates a CSIDriver update: attachRequired and
// volumeLifecycleModes are immutable.
func ValidateCSIDriverUpdate(d, old *storagev1.CSIDriver) field.ErrorList {
	errs := validateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateCSIDriverSpec(&d.Spec, field.NewPath("spec"))...)
	// upstream's path spells it "attachedRequired"
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(d.Spec.AttachRequired, old.Spec.AttachRequired, field.NewPath("spec", "attachedRequired"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(d.Spec.VolumeLifecycleModes, old.Spec.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
}

func validateCSIDriverSpec(s *storagev1.CSIDriverSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	required := func(v *bool, name string) {
		if v == nil {
			errs = append(errs, field.Required(p.Child(name), ""))
		}
	}
	required(s.AttachRequired, "attachedRequired")
	required(s.PodInfoOnMount, "podInfoOnMount")
	required(s.StorageCapacity, "storageCapacity")
	required(s.SELinuxMount, "seLinuxMount")
	required(s.PreventPodSchedulingIfMissing, "preventPodSchedulingIfMissing")
	if fp := s.FSGroupPolicy; fp != nil {
		switch *fp {
		case storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy:
		default:
			errs = append(errs, field.NotSupported(p.Child("fsGroupPolicy"), *fp, []string{
				string(storagev1.FileFSGroupPolicy), string(storagev1.NoneFSGroupPolicy), string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy),
			}))
		}
	}
	errs = append(errs, validateTokenRequests(s.TokenRequests, p.Child("tokenRequests"))...)
	for _, m := range s.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(p.Child("volumeLifecycleModes"), m, []string{
				string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral),
			}))
		}
	}
	if period := s.NodeAllocatableUpdatePeriodSeconds; period != nil && *period < 10 {
		errs = append(errs, field.Invalid(p.Child("nodeAllocatableUpdatePeriodSeconds"), *period, "must be greater than or equal to 10 seconds"))
	}
	if s.ServiceAccountTokenInSecrets != nil && len(s.TokenRequests) == 0 {
		errs = append(errs, field.Invalid(p.Child("serviceAccountTokenInSecrets"), s.ServiceAccountTokenInSecrets, "serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	return errs
}

func validateTokenRequests(requests []storagev1.TokenRequest, p *field.Path) field.ErrorList {
	const minExpiration = 10 * time.Minute
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, r := range requests {
		rp := p.Index(i)
		if seen.Has(r.Audience) {
			errs = append(errs, field.Duplicate(rp.Child("audience"), r.Audience))
			continue
		}
		seen.Insert(r.Audience)
		if r.ExpirationSeconds == nil {
			continue
		}
		if *r.ExpirationSeconds < int64(minExpiration.Seconds()) {
			errs = append(errs, field.Invalid(rp.Child("expirationSeconds"), *r.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
		}
		if *r.ExpirationSeconds > 1<<32 {
			errs = append(errs, field.Invalid(rp.Child("expirationSeconds"), *r.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	return errs
}

// ValidateCSINode validates a CSINode on create: named as a node, its
// drivers named once each with a node ID and valid topology keys.
func ValidateCSINode(n *storagev1.CSINode) field.ErrorList {
	errs := validateObjectMeta(&n.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	p := field.NewPath("spec", "drivers")
	names := sets.New[string]()
	for i, d := range n.Spec.Drivers {
		dp := p.Index(i)
		errs = append(errs, core.ValidateCSIDriverName(d.Name, dp.Child("name"))...)
		if d.NodeID == "" {
			errs = append(errs, field.Required(dp.Child("nodeID"), d.NodeID))
		}
		if len(d.NodeID) > csiNodeIDMaxLength {
			errs = append(errs, field.Invalid(dp.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*d.Allocatable.Count), dp.Child("allocatable", "count"))...)
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(dp.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		keys := sets.New[string]()
		for _, key := range d.TopologyKeys {
			if key == "" {
				errs = append(errs, field.Required(dp, key))
			}
			if keys.Has(key) {
				errs = append(errs, field.Duplicate(dp, key))
			}
			keys.Insert(key)
			for _, msg := range validation.IsQualifiedName(key) {
				errs = append(errs, field.Invalid(dp, key, msg))
			}
		}
	}
	return errs
}

// ValidateCSINodeUpdate validates a CSINode update: a driver kept by name
// may change only its allocatable count.
func ValidateCSINodeUpdate(n, old *storagev1.CSINode) field.ErrorList {
	errs := ValidateCSINode(n)
	errs = append(errs, validateObjectMetaUpdate(&n.ObjectMeta, &old.ObjectMeta)...)
	for _, od := range old.Spec.Drivers {
		for _, nd := range n.Spec.Drivers {
			if od.Name != nd.Name {
				continue
			}
			oc, nc := od.DeepCopy(), nd.DeepCopy()
			oc.Allocatable, nc.Allocatable = nil, nil
			errs = append(errs, apimachineryvalidation.ValidateImmutableField(nc, oc, field.NewPath("spec").Child("drivers"))...)
		}
	}
	return errs
}

// ValidateCSINodeStatusUpdate validates a CSINode status update: each
// storage health entry names a CSI driver once, with at most 16 known
// conditions.
func ValidateCSINodeStatusUpdate(n, old *storagev1.CSINode) field.ErrorList {
	errs := validateObjectMetaUpdate(&n.ObjectMeta, &old.ObjectMeta)
	p := field.NewPath("status", "storageHealth")
	seen := sets.New[string]()
	for i, h := range n.Status.StorageHealth {
		hp := p.Index(i)
		if seen.Has(h.Name) {
			errs = append(errs, field.Duplicate(hp, h.Name))
		}
		seen.Insert(h.Name)
		errs = append(errs, core.ValidateCSIDriverName(h.Name, hp.Child("name"))...)
		if len(h.HealthConditions) > maxStorageHealthConditions {
			errs = append(errs, field.TooMany(hp.Child("healthConditions"), len(h.HealthConditions), maxStorageHealthConditions))
			continue
		}
		for j, c := range h.HealthConditions {
			errs = append(errs, validateStorageHealthCondition(c, hp.Child("healthConditions").Index(j))...)
		}
	}
	return errs
}

func validateStorageHealthCondition(c storagev1.StorageHealthCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Status != storagev1.StorageUnreachable && c.Status != storagev1.StorageDegraded {
		errs = append(errs, field.NotSupported(p.Child("status"), c.Status, []storagev1.StorageHealthStatusType{storagev1.StorageDegraded, storagev1.StorageUnreachable}))
	}
	switch {
	case c.Reason == "":
		errs = append(errs, field.Required(p.Child("reason"), ""))
	case len(c.Reason) > 256:
		errs = append(errs, field.TooLong(p.Child("reason"), c.Reason, 256))
	default:
		for _, msg := range metav1validation.IsValidConditionReason(c.Reason) {
			errs = append(errs, field.Invalid(p.Child("reason"), c.Reason, msg))
		}
	}
	if len(c.Message) > 1024 {
		errs = append(errs, field.TooLong(p.Child("message"), c.Message, 1024))
	}
	if m := c.AccessMode; m != nil {
		switch *m {
		case corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod:
		default:
			errs = append(errs, field.NotSupported(p.Child("accessMode"), *m, []corev1.PersistentVolumeAccessMode{
				corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod,
			}))
		}
	}
	if m := c.VolumeMode; m != nil && *m != corev1.PersistentVolumeFilesystem && *m != corev1.PersistentVolumeBlock {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *m, []corev1.PersistentVolumeMode{corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock}))
	}
	return errs
}

// ValidateCSIStorageCapacity validates a CSIStorageCapacity on create.
func ValidateCSIStorageCapacity(c *storagev1.CSIStorageCapacity) field.ErrorList {
	return validateCSIStorageCapacity(c, false)
}

func validateCSIStorageCapacity(c *storagev1.CSIStorageCapacity, allowInvalidLabelValues bool) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValues}
	errs = append(errs, metav1validation.ValidateLabelSelector(c.NodeTopology, opts, field.NewPath("nodeTopology"))...)
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if c.Capacity != nil && c.Capacity.Sign() < 0 {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), apimachineryvalidation.IsNegativeErrorMsg))
	}
	return errs
}

// ValidateCSIStorageCapacityUpdate validates a CSIStorageCapacity update:
// nodeTopology and storageClassName are immutable. A selector with invalid
// label values that was stored before stays accepted.
func ValidateCSIStorageCapacityUpdate(c, old *storagev1.CSIStorageCapacity) field.ErrorList {
	oldInvalid := len(metav1validation.ValidateLabelSelector(old.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0
	errs := validateCSIStorageCapacity(c, oldInvalid)
	errs = append(errs, validateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta)...)
	if !apiequality.Semantic.DeepEqual(c.NodeTopology, old.NodeTopology) {
		errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, "field is immutable"))
	}
	if c.StorageClassName != old.StorageClassName {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, "field is immutable"))
	}
	return errs
}

// ValidateVolumeAttachment validates a VolumeAttachment on create: a CSI
// attacher, exactly one source, a node name, and the status sizes.
func ValidateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	errs := validateObjectMeta(&va.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	sp := field.NewPath("spec")
	errs = append(errs, core.ValidateCSIDriverName(va.Spec.Attacher, sp.Child("attacher"))...)
	src, srcPath := &va.Spec.Source, sp.Child("source")
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		errs = append(errs, field.Required(srcPath, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		errs = append(errs, field.Forbidden(srcPath, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil:
		if *src.PersistentVolumeName == "" {
			errs = append(errs, field.Required(srcPath.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
		}
	default:
		errs = append(errs, core.ValidateInlinePersistentVolumeSpec(src.InlineVolumeSpec, srcPath.Child("inlineVolumeSpec"))...)
	}
	errs = append(errs, core.ValidateNodeName(va.Spec.NodeName, sp.Child("nodeName"))...)
	errs = append(errs, validateVolumeAttachmentStatus(&va.Status, field.NewPath("status"))...)
	if name := src.PersistentVolumeName; name != nil && *name != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*name, false) {
			errs = append(errs, field.Invalid(field.NewPath("spec.source.persistentVolumeName"), *name, msg))
		}
	}
	return errs
}

func validateVolumeAttachmentStatus(st *storagev1.VolumeAttachmentStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for k, v := range st.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachedVolumeMetadataSize {
		errs = append(errs, field.TooLong(p.Child("attachmentMetadata"), "", maxAttachedVolumeMetadataSize))
	}
	errs = append(errs, validateVolumeError(st.AttachError, p.Child("attachError"))...)
	return append(errs, validateVolumeError(st.DetachError, p.Child("detachError"))...)
}

func validateVolumeError(e *storagev1.VolumeError, p *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	if len(e.Message) > maxVolumeErrorMessageSize {
		errs = append(errs, field.TooLong(p.Child("message"), "", maxVolumeErrorMessageSize))
	}
	if e.ErrorCode != nil && *e.ErrorCode < 0 {
		errs = append(errs, field.Invalid(p.Child("errorCode"), *e.ErrorCode, validation.InclusiveRangeError(0, math.MaxInt32)))
	}
	return errs
}

// ValidateVolumeAttachmentUpdate validates a VolumeAttachment update: the
// spec is immutable.
func ValidateVolumeAttachmentUpdate(va, old *storagev1.VolumeAttachment) field.ErrorList {
	errs := ValidateVolumeAttachment(va)
	errs = append(errs, validateObjectMetaUpdate(&va.ObjectMeta, &old.ObjectMeta)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(va.Spec, old.Spec, field.NewPath("spec"))...)
}

// ValidateVolumeAttachmentStatusUpdate validates a status update (upstream
// runs the update validation on it too).
func ValidateVolumeAttachmentStatusUpdate(va, old *storagev1.VolumeAttachment) field.ErrorList {
	return ValidateVolumeAttachmentUpdate(va, old)
}

// ValidateVolumeAttributesClass validates a VolumeAttributesClass on
// create: a driver name and at least one parameter.
func ValidateVolumeAttributesClass(c *storagev1.VolumeAttributesClass) field.ErrorList {
	errs := validateObjectMeta(&c.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validateProvisioner(c.DriverName, field.NewPath("driverName"))...)
	errs = append(errs, validateParameters(c.Parameters, field.NewPath("parameters"))...)
	if len(c.Parameters) == 0 {
		errs = append(errs, field.Required(field.NewPath("parameters"), "must contain at least one key/value pair"))
	}
	return errs
}

// ValidateVolumeAttributesClassUpdate validates an update: driverName and
// parameters may not change.
func ValidateVolumeAttributesClassUpdate(c, old *storagev1.VolumeAttributesClass) field.ErrorList {
	errs := validateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta)
	if c.DriverName != old.DriverName {
		errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
	}
	if !apiequality.Semantic.DeepEqual(c.Parameters, old.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	return append(errs, ValidateVolumeAttributesClass(c)...)
}
