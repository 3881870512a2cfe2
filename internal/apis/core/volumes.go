package core

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// volumeSourceKinds lists the JSON names of the members set in vs, in
// declaration order.
func volumeSourceKinds(vs *corev1.VolumeSource) []string {
	var kinds []string
	add := func(set bool, name string) {
		if set {
			kinds = append(kinds, name)
		}
	}
	add(vs.HostPath != nil, "hostPath")
	add(vs.EmptyDir != nil, "emptyDir")
	add(vs.GCEPersistentDisk != nil, "gcePersistentDisk")
	add(vs.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	add(vs.GitRepo != nil, "gitRepo")
	add(vs.Secret != nil, "secret")
	add(vs.NFS != nil, "nfs")
	add(vs.ISCSI != nil, "iscsi")
	add(vs.Glusterfs != nil, "glusterfs")
	add(vs.PersistentVolumeClaim != nil, "persistentVolumeClaim")
	add(vs.RBD != nil, "rbd")
	add(vs.FlexVolume != nil, "flexVolume")
	add(vs.Cinder != nil, "cinder")
	add(vs.CephFS != nil, "cephfs")
	add(vs.Flocker != nil, "flocker")
	add(vs.DownwardAPI != nil, "downwardAPI")
	add(vs.FC != nil, "fc")
	add(vs.AzureFile != nil, "azureFile")
	add(vs.ConfigMap != nil, "configMap")
	add(vs.VsphereVolume != nil, "vsphereVolume")
	add(vs.Quobyte != nil, "quobyte")
	add(vs.AzureDisk != nil, "azureDisk")
	add(vs.PhotonPersistentDisk != nil, "photonPersistentDisk")
	add(vs.Projected != nil, "projected")
	add(vs.PortworxVolume != nil, "portworxVolume")
	add(vs.ScaleIO != nil, "scaleIO")
	add(vs.StorageOS != nil, "storageos")
	add(vs.CSI != nil, "csi")
	add(vs.Ephemeral != nil, "ephemeral")
	add(vs.Image != nil, "image")
	return kinds
}

// validateVolumes checks pod volumes and returns the valid ones by name.
func validateVolumes(volumes []corev1.Volume, podMeta podMetaInfo, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	byName := map[string]corev1.VolumeSource{}
	names := sets.New[string]()
	ephemeralPVCs := sets.New[string]()
	if podMeta.name != "" {
		for _, v := range volumes {
			if v.Ephemeral != nil {
				ephemeralPVCs.Insert(podMeta.name + "-" + v.Name)
			}
		}
	}
	for i := range volumes {
		v := &volumes[i]
		idx := fldPath.Index(i)
		namePath := idx.Child("name")
		el := validateVolumeSource(&v.VolumeSource, idx, v.Name, podMeta)
		if v.Name == "" {
			el = append(el, field.Required(namePath, ""))
		} else {
			el = append(el, dnsLabel(v.Name, namePath)...)
		}
		if names.Has(v.Name) {
			el = append(el, field.Duplicate(namePath, v.Name))
		}
		if len(el) == 0 {
			names.Insert(v.Name)
			byName[v.Name] = v.VolumeSource
		} else {
			errs = append(errs, el...)
		}
		if v.PersistentVolumeClaim != nil && ephemeralPVCs.Has(v.PersistentVolumeClaim.ClaimName) {
			errs = append(errs, field.Invalid(idx.Child("persistentVolumeClaim", "claimName"), v.PersistentVolumeClaim.ClaimName,
				"must not reference a PVC that gets created for an ephemeral volume"))
		}
	}
	return byName, errs
}

// podMetaInfo is what volume validation needs from the pod's metadata; the
// zero value means "not a real pod" (a template).
type podMetaInfo struct{ name string }

func validateVolumeSource(vs *corev1.VolumeSource, fldPath *field.Path, volName string, podMeta podMetaInfo) field.ErrorList {
	kinds := volumeSourceKinds(vs)
	if len(kinds) == 0 {
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	}
	var errs field.ErrorList
	for _, extra := range kinds[1:] {
		errs = append(errs, field.Forbidden(fldPath.Child(extra), msgOneVolumeType))
	}
	p := fldPath.Child(kinds[0])
	switch kinds[0] {
	case "emptyDir":
		ed := vs.EmptyDir
		if ed.SizeLimit != nil && ed.SizeLimit.Sign() < 0 {
			errs = append(errs, field.Forbidden(p.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case "hostPath":
		errs = append(errs, validateHostPath(vs.HostPath, p)...)
	case "gitRepo":
		errs = append(errs, validateGitRepo(vs.GitRepo, p)...)
	case "secret":
		s := vs.Secret
		if s.SecretName == "" {
			errs = append(errs, field.Required(p.Child("secretName"), ""))
		}
		errs = append(errs, validateMode(s.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(s.Items, p.Child("items"))...)
	case "configMap":
		c := vs.ConfigMap
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		errs = append(errs, validateMode(c.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(c.Items, p.Child("items"))...)
	case "persistentVolumeClaim":
		if vs.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(p.Child("claimName"), ""))
		}
	case "nfs":
		errs = append(errs, validateNFS(vs.NFS.Server, vs.NFS.Path, p)...)
	case "downwardAPI":
		d := vs.DownwardAPI
		errs = append(errs, validateMode(d.DefaultMode, p.Child("defaultMode"))...)
		for i := range d.Items {
			errs = append(errs, validateDownwardAPIFile(&d.Items[i], p.Child("items").Index(i))...)
		}
	case "projected":
		errs = append(errs, validateProjected(vs.Projected, p)...)
	case "csi":
		if vs.CSI.Driver == "" {
			errs = append(errs, field.Required(p.Child("driver"), ""))
		} else {
			errs = append(errs, validateCSIDriverName(vs.CSI.Driver, p.Child("driver"))...)
		}
	case "ephemeral":
		e := vs.Ephemeral
		if e.VolumeClaimTemplate == nil {
			errs = append(errs, field.Required(p.Child("volumeClaimTemplate"), ""))
			break
		}
		tp := p.Child("volumeClaimTemplate")
		errs = append(errs, validateTemplateMeta(&e.VolumeClaimTemplate.ObjectMeta, tp.Child("metadata"))...)
		errs = append(errs, validatePVCSpec(&e.VolumeClaimTemplate.Spec, tp.Child("spec"))...)
		if podMeta.name != "" && volName != "" {
			pvcName := podMeta.name + "-" + volName
			for _, msg := range nameIsSubdomain(pvcName, false) {
				errs = append(errs, field.Invalid(fldPath.Child("name"), volName, fmt.Sprintf("PVC name %q: %v", pvcName, msg)))
			}
		}
	case "image":
		img := vs.Image
		if img.Reference == "" {
			errs = append(errs, field.Required(p.Child("reference"), ""))
		}
		errs = append(errs, validatePullPolicy(img.PullPolicy, p.Child("pullPolicy"))...)
	case "iscsi":
		if vs.ISCSI.TargetPortal == "" {
			errs = append(errs, field.Required(p.Child("targetPortal"), ""))
		}
		if vs.ISCSI.IQN == "" {
			errs = append(errs, field.Required(p.Child("iqn"), ""))
		}
	case "rbd":
		if len(vs.RBD.CephMonitors) == 0 {
			errs = append(errs, field.Required(p.Child("monitors"), ""))
		}
		if vs.RBD.RBDImage == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
	case "cephfs":
		if len(vs.CephFS.Monitors) == 0 {
			errs = append(errs, field.Required(p.Child("monitors"), ""))
		}
	case "flexVolume":
		if vs.FlexVolume.Driver == "" {
			errs = append(errs, field.Required(p.Child("driver"), ""))
		}
	}
	return errs
}

var supportedHostPathTypes = sets.New(
	corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
	corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket,
	corev1.HostPathCharDev, corev1.HostPathBlockDev,
)

func validateHostPath(hp *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if hp.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	errs := noBacksteps(hp.Path, fldPath.Child("path"))
	if hp.Type != nil && !supportedHostPathTypes.Has(*hp.Type) {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), *hp.Type, sets.List(supportedHostPathTypes)))
	}
	return errs
}

func validateGitRepo(g *corev1.GitRepoVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if g.Repository == "" {
		errs = append(errs, field.Required(fldPath.Child("repository"), ""))
	}
	errs = append(errs, noBacksteps(g.Directory, fldPath.Child("directory"))...)
	if strings.HasPrefix(g.Repository, "-") {
		errs = append(errs, field.Invalid(fldPath.Child("repository"), g.Repository, "must not start with '-'"))
	}
	if strings.HasPrefix(g.Revision, "-") {
		errs = append(errs, field.Invalid(fldPath.Child("revision"), g.Revision, "must not start with '-'"))
	}
	return errs
}

func validateNFS(server, p string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if server == "" {
		errs = append(errs, field.Required(fldPath.Child("server"), ""))
	}
	if p == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	if !path.IsAbs(p) {
		errs = append(errs, field.Invalid(fldPath.Child("path"), p, "must be an absolute path"))
	}
	return errs
}

func validateCSIDriverName(driver string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(driver) > 63 {
		errs = append(errs, field.TooLong(fldPath, driver, 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(driver)) {
		errs = append(errs, field.Invalid(fldPath, driver, msg))
	}
	return errs
}

func validateMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, msgFileMode)}
	}
	return nil
}

func validateKeyToPaths(items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range items {
		errs = append(errs, validateKeyToPath(&items[i], fldPath.Index(i))...)
	}
	return errs
}

func validateKeyToPath(kp *corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kp.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	}
	if kp.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, localNonReservedPath(kp.Path, fldPath.Child("path"))...)
	errs = append(errs, validateMode(kp.Mode, fldPath.Child("mode"))...)
	return errs
}

var (
	volumeDownwardAPIFieldPaths = sets.New(
		"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
	)
	envDownwardAPIFieldPaths = sets.New(
		"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
	)
	containerResourceFieldPaths = sets.New(
		"limits.cpu", "limits.memory", "limits.ephemeral-storage",
		"requests.cpu", "requests.memory", "requests.ephemeral-storage",
	)
)

func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, localNonReservedPath(f.Path, fldPath.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateFieldSelector(f.FieldRef, volumeDownwardAPIFieldPaths, fldPath.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, true, fldPath.Child("resourceFieldRef"))...)
	default:
		errs = append(errs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	errs = append(errs, validateMode(f.Mode, fldPath.Child("mode"))...)
	return errs
}

func validateProjected(pv *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := validateMode(pv.DefaultMode, fldPath.Child("defaultMode"))
	seen := sets.New[string]()
	claimPath := func(p string, owner string) {
		if p == "" {
			return
		}
		if seen.Has(p) {
			errs = append(errs, field.Invalid(fldPath, owner, "conflicting duplicate paths"))
			return
		}
		seen.Insert(p)
	}
	for i := range pv.Sources {
		src := &pv.Sources[i]
		sp := fldPath.Child("sources").Index(i)
		n := 0
		if src.Secret != nil {
			n++
			p := sp.Child("secret")
			if src.Secret.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			}
			for j := range src.Secret.Items {
				errs = append(errs, validateKeyToPath(&src.Secret.Items[j], p.Child("items").Index(j))...)
				claimPath(src.Secret.Items[j].Path, src.Secret.Name)
			}
		}
		if src.ConfigMap != nil {
			n++
			p := sp.Child("configMap")
			if src.ConfigMap.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			}
			for j := range src.ConfigMap.Items {
				errs = append(errs, validateKeyToPath(&src.ConfigMap.Items[j], p.Child("items").Index(j))...)
				claimPath(src.ConfigMap.Items[j].Path, src.ConfigMap.Name)
			}
		}
		if src.DownwardAPI != nil {
			n++
			p := sp.Child("downwardAPI")
			for j := range src.DownwardAPI.Items {
				errs = append(errs, validateDownwardAPIFile(&src.DownwardAPI.Items[j], p)...)
				claimPath(src.DownwardAPI.Items[j].Path, src.DownwardAPI.Items[j].Path)
			}
		}
		if sat := src.ServiceAccountToken; sat != nil {
			n++
			p := sp.Child("serviceAccountToken")
			if sat.ExpirationSeconds == nil {
				errs = append(errs, field.Required(p.Child("expirationSeconds"), ""))
			} else {
				if *sat.ExpirationSeconds < 600 {
					errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *sat.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
				}
				if *sat.ExpirationSeconds > 1<<32 {
					errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *sat.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
				}
			}
			if sat.Path == "" {
				errs = append(errs, field.Required(fldPath.Child("path"), ""))
			} else {
				errs = append(errs, localNonReservedPath(sat.Path, fldPath.Child("path"))...)
			}
		}
		if ctb := src.ClusterTrustBundle; ctb != nil {
			n++
			p := sp.Child("clusterTrustBundle")
			errs = append(errs, validateClusterTrustBundleProjection(ctb, p)...)
			if ctb.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			}
			errs = append(errs, localNonReservedPath(ctb.Path, p.Child("path"))...)
			claimPath(ctb.Path, ctb.Path)
		}
		if pc := src.PodCertificate; pc != nil {
			n++
			p := sp.Child("podCertificate")
			errs = append(errs, validatePodCertificateProjection(pc, p)...)
			for _, f := range []struct{ path, name string }{
				{pc.CredentialBundlePath, "credentialBundlePath"}, {pc.KeyPath, "keyPath"}, {pc.CertificateChainPath, "certificateChainPath"},
			} {
				if f.path != "" {
					errs = append(errs, localNonReservedPath(f.path, p.Child(f.name))...)
					claimPath(f.path, f.path)
				}
			}
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// localDescendingPath: relative and without ".." elements.
func localDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(p) {
		errs = append(errs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	return append(errs, noBacksteps(p, fldPath)...)
}

func noBacksteps(p string, fldPath *field.Path) field.ErrorList {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
		}
	}
	return nil
}

// localNonReservedPath: a local descending path that also does not start with "..".
func localNonReservedPath(p string, fldPath *field.Path) field.ErrorList {
	errs := localDescendingPath(p, fldPath)
	if strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "../") {
		errs = append(errs, field.Invalid(fldPath, p, "must not start with '..'"))
	}
	return errs
}

// validateClusterTrustBundleProjection: by name (a valid bundle name, no
// label selector) or by signer name (with an optional label selector).
func validateClusterTrustBundleProjection(ctb *corev1.ClusterTrustBundleProjection, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case ctb.Name != nil && ctb.SignerName != nil:
		errs = append(errs, field.Invalid(p, ctb, "only one of name and signerName may be used"))
	case ctb.Name != nil:
		name := *ctb.Name
		if name == "" {
			errs = append(errs, field.Required(p.Child("name"), "must be a valid object name"))
		}
		signer := ""
		if i := strings.LastIndex(name, ":"); i != -1 {
			signer = strings.ReplaceAll(name[:i], ":", "/")
		}
		for _, msg := range ClusterTrustBundleNameFunc(signer)(name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), name, fmt.Sprintf("not a valid clustertrustbundlename: %v", msg)))
		}
		if ctb.LabelSelector != nil {
			errs = append(errs, field.Invalid(p.Child("labelSelector"), ctb.LabelSelector, "labelSelector must be unset if name is specified"))
		}
	case ctb.SignerName != nil:
		if *ctb.SignerName == "" {
			errs = append(errs, field.Required(p.Child("signerName"), "must be a valid signer name"))
		}
		errs = append(errs, ValidateSignerName(p.Child("signerName"), *ctb.SignerName)...)
		errs = append(errs, ValidateLabelSelectorStrict(ctb.LabelSelector, p.Child("labelSelector"))...)
	default:
		errs = append(errs, field.Required(p, "either name or signerName must be specified"))
	}
	return errs
}

// podCertificateKeyTypes are the key types a pod may ask a signer for.
var podCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

// Bounds of a podCertificate projection's maxExpirationSeconds: at least
// an hour; at most 91 days, 24 hours for the kubernetes.io signers.
const (
	minPodCertificateExpiration           = 3600
	maxPodCertificateExpiration           = 91 * 24 * 3600
	maxKubernetesPodCertificateExpiration = 24 * 3600
)

// validatePodCertificateProjection: a signer name, user annotations, a
// known key type, the expiration bounds and at least one output path.
func validatePodCertificateProjection(pc *corev1.PodCertificateProjection, p *field.Path) field.ErrorList {
	errs := ValidateSignerName(p.Child("signerName"), pc.SignerName)
	if pc.UserAnnotations != nil {
		errs = append(errs, ValidateUserAnnotations(pc.UserAnnotations, p.Child("userAnnotations"))...)
	}
	if !contains(podCertificateKeyTypes, pc.KeyType) {
		errs = append(errs, field.NotSupported(p.Child("keyType"), pc.KeyType, podCertificateKeyTypes))
	}
	if exp := pc.MaxExpirationSeconds; exp != nil {
		if *exp < minPodCertificateExpiration {
			errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), *exp, "if provided, maxExpirationSeconds must be >= 3600"))
		}
		limit := int32(maxPodCertificateExpiration)
		if IsKubernetesSignerName(pc.SignerName) {
			limit = maxKubernetesPodCertificateExpiration
		}
		if *exp > limit {
			errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), *exp, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", limit)))
		}
	}
	if pc.CredentialBundlePath == "" && pc.KeyPath == "" && pc.CertificateChainPath == "" {
		errs = append(errs, field.Required(p, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
	}
	return errs
}
