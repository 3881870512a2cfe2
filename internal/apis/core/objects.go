package core

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// Node.

// ValidateNode validates a Node on create: name, taints, resource
// quantities and pod CIDRs.
func ValidateNode(node *corev1.Node) field.ErrorList {
	errs := validateMeta(&node.ObjectMeta, false, nameIsSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateNodeTaints(node.Spec.Taints, field.NewPath("spec", "taints"))...)
	errs = append(errs, validateNodeResources(node)...)
	if len(node.Spec.PodCIDRs) > 0 {
		p := field.NewPath("spec", "podCIDRs")
		for i, c := range node.Spec.PodCIDRs {
			errs = append(errs, validCIDR(p.Index(i), c, nil)...)
		}
		if len(node.Spec.PodCIDRs) > 1 {
			if dual, err := netutils.IsDualStackCIDRStrings(node.Spec.PodCIDRs); err != nil || !dual || len(node.Spec.PodCIDRs) > 2 {
				errs = append(errs, field.Invalid(p, node.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
			}
		}
		if node.Spec.PodCIDR != "" && node.Spec.PodCIDR != node.Spec.PodCIDRs[0] {
			errs = append(errs, field.Invalid(field.NewPath("spec", "podCIDR"), node.Spec.PodCIDR, "must match the first entry of `podCIDRs`"))
		}
	}
	return errs
}

func validateNodeResources(node *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	for name, q := range node.Status.Capacity {
		errs = append(errs, validateResourceQuantity(name, q, field.NewPath("status", "capacity").Key(string(name)))...)
	}
	for name, q := range node.Status.Allocatable {
		errs = append(errs, validateResourceQuantity(name, q, field.NewPath("status", "allocatable").Key(string(name)))...)
	}
	return errs
}

// validateNodeTaints checks each taint and that taints are unique by key
// and effect.
func validateNodeTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, t := range taints {
		p := fldPath.Index(i)
		errs = append(errs, metavalidation.ValidateLabelName(t.Key, p.Child("key"))...)
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		errs = append(errs, validateTaintEffect(t.Effect, false, p.Child("effect"))...)
		key := string(t.Effect) + "\x00" + t.Key
		if seen.Has(key) {
			dup := field.Duplicate(p, t)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
			continue
		}
		seen.Insert(key)
	}
	return errs
}

// ValidateNodeUpdate validates a Node update: pod CIDRs may only be set
// once, providerID may not change or be cleared once set, the external ID
// is immutable, addresses must be unique.
func ValidateNodeUpdate(node, oldNode *corev1.Node) field.ErrorList {
	errs := validateMetaUpdate(&node.ObjectMeta, &oldNode.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateNodeResources(node)...)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range node.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		seen[a] = true
	}
	const cidrMsg = "node updates may not change podCIDR except from \"\" to valid"
	if len(oldNode.Spec.PodCIDRs) > 0 && !sameStrings(oldNode.Spec.PodCIDRs, node.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), cidrMsg))
	}
	if oldNode.Spec.PodCIDR != "" && node.Spec.PodCIDR != oldNode.Spec.PodCIDR {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDR"), cidrMsg))
	}
	pidPath := field.NewPath("spec", "providerID")
	if oldNode.Spec.ProviderID != "" {
		if node.Spec.ProviderID == "" {
			errs = append(errs, field.Invalid(pidPath, nil, "field cannot be cleared once set"))
		} else if node.Spec.ProviderID != oldNode.Spec.ProviderID {
			errs = append(errs, field.Invalid(pidPath, nil, "field cannot be modified once set"))
		}
	}
	errs = append(errs, validateNodeTaints(node.Spec.Taints, field.NewPath("spec", "taints"))...)
	if node.Spec.DoNotUseExternalID != oldNode.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return errs
}

// Namespace.

// ValidateNamespace validates a Namespace on create (DNS label name, valid
// finalizer names).
func ValidateNamespace(ns *corev1.Namespace) field.ErrorList {
	errs := validateMeta(&ns.ObjectMeta, false, apivalidation.ValidateNamespaceName, field.NewPath("metadata"))
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateFinalizerName(name, fldPath)
	return append(errs, validateKubeFinalizerName(name, fldPath)...)
}

// ValidateNamespaceUpdate validates a Namespace update (metadata only; the
// registry keeps spec and status).
func ValidateNamespaceUpdate(ns, oldNs *corev1.Namespace) field.ErrorList {
	return validateMetaUpdate(&ns.ObjectMeta, &oldNs.ObjectMeta, field.NewPath("metadata"))
}

// ValidateNamespaceStatusUpdate requires phase Active for a live namespace
// and Terminating for one being deleted.
func ValidateNamespaceStatusUpdate(ns, oldNs *corev1.Namespace) field.ErrorList {
	errs := validateMetaUpdate(&ns.ObjectMeta, &oldNs.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			errs = append(errs, field.Invalid(p, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		errs = append(errs, field.Invalid(p, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return errs
}

// ValidateNamespaceFinalizeUpdate validates the finalizers written through
// the finalize subresource.
func ValidateNamespaceFinalizeUpdate(ns, oldNs *corev1.Namespace) field.ErrorList {
	errs := validateMetaUpdate(&ns.ObjectMeta, &oldNs.ObjectMeta, field.NewPath("metadata"))
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

// ConfigMap and Secret.

func validateDataKeys[V any](data map[string]V, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for key := range data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(fldPath.Key(key), key, msg))
		}
	}
	return errs
}

// ValidateConfigMap validates a ConfigMap: key names, no key in both data
// and binaryData, total size at most 1 MiB.
func ValidateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	errs := validateMeta(&cm.ObjectMeta, true, nameIsSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateDataKeys(cm.Data, field.NewPath("data"))...)
	errs = append(errs, validateDataKeys(cm.BinaryData, field.NewPath("binaryData"))...)
	size := 0
	for k, v := range cm.Data {
		if _, dup := cm.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, "duplicate of key present in binaryData"))
		}
		size += len(v)
	}
	for _, v := range cm.BinaryData {
		size += len(v)
	}
	if size > maxConfigSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxConfigSize))
	}
	return errs
}

// ValidateConfigMapUpdate validates a ConfigMap update; once immutable is
// true, data, binaryData and immutable itself are frozen.
func ValidateConfigMapUpdate(cm, oldCM *corev1.ConfigMap) field.ErrorList {
	errs := validateMetaUpdate(&cm.ObjectMeta, &oldCM.ObjectMeta, field.NewPath("metadata"))
	if oldCM.Immutable != nil && *oldCM.Immutable {
		const msg = "field is immutable when `immutable` is set"
		if cm.Immutable == nil || !*cm.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
		}
		if !reflect.DeepEqual(cm.Data, oldCM.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), msg))
		}
		if !reflect.DeepEqual(cm.BinaryData, oldCM.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), msg))
		}
	}
	return append(errs, ValidateConfigMap(cm)...)
}

// ValidateSecret validates a Secret: key names, total size, and the keys
// each well-known type requires.
func ValidateSecret(s *corev1.Secret) field.ErrorList {
	errs := validateMeta(&s.ObjectMeta, true, nameIsSubdomain, field.NewPath("metadata"))
	dataPath := field.NewPath("data")
	errs = append(errs, validateDataKeys(s.Data, dataPath)...)
	size := 0
	for _, v := range s.Data {
		size += len(v)
	}
	if size > maxConfigSize {
		errs = append(errs, field.TooLong(dataPath, "", maxConfigSize))
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		errs = append(errs, requireJSONKey(s.Data, corev1.DockerConfigKey, dataPath)...)
	case corev1.SecretTypeDockerConfigJson:
		errs = append(errs, requireJSONKey(s.Data, corev1.DockerConfigJsonKey, dataPath)...)
	case corev1.SecretTypeBasicAuth:
		_, hasUser := s.Data[corev1.BasicAuthUsernameKey]
		_, hasPassword := s.Data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPassword {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		if _, ok := s.Data[corev1.TLSCertKey]; !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSCertKey), ""))
		}
		if _, ok := s.Data[corev1.TLSPrivateKeyKey]; !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSPrivateKeyKey), ""))
		}
	}
	return errs
}

func requireJSONKey(data map[string][]byte, key string, dataPath *field.Path) field.ErrorList {
	b, ok := data[key]
	if !ok {
		return field.ErrorList{field.Required(dataPath.Key(key), "")}
	}
	if err := json.Unmarshal(b, &map[string]interface{}{}); err != nil {
		return field.ErrorList{field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error())}
	}
	return nil
}

// ValidateSecretUpdate validates a Secret update: the type never changes,
// and once immutable is true data and immutable are frozen.
func ValidateSecretUpdate(s, oldS *corev1.Secret) field.ErrorList {
	errs := validateMetaUpdate(&s.ObjectMeta, &oldS.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, immutable(s.Type, oldS.Type, field.NewPath("type"))...)
	if oldS.Immutable != nil && *oldS.Immutable {
		const msg = "field is immutable when `immutable` is set"
		if s.Immutable == nil || !*s.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
		}
		if !reflect.DeepEqual(s.Data, oldS.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), msg))
		}
	}
	return append(errs, ValidateSecret(s)...)
}

// ServiceAccount.

// ValidateServiceAccount validates a ServiceAccount (metadata only).
func ValidateServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	return validateMeta(&sa.ObjectMeta, true, apivalidation.ValidateServiceAccountName, field.NewPath("metadata"))
}

// ValidateServiceAccountUpdate validates a ServiceAccount update.
func ValidateServiceAccountUpdate(sa, oldSA *corev1.ServiceAccount) field.ErrorList {
	errs := validateMetaUpdate(&sa.ObjectMeta, &oldSA.ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidateServiceAccount(sa)...)
}

// Event.

const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// ValidateEvent validates a core/v1 Event with upstream's rules for that API
// version: namespaces must agree with the involved object, and events that
// carry eventTime (new-style) need reportingComponent, reportingInstance,
// action and reason within length limits. Metadata is checked too.
func ValidateEvent(ev *corev1.Event) field.ErrorList {
	errs := validateMeta(&ev.ObjectMeta, true, nameIsSubdomain, field.NewPath("metadata"))
	return append(errs, validateEventFields(ev)...)
}

func validateEventFields(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	const nsMsg = "does not match event.namespace"
	if ev.EventTime.IsZero() {
		if ev.InvolvedObject.Namespace == "" {
			if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, nsMsg))
			}
		} else if ev.Namespace != ev.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, nsMsg))
		}
		return errs
	}
	if ev.InvolvedObject.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, nsMsg))
	}
	rcPath := field.NewPath("reportingComponent")
	if ev.ReportingController == "" {
		errs = append(errs, field.Required(rcPath, ""))
	}
	errs = append(errs, qualifiedName(ev.ReportingController, rcPath)...)
	errs = append(errs, requiredWithLimit(ev.ReportingInstance, reportingInstanceLengthLimit, field.NewPath("reportingInstance"))...)
	errs = append(errs, requiredWithLimit(ev.Action, actionLengthLimit, field.NewPath("action"))...)
	errs = append(errs, requiredWithLimit(ev.Reason, reasonLengthLimit, field.NewPath("reason"))...)
	if len(ev.Message) > noteLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
	}
	return errs
}

func requiredWithLimit(value string, limit int, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if value == "" {
		errs = append(errs, field.Required(fldPath, ""))
	}
	if len(value) > limit {
		errs = append(errs, field.Invalid(fldPath, "", fmt.Sprintf("can have at most %v characters", limit)))
	}
	return errs
}

// ValidateEventUpdate validates a core/v1 Event update. Like upstream for
// this API version, event fields may change (events are aggregated by
// rewriting them); only metadata update rules and the field checks apply.
func ValidateEventUpdate(ev, oldEv *corev1.Event) field.ErrorList {
	errs := validateMetaUpdate(&ev.ObjectMeta, &oldEv.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateEventFields(ev)...)
}

// Endpoints.

// ValidateEndpoints validates Endpoints on create.
func ValidateEndpoints(ep *corev1.Endpoints) field.ErrorList {
	return validateEndpoints(ep, nil)
}

// ValidateEndpointsUpdate validates an Endpoints update. Subsets that did
// not change are not re-validated, so data accepted by older rules stays
// writable.
func ValidateEndpointsUpdate(ep, oldEp *corev1.Endpoints) field.ErrorList {
	errs := validateMetaUpdate(&ep.ObjectMeta, &oldEp.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateEndpoints(ep, oldEp)...)
}

func validateEndpoints(ep, oldEp *corev1.Endpoints) field.ErrorList {
	errs := validateMeta(&ep.ObjectMeta, true, nameIsSubdomain, field.NewPath("metadata"))
	subsetErrs := validateEndpointSubsets(ep.Subsets, field.NewPath("subsets"))
	if len(subsetErrs) != 0 && oldEp != nil && equality.Semantic.DeepEqual(oldEp.Subsets, ep.Subsets) {
		subsetErrs = nil
	}
	return append(errs, subsetErrs...)
}

func validateEndpointSubsets(subsets []corev1.EndpointSubset, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range subsets {
		ss := &subsets[i]
		p := fldPath.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], p.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], p.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, p.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	ipErrs := validIP(fldPath.Child("ip"), a.IP, nil)
	errs := ipErrs
	if a.Hostname != "" {
		errs = append(errs, dnsLabel(a.Hostname, fldPath.Child("hostname"))...)
	}
	if a.NodeName != nil {
		errs = append(errs, nameErrs(nameIsSubdomain, *a.NodeName, fldPath.Child("nodeName"))...)
	}
	if len(ipErrs) == 0 {
		errs = append(errs, validateEndpointIP(a.IP, fldPath.Child("ip"))...)
	}
	return errs
}

func validateEndpointPort(port *corev1.EndpointPort, requireName bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && port.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if port.Name != "" {
		errs = append(errs, dnsLabel(port.Name, fldPath.Child("name"))...)
	}
	for _, msg := range validation.IsValidPortNum(int(port.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), port.Port, msg))
	}
	errs = append(errs, validateProtocol(port.Protocol, fldPath.Child("protocol"))...)
	if port.AppProtocol != nil {
		errs = append(errs, qualifiedName(*port.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return errs
}

// PersistentVolume and PersistentVolumeClaim.

var (
	supportedAccessModes = sets.New(corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod)
	supportedReclaim     = sets.New(corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain)
	supportedVolumeModes = sets.New(corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)
)

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, requiredMsg string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(fldPath, requiredMsg))
	}
	var rwop, other bool
	for _, m := range modes {
		if !supportedAccessModes.Has(m) {
			errs = append(errs, field.NotSupported(fldPath, m, sets.List(supportedAccessModes)))
			continue
		}
		if m == corev1.ReadWriteOncePod {
			rwop = true
		} else {
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

// persistentVolumeSourceKinds lists the JSON names of the set members.
func persistentVolumeSourceKinds(s *corev1.PersistentVolumeSource) []string {
	var kinds []string
	add := func(set bool, name string) {
		if set {
			kinds = append(kinds, name)
		}
	}
	add(s.GCEPersistentDisk != nil, "gcePersistentDisk")
	add(s.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	add(s.HostPath != nil, "hostPath")
	add(s.Glusterfs != nil, "glusterfs")
	add(s.NFS != nil, "nfs")
	add(s.RBD != nil, "rbd")
	add(s.ISCSI != nil, "iscsi")
	add(s.Cinder != nil, "cinder")
	add(s.CephFS != nil, "cephfs")
	add(s.FC != nil, "fc")
	add(s.Flocker != nil, "flocker")
	add(s.FlexVolume != nil, "flexVolume")
	add(s.AzureFile != nil, "azureFile")
	add(s.VsphereVolume != nil, "vsphereVolume")
	add(s.Quobyte != nil, "quobyte")
	add(s.AzureDisk != nil, "azureDisk")
	add(s.PhotonPersistentDisk != nil, "photonPersistentDisk")
	add(s.PortworxVolume != nil, "portworxVolume")
	add(s.ScaleIO != nil, "scaleIO")
	add(s.Local != nil, "local")
	add(s.StorageOS != nil, "storageos")
	add(s.CSI != nil, "csi")
	return kinds
}

// ValidatePersistentVolume validates a PersistentVolume on create.
func ValidatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	errs := validateMeta(&pv.ObjectMeta, false, nameIsSubdomain, field.NewPath("metadata"))
	return append(errs, validatePVSpec(&pv.Spec, field.NewPath("spec"))...)
}

func validatePVSpec(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	errs := validateAccessModes(spec.AccessModes, "", fldPath.Child("accessModes"))
	capPath := fldPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		errs = append(errs, field.Required(capPath, ""))
	}
	if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		errs = append(errs, field.NotSupported(capPath, spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for name, q := range spec.Capacity {
		errs = append(errs, positiveQuantity(q, capPath.Key(string(name)))...)
	}
	if rp := spec.PersistentVolumeReclaimPolicy; rp != "" && !supportedReclaim.Has(rp) {
		errs = append(errs, field.NotSupported(fldPath.Child("persistentVolumeReclaimPolicy"), rp, sets.List(supportedReclaim)))
	}
	if na := spec.NodeAffinity; na != nil {
		if na.Required == nil {
			errs = append(errs, field.Required(fldPath.Child("nodeAffinity", "required"), "must specify required node constraints"))
		} else {
			errs = append(errs, validateNodeSelector(na.Required, false, fldPath.Child("nodeAffinity", "required"))...)
		}
	}
	kinds := persistentVolumeSourceKinds(&spec.PersistentVolumeSource)
	if len(kinds) == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a volume type"))
	} else {
		for _, extra := range kinds[1:] {
			errs = append(errs, field.Forbidden(fldPath.Child(extra), msgOneVolumeType))
		}
		p := fldPath.Child(kinds[0])
		src := &spec.PersistentVolumeSource
		switch kinds[0] {
		case "hostPath":
			errs = append(errs, validateHostPath(src.HostPath, p)...)
		case "nfs":
			errs = append(errs, validateNFS(src.NFS.Server, src.NFS.Path, p)...)
		case "local":
			if src.Local.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			} else {
				errs = append(errs, noBacksteps(src.Local.Path, p.Child("path"))...)
			}
			if spec.NodeAffinity == nil {
				errs = append(errs, field.Required(fldPath.Child("nodeAffinity"), "Local volume requires node affinity"))
			}
		case "csi":
			if src.CSI.Driver == "" {
				errs = append(errs, field.Required(p.Child("driver"), ""))
			} else {
				errs = append(errs, validateCSIDriverName(src.CSI.Driver, p.Child("driver"))...)
			}
			if src.CSI.VolumeHandle == "" {
				errs = append(errs, field.Required(p.Child("volumeHandle"), ""))
			}
		}
	}
	if spec.HostPath != nil && path.Clean(spec.HostPath.Path) == "/" && spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		errs = append(errs, field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	if spec.StorageClassName != "" {
		errs = append(errs, nameErrs(nameIsSubdomain, spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if vm := spec.VolumeMode; vm != nil && !supportedVolumeModes.Has(*vm) {
		errs = append(errs, field.NotSupported(fldPath.Child("volumeMode"), *vm, sets.List(supportedVolumeModes)))
	}
	if vac := spec.VolumeAttributesClassName; vac != nil {
		if *vac == "" {
			errs = append(errs, field.Required(fldPath.Child("volumeAttributesClassName"), "an empty string is disallowed"))
		} else {
			errs = append(errs, nameErrs(nameIsSubdomain, *vac, fldPath.Child("volumeAttributesClassName"))...)
		}
		if spec.CSI == nil {
			errs = append(errs, field.Required(fldPath.Child("csi"), "has to be specified when using volumeAttributesClassName"))
		}
	}
	return errs
}

// ValidatePersistentVolumeUpdate validates a PersistentVolume update: the
// volume source and volumeMode are immutable.
func ValidatePersistentVolumeUpdate(pv, oldPV *corev1.PersistentVolume) field.ErrorList {
	errs := validateMetaUpdate(&pv.ObjectMeta, &oldPV.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validatePVSpec(&pv.Spec, field.NewPath("spec"))...)
	newSrc := pv.Spec.PersistentVolumeSource
	// A CSI controllerExpandSecretRef may be added later.
	if oldPV.Spec.CSI != nil && oldPV.Spec.CSI.ControllerExpandSecretRef == nil && newSrc.CSI != nil && newSrc.CSI.ControllerExpandSecretRef != nil {
		csi := *newSrc.CSI
		csi.ControllerExpandSecretRef = nil
		newSrc.CSI = &csi
	}
	if !equality.Semantic.DeepEqual(newSrc, oldPV.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation"))
	}
	errs = append(errs, immutable(pv.Spec.VolumeMode, oldPV.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if oldPV.Spec.VolumeAttributesClassName != nil && pv.Spec.VolumeAttributesClassName == nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
	}
	return errs
}

// ValidatePersistentVolumeStatusUpdate validates a PersistentVolume status update.
func ValidatePersistentVolumeStatusUpdate(pv, oldPV *corev1.PersistentVolume) field.ErrorList {
	errs := validateMetaUpdate(&pv.ObjectMeta, &oldPV.ObjectMeta, field.NewPath("metadata"))
	if pv.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	return errs
}

// ValidatePersistentVolumeClaim validates a PersistentVolumeClaim on create.
func ValidatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validateMeta(&pvc.ObjectMeta, true, nameIsSubdomain, field.NewPath("metadata"))
	return append(errs, validatePVCSpec(&pvc.Spec, field.NewPath("spec"))...)
}

func validatePVCSpec(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	errs := validateAccessModes(spec.AccessModes, "at least 1 access mode is required", fldPath.Child("accessModes"))
	if spec.Selector != nil {
		errs = append(errs, metavalidation.ValidateLabelSelector(spec.Selector, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	storagePath := fldPath.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if pErrs := positiveQuantity(q, storagePath); len(pErrs) > 0 {
		errs = append(errs, pErrs...)
	}
	if sc := spec.StorageClassName; sc != nil && *sc != "" {
		errs = append(errs, nameErrs(nameIsSubdomain, *sc, fldPath.Child("storageClassName"))...)
	}
	if vm := spec.VolumeMode; vm != nil && !supportedVolumeModes.Has(*vm) {
		errs = append(errs, field.NotSupported(fldPath.Child("volumeMode"), *vm, sets.List(supportedVolumeModes)))
	}
	if ds := spec.DataSource; ds != nil {
		errs = append(errs, validateDataSourceRef(ds.Name, ds.Kind, ds.APIGroup, nil, fldPath.Child("dataSource"))...)
	}
	if dr := spec.DataSourceRef; dr != nil {
		errs = append(errs, validateDataSourceRef(dr.Name, dr.Kind, dr.APIGroup, dr.Namespace, fldPath.Child("dataSourceRef"))...)
	}
	if dr := spec.DataSourceRef; dr != nil && dr.Namespace != nil && *dr.Namespace != "" {
		if spec.DataSource != nil {
			errs = append(errs, field.Invalid(fldPath, fldPath.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	} else if ds := spec.DataSource; ds != nil && dr != nil {
		if !ptrStringEqual(ds.APIGroup, dr.APIGroup) || ds.Kind != dr.Kind || ds.Name != dr.Name {
			errs = append(errs, field.Invalid(fldPath, fldPath.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	if vac := spec.VolumeAttributesClassName; vac != nil && *vac != "" {
		errs = append(errs, nameErrs(nameIsSubdomain, *vac, fldPath.Child("volumeAttributesClassName"))...)
	}
	return errs
}

func ptrStringEqual(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func validateDataSourceRef(name, kind string, apiGroup, namespace *string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	if kind == "" {
		errs = append(errs, field.Required(fldPath.Child("kind"), ""))
	}
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		errs = append(errs, field.Invalid(fldPath, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" {
		errs = append(errs, dnsSubdomain(group, fldPath.Child("apiGroup"))...)
	}
	if namespace != nil && *namespace != "" {
		errs = append(errs, nameErrs(apivalidation.ValidateNamespaceName, *namespace, fldPath.Child("namespace"))...)
	}
	return errs
}

// validateTemplateMeta checks the metadata of an embedded object template:
// labels and annotations only.
func validateTemplateMeta(meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateAnnotations(meta.Annotations, fldPath.Child("annotations"))
	errs = append(errs, metavalidation.ValidateLabels(meta.Labels, fldPath.Child("labels"))...)
	rest := meta.DeepCopy()
	rest.Labels, rest.Annotations = nil, nil
	if !equality.Semantic.DeepEqual(*rest, metav1.ObjectMeta{}) {
		errs = append(errs, field.Forbidden(fldPath, "only labels and annotations may be set"))
	}
	return errs
}

// ValidatePersistentVolumeClaimUpdate validates a claim update: the spec is
// immutable except volumeName (set once), the storage request (may grow;
// for bound claims) and volumeAttributesClassName; volumeMode is immutable.
func ValidatePersistentVolumeClaimUpdate(pvc, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validateMetaUpdate(&pvc.ObjectMeta, &oldPVC.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, ValidatePersistentVolumeClaim(pvc)...)
	newSpec, oldSpec := pvc.Spec.DeepCopy(), oldPVC.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}
	scAnnotation := corev1.BetaStorageClassAnnotation
	oldAnn, oldHasAnn := oldPVC.Annotations[scAnnotation]
	if oldSpec.StorageClassName == nil && newSpec.StorageClassName != nil && (!oldHasAnn || *newSpec.StorageClassName == oldAnn) {
		// Moving from the beta annotation (or nothing) to the field is allowed once.
		oldSpec.StorageClassName = newSpec.StorageClassName
	} else if pvc.Annotations[scAnnotation] != oldAnn {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations", scAnnotation), pvc.Annotations[scAnnotation], msgImmutable))
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		if newSpec.Resources.Requests != nil {
			if q, ok := oldSpec.Resources.Requests[corev1.ResourceStorage]; ok {
				newSpec.Resources.Requests[corev1.ResourceStorage] = q
			} else {
				delete(newSpec.Resources.Requests, corev1.ResourceStorage)
			}
		}
		newSpec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
	}
	if !equality.Semantic.DeepEqual(newSpec, oldSpec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
	}
	oldSize := oldPVC.Spec.Resources.Requests[corev1.ResourceStorage]
	newSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	statusSize := oldPVC.Status.Capacity[corev1.ResourceStorage]
	// RecoverVolumeExpansionFailure is on: a request may shrink back down to,
	// but not below or at, the recorded capacity.
	if newSize.Cmp(oldSize) < 0 && newSize.Cmp(statusSize) <= 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
	}
	errs = append(errs, immutable(pvc.Spec.VolumeMode, oldPVC.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if oldPVC.Status.CurrentVolumeAttributesClassName != nil && !ptrStringEqual(oldPVC.Spec.VolumeAttributesClassName, pvc.Spec.VolumeAttributesClassName) {
		p := field.NewPath("spec", "volumeAttributesClassName")
		if pvc.Spec.VolumeAttributesClassName == nil {
			errs = append(errs, field.Forbidden(p, "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"))
		} else if *pvc.Spec.VolumeAttributesClassName == "" {
			errs = append(errs, field.Forbidden(p, "update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil"))
		}
	}
	return errs
}

// ValidatePersistentVolumeClaimStatusUpdate validates a claim status update.
func ValidatePersistentVolumeClaimStatusUpdate(pvc, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validateMetaUpdate(&pvc.ObjectMeta, &oldPVC.ObjectMeta, field.NewPath("metadata"))
	if pvc.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	if len(pvc.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(field.NewPath("Spec", "accessModes"), ""))
	}
	for name, q := range pvc.Status.Capacity {
		errs = append(errs, nonNegativeQuantity(q, field.NewPath("status", "capacity").Key(string(name)))...)
	}
	allocPath := field.NewPath("status", "allocatedResources")
	for name, q := range pvc.Status.AllocatedResources {
		if kErrs := validatePVCResourceKey(string(name), allocPath); len(kErrs) > 0 {
			errs = append(errs, kErrs...)
			continue
		}
		errs = append(errs, nonNegativeQuantity(q, allocPath.Key(string(name)))...)
	}
	resizePath := field.NewPath("status", "allocatedResourceStatuses")
	resizeStates := []corev1.ClaimResourceStatus{
		corev1.PersistentVolumeClaimControllerResizeInProgress, corev1.PersistentVolumeClaimControllerResizeInfeasible,
		corev1.PersistentVolumeClaimNodeResizePending, corev1.PersistentVolumeClaimNodeResizeInProgress,
		corev1.PersistentVolumeClaimNodeResizeInfeasible,
	}
	for name, st := range pvc.Status.AllocatedResourceStatuses {
		errs = append(errs, validatePVCResourceKey(string(name), resizePath)...)
		if !contains(resizeStates, st) {
			errs = append(errs, field.NotSupported(resizePath, st, resizeStates))
		}
	}
	return errs
}

func validatePVCResourceKey(key string, fldPath *field.Path) field.ErrorList {
	errs := qualifiedName(key, fldPath)
	if len(errs) == 0 && isNativeResource(corev1.ResourceName(key)) && corev1.ResourceName(key) != corev1.ResourceStorage {
		errs = append(errs, field.NotSupported(fldPath, key, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	return errs
}

// ResourceQuota.

var (
	standardQuotaScopes = sets.New(
		corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
		corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeVolumeAttributesClass,
		corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
	)
	podCountQuota   = sets.New(corev1.ResourcePods)
	podComputeQuota = sets.New(corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceLimitsCPU,
		corev1.ResourceLimitsMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory)
	pvcQuota = sets.New(corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage)
)

func scopeAppliesTo(scope corev1.ResourceQuotaScope, name corev1.ResourceName) bool {
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podCountQuota.Has(name) || podComputeQuota.Has(name)
	case corev1.ResourceQuotaScopeBestEffort:
		return podCountQuota.Has(name)
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return pvcQuota.Has(name)
	}
	return true
}

func conflictingScopes(scopes sets.Set[corev1.ResourceQuotaScope]) bool {
	return scopes.HasAll(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort) ||
		scopes.HasAll(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating)
}

// ValidateResourceQuota validates a ResourceQuota on create.
func ValidateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	errs := validateMeta(&q.ObjectMeta, true, nameIsSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateQuotaSpec(&q.Spec, field.NewPath("spec"))...)
	return append(errs, validateQuotaStatus(&q.Status, field.NewPath("status"))...)
}

func validateQuotaList(rl corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range rl {
		p := fldPath.Key(string(name))
		errs = append(errs, validateQuotaResourceName(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
	}
	return errs
}

func validateQuotaStatus(st *corev1.ResourceQuotaStatus, fldPath *field.Path) field.ErrorList {
	errs := validateQuotaList(st.Hard, fldPath.Child("hard"))
	return append(errs, validateQuotaList(st.Used, fldPath.Child("used"))...)
}

func validateQuotaSpec(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	errs := validateQuotaList(spec.Hard, fldPath.Child("hard"))
	hard := sets.KeySet(spec.Hard)
	if len(spec.Scopes) > 0 {
		p := fldPath.Child("scopes")
		scopes := sets.New[corev1.ResourceQuotaScope]()
		for _, s := range spec.Scopes {
			if !standardQuotaScopes.Has(s) {
				errs = append(errs, field.Invalid(p, spec.Scopes, "unsupported scope"))
			}
			for _, name := range sets.List(hard) {
				if standardQuotaResources.Has(name) && !scopeAppliesTo(s, name) {
					errs = append(errs, field.Invalid(p, spec.Scopes, "unsupported scope applied to resource"))
				}
			}
			scopes.Insert(s)
		}
		if conflictingScopes(scopes) {
			errs = append(errs, field.Invalid(p, spec.Scopes, "conflicting scopes"))
		}
	}
	if spec.ScopeSelector != nil {
		p := fldPath.Child("scopeSelector", "matchExpressions")
		scopes := sets.New[corev1.ResourceQuotaScope]()
		for _, req := range spec.ScopeSelector.MatchExpressions {
			if !standardQuotaScopes.Has(req.ScopeName) {
				errs = append(errs, field.Invalid(p.Child("scopeName"), req.ScopeName, "unsupported scope"))
			}
			for _, name := range sets.List(hard) {
				if standardQuotaResources.Has(name) && !scopeAppliesTo(req.ScopeName, name) {
					errs = append(errs, field.Invalid(p, spec.ScopeSelector, "unsupported scope applied to resource"))
				}
			}
			switch req.ScopeName {
			case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
				corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
				if req.Operator != corev1.ScopeSelectorOpExists {
					errs = append(errs, field.Invalid(p.Child("operator"), req.Operator,
						"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
				}
			}
			switch req.Operator {
			case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
				if len(req.Values) == 0 {
					errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
				}
				errs = append(errs, validateScopeSelectorValues(req.Values, p.Child("values"))...)
			case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
				if len(req.Values) != 0 {
					errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
				}
			default:
				errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
			}
			scopes.Insert(req.ScopeName)
		}
		if conflictingScopes(scopes) {
			errs = append(errs, field.Invalid(p, spec.Scopes, "conflicting scopes"))
		}
	}
	return errs
}

// validateScopeSelectorValues checks that each value of an In or NotIn
// scope requirement is a valid label value: quota evaluation matches the
// requirement as a label selector, which refuses other values, so a quota
// holding one could never be evaluated. Upstream's ValidateResourceQuota
// lets such a value through, and then every object its quota is checked
// against fails with a 500; k1s refuses it here.
func validateScopeSelectorValues(values []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range values {
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(fldPath.Index(i), v, msg))
		}
	}
	return errs
}

// QuotaScopeErrors lists what in q's scopes and scope selector quota
// evaluation cannot match (an unknown scope or operator, a value that is
// no label value): a quota stored before k1s refused it, or written to
// etcd directly.
func QuotaScopeErrors(q *corev1.ResourceQuota) field.ErrorList {
	var errs field.ErrorList
	for _, err := range validateQuotaSpec(&q.Spec, field.NewPath("spec")) {
		if strings.HasPrefix(err.Field, "spec.scope") {
			errs = append(errs, err)
		}
	}
	return errs
}

// ValidateResourceQuotaUpdate validates a quota update; scopes are immutable.
func ValidateResourceQuotaUpdate(q, oldQ *corev1.ResourceQuota) field.ErrorList {
	errs := validateMetaUpdate(&q.ObjectMeta, &oldQ.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateQuotaSpec(&q.Spec, field.NewPath("spec"))...)
	if !sets.New(q.Spec.Scopes...).Equal(sets.New(oldQ.Spec.Scopes...)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "scopes"), q.Spec.Scopes, msgImmutable))
	}
	return errs
}

// ValidateResourceQuotaStatusUpdate validates a quota status update.
func ValidateResourceQuotaStatusUpdate(q, oldQ *corev1.ResourceQuota) field.ErrorList {
	errs := validateMetaUpdate(&q.ObjectMeta, &oldQ.ObjectMeta, field.NewPath("metadata"))
	if q.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	return append(errs, validateQuotaStatus(&q.Status, field.NewPath("status"))...)
}

// LimitRange.

var standardLimitTypes = sets.New(corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim)

// ValidateLimitRange validates a LimitRange: types unique and known,
// resource names, and min <= defaultRequest <= default <= max, ratios.
func ValidateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	errs := validateMeta(&lr.ObjectMeta, true, nameIsSubdomain, field.NewPath("metadata"))
	limitsPath := field.NewPath("spec", "limits")
	types := sets.New[corev1.LimitType]()
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		p := limitsPath.Index(i)
		errs = append(errs, validateLimitType(item.Type, p.Child("type"))...)
		if types.Has(item.Type) {
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		types.Insert(item.Type)

		nameFn := validateResourceName
		if item.Type == corev1.LimitTypePod || item.Type == corev1.LimitTypeContainer {
			nameFn = validateContainerResourceName
		}
		keys := sets.New[corev1.ResourceName]()
		checkNames := func(rl corev1.ResourceList, child string) {
			for name := range rl {
				errs = append(errs, nameFn(name, p.Child(child).Key(string(name)))...)
				keys.Insert(name)
			}
		}
		checkNames(item.Max, "max")
		checkNames(item.Min, "min")
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			checkNames(item.Default, "default")
			checkNames(item.DefaultRequest, "defaultRequest")
		}
		if item.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := item.Min[corev1.ResourceStorage]
			_, hasMax := item.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		checkNames(item.MaxLimitRequestRatio, "maxLimitRequestRatio")
		for _, k := range sets.List(keys) {
			errs = append(errs, validateLimitBounds(item, k, p)...)
		}
	}
	return errs
}

func validateLimitType(t corev1.LimitType, fldPath *field.Path) field.ErrorList {
	errs := qualifiedName(string(t), fldPath)
	if len(errs) == 0 && !strings.Contains(string(t), "/") && !standardLimitTypes.Has(t) {
		errs = append(errs, field.Invalid(fldPath, t, "must be a standard limit type or fully qualified"))
	}
	return errs
}

func validateLimitBounds(item *corev1.LimitRangeItem, k corev1.ResourceName, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	key := string(k)
	minQ, hasMin := item.Min[k]
	maxQ, hasMax := item.Max[k]
	defQ, hasDef := item.Default[k]
	reqQ, hasReq := item.DefaultRequest[k]
	ratio, hasRatio := item.MaxLimitRequestRatio[k]
	if item.Type == corev1.LimitTypePod {
		hasDef, hasReq = false, false
	}
	if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("min").Key(key), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
	}
	if hasReq && hasMin && minQ.Cmp(reqQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), reqQ, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), reqQ.String())))
	}
	if hasReq && hasMax && reqQ.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), reqQ, fmt.Sprintf("default request value %s is greater than max value %s", reqQ.String(), maxQ.String())))
	}
	if hasReq && hasDef && reqQ.Cmp(defQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), reqQ, fmt.Sprintf("default request value %s is greater than default limit value %s", reqQ.String(), defQ.String())))
	}
	if hasDef && hasMin && minQ.Cmp(defQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("default").Key(key), minQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), defQ.String())))
	}
	if hasDef && hasMax && defQ.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("default").Key(key), maxQ, fmt.Sprintf("default value %s is greater than max value %s", defQ.String(), maxQ.String())))
	}
	if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
		errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
	}
	if hasRatio && hasMin && hasMax && minQ.Sign() > 0 {
		limit := float64(maxQ.MilliValue()) / float64(minQ.MilliValue())
		if float64(ratio.MilliValue())/1000 > limit {
			errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), limit)))
		}
	}
	if !isOvercommitAllowed(k) && hasDef && hasReq && defQ.Cmp(reqQ) != 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), reqQ, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", defQ.String(), reqQ.String(), key)))
	}
	return errs
}

// ValidateLimitRangeUpdate validates a LimitRange update.
func ValidateLimitRangeUpdate(lr, oldLR *corev1.LimitRange) field.ErrorList {
	errs := validateMetaUpdate(&lr.ObjectMeta, &oldLR.ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidateLimitRange(lr)...)
}

// ReplicationController.

// ValidateReplicationController validates a ReplicationController on create.
func ValidateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	errs := validateMeta(&rc.ObjectMeta, true, nameIsSubdomain, field.NewPath("metadata"))
	return append(errs, validateRCSpec(&rc.Spec, field.NewPath("spec"))...)
}

// ValidateReplicationControllerUpdate validates a ReplicationController update.
func ValidateReplicationControllerUpdate(rc, oldRC *corev1.ReplicationController) field.ErrorList {
	errs := validateMetaUpdate(&rc.ObjectMeta, &oldRC.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateRCSpec(&rc.Spec, field.NewPath("spec"))...)
}

// ValidateReplicationControllerStatusUpdate validates the replica counters of
// a status update.
func ValidateReplicationControllerStatusUpdate(rc, oldRC *corev1.ReplicationController) field.ErrorList {
	errs := validateMetaUpdate(&rc.ObjectMeta, &oldRC.ObjectMeta, field.NewPath("metadata"))
	st, p := rc.Status, field.NewPath("status")
	errs = append(errs, nonNegative(int64(st.Replicas), p.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(st.FullyLabeledReplicas), p.Child("fullyLabeledReplicas"))...)
	errs = append(errs, nonNegative(int64(st.ReadyReplicas), p.Child("readyReplicas"))...)
	errs = append(errs, nonNegative(int64(st.AvailableReplicas), p.Child("availableReplicas"))...)
	errs = append(errs, nonNegative(st.ObservedGeneration, p.Child("observedGeneration"))...)
	const msg = "cannot be greater than status.replicas"
	if st.FullyLabeledReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("fullyLabeledReplicas"), st.FullyLabeledReplicas, msg))
	}
	if st.ReadyReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), st.ReadyReplicas, msg))
	}
	if st.AvailableReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, msg))
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}

func validateRCSpec(spec *corev1.ReplicationControllerSpec, fldPath *field.Path) field.ErrorList {
	errs := nonNegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))
	selector := labels.Set(spec.Selector).AsSelector()
	if selector.Empty() {
		errs = append(errs, field.Required(fldPath.Child("selector"), ""))
	}
	if spec.Replicas == nil {
		errs = append(errs, field.Required(fldPath.Child("replicas"), ""))
	} else {
		errs = append(errs, nonNegative(int64(*spec.Replicas), fldPath.Child("replicas"))...)
	}
	tp := fldPath.Child("template")
	t := spec.Template
	if t == nil {
		return append(errs, field.Required(tp, ""))
	}
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, ValidatePodTemplateSpec(t, tp)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tp.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicationController is not Supported"))
	}
	return errs
}
