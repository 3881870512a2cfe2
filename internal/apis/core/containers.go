package core

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedPortProtocols = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)

// containerCtx carries what container validation needs from the pod spec.
type containerCtx struct {
	volumes     map[string]corev1.VolumeSource
	claimNames  sets.Set[string]
	gracePeriod *int64
	os          *corev1.PodOS
	hostUsers   bool
}

// validateContainerCommon applies the checks shared by regular, init and
// ephemeral containers.
func validateContainerCommon(c *corev1.Container, cc *containerCtx, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, dnsLabel(c.Name, p.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	devices := map[string]string{}
	for _, d := range c.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	errs = append(errs, validateVolumeMounts(c, devices, cc.volumes, p.Child("volumeMounts"))...)
	errs = append(errs, validateVolumeDevices(c.VolumeDevices, mounts, cc.volumes, p.Child("volumeDevices"))...)
	errs = append(errs, validatePullPolicy(c.ImagePullPolicy, p.Child("imagePullPolicy"))...)
	errs = append(errs, validateResourceRequirements(&c.Resources, validateContainerResourceName, cc.claimNames, p.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, p.Child("resizePolicy"))...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, cc.hostUsers, p.Child("securityContext"))...)
	return errs
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		idx := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(idx.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(idx.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(idx.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(idx.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(idx.Child("hostPort"), port.HostPort, msg))
			}
		}
		errs = append(errs, validateProtocol(port.Protocol, idx.Child("protocol"))...)
	}
	return errs
}

func validateProtocol(proto corev1.Protocol, fldPath *field.Path) field.ErrorList {
	if proto == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !supportedPortProtocols.Has(proto) {
		return field.ErrorList{field.NotSupported(fldPath, proto, sets.List(supportedPortProtocols))}
	}
	return nil
}

// checkHostPortConflicts reports a hostPort used twice for the same
// protocol and host IP across the given containers.
func checkHostPortConflicts(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for ci, c := range containers {
		for pi, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(fldPath.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return errs
}

// validateEnv uses the relaxed variable name rules (GA since v1.34).
func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		idx := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(idx.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(idx.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarSource(&ev, idx.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarSource(ev *corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	src := ev.ValueFrom
	if src == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if src.FieldRef != nil {
		n++
		errs = append(errs, validateFieldSelector(src.FieldRef, envDownwardAPIFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if src.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateResourceFieldSelector(src.ResourceFieldRef, false, fldPath.Child("resourceFieldRef"))...)
	}
	if src.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if src.SecretKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(src.SecretKeyRef.Name, src.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if src.FileKeyRef != nil {
		n++
		errs = append(errs, validateFileKeySelector(src.FileKeyRef, fldPath.Child("fileKeyRef"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// splitSubscript splits "metadata.labels['key']" into path and key.
func splitSubscript(fieldPath string) (string, string, bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	base, key, ok := strings.Cut(strings.TrimSuffix(fieldPath, "']"), "['")
	if !ok || base == "" {
		return fieldPath, "", false
	}
	return base, key, true
}

// downwardAPIFieldLabels are the pod fields the v1 downward API can address.
var downwardAPIFieldLabels = sets.New(
	"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
	"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
)

func validateFieldSelector(fs *corev1.ObjectFieldSelector, allowed sets.Set[string], fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath,
			fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	if base, key, ok := splitSubscript(fs.FieldPath); ok {
		switch base {
		case "metadata.annotations":
			return qualifiedName(strings.ToLower(key), fldPath)
		case "metadata.labels":
			return qualifiedName(key, fldPath)
		default:
			return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath,
				fmt.Sprintf("error converting fieldPath: field label does not support subscript: %s", fs.FieldPath))}
		}
	}
	p := fs.FieldPath
	if p == "spec.host" {
		p = "spec.nodeName"
	}
	if !downwardAPIFieldLabels.Has(p) {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath,
			fmt.Sprintf("error converting fieldPath: field label not supported: %s", fs.FieldPath))}
	}
	if !allowed.Has(p) {
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), p, sets.List(allowed))}
	}
	return nil
}

var (
	cpuDivisors    = sets.New("1m", "1")
	binaryDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, inVolume bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case inVolume && fs.ContainerName == "":
		errs = append(errs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	case !containerResourceFieldPaths.Has(fs.Resource) &&
		!strings.HasPrefix(fs.Resource, "requests.hugepages-") && !strings.HasPrefix(fs.Resource, "limits.hugepages-"):
		errs = append(errs, field.NotSupported(fldPath.Child("resource"), fs.Resource, sets.List(containerResourceFieldPaths)))
	}
	if fs.Divisor.IsZero() {
		return errs
	}
	d := fs.Divisor.String()
	switch {
	case fs.Resource == "limits.cpu" || fs.Resource == "requests.cpu":
		if !cpuDivisors.Has(d) {
			errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case strings.HasSuffix(fs.Resource, ".memory") || strings.HasSuffix(fs.Resource, ".ephemeral-storage") ||
		strings.Contains(fs.Resource, ".hugepages-"):
		if !binaryDivisors.Has(d) {
			errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource,
				"only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with this resource"))
		}
	}
	return errs
}

func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	errs := nameErrs(nameIsSubdomain, name, fldPath.Child("name"))
	if key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), key, msg))
		}
	}
	return errs
}

func validateFileKeySelector(s *corev1.FileKeySelector, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsRelaxedEnvVarName(s.Key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), s.Key, msg))
		}
	}
	if s.VolumeName == "" {
		errs = append(errs, field.Required(fldPath.Child("volumeName"), ""))
	} else {
		errs = append(errs, dnsLabel(s.VolumeName, fldPath.Child("volumeName"))...)
	}
	if s.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	} else {
		errs = append(errs, noBacksteps(s.Path, fldPath.Child("path"))...)
	}
	return errs
}

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, src := range sources {
		idx := fldPath.Index(i)
		if src.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(src.Prefix) {
				errs = append(errs, field.Invalid(idx.Child("prefix"), src.Prefix, msg))
			}
		}
		n := 0
		if src.ConfigMapRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(src.ConfigMapRef.Name, idx.Child("configMapRef", "name"))...)
		}
		if src.SecretRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(src.SecretRef.Name, idx.Child("secretRef", "name"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateEnvSourceName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	for _, msg := range nameIsSubdomain(name, true) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

var supportedMountPropagations = sets.New(corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone)

func validateVolumeMounts(c *corev1.Container, devices map[string]string, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		idx := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(idx.Child("name"), ""))
		}
		if _, ok := volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(idx.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(idx.Child("mountPath"), ""))
		}
		if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(idx.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if _, ok := devices[m.Name]; ok {
			errs = append(errs, field.Invalid(idx.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		for _, dp := range devices {
			if dp == m.MountPath {
				errs = append(errs, field.Invalid(idx.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
				break
			}
		}
		if m.SubPath != "" {
			errs = append(errs, localDescendingPath(m.SubPath, idx.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(idx.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, localDescendingPath(m.SubPathExpr, idx.Child("subPathExpr"))...)
		}
		if mp := m.MountPropagation; mp != nil {
			pp := idx.Child("mountPropagation")
			if !supportedMountPropagations.Has(*mp) {
				errs = append(errs, field.NotSupported(pp, *mp, sets.List(supportedMountPropagations)))
			}
			privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if *mp == corev1.MountPropagationBidirectional && !privileged {
				errs = append(errs, field.Forbidden(pp, "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
		errs = append(errs, validateRecursiveReadOnly(m, idx.Child("recursiveReadOnly"))...)
	}
	return errs
}

func validateRecursiveReadOnly(m corev1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath, *m.RecursiveReadOnly, []corev1.RecursiveReadOnlyMode{
			corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyEnabled}))
	}
	return errs
}

func validateVolumeDevices(devices []corev1.VolumeDevice, mounts map[string]string, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names, paths := sets.New[string](), sets.New[string]()
	for i, d := range devices {
		idx := fldPath.Index(i)
		if d.Name == "" {
			errs = append(errs, field.Required(idx.Child("name"), ""))
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Invalid(idx.Child("name"), d.Name, "must be unique"))
		}
		if vs, ok := volumes[d.Name]; !ok {
			errs = append(errs, field.NotFound(idx.Child("name"), d.Name))
		} else if vs.PersistentVolumeClaim == nil && vs.Ephemeral == nil {
			errs = append(errs, field.Invalid(idx.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(idx.Child("devicePath"), ""))
		}
		if paths.Has(d.DevicePath) {
			errs = append(errs, field.Invalid(idx.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(noBacksteps(d.DevicePath, idx)) > 0 {
			errs = append(errs, field.Invalid(idx.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths.Insert(d.DevicePath)
		}
		if _, ok := mounts[d.Name]; ok {
			errs = append(errs, field.Invalid(idx.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		for _, mp := range mounts {
			if mp == d.DevicePath {
				errs = append(errs, field.Invalid(idx.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
				break
			}
		}
		if d.Name != "" {
			names.Insert(d.Name)
		}
	}
	return errs
}

var supportedPullPolicies = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}

func validatePullPolicy(policy corev1.PullPolicy, fldPath *field.Path) field.ErrorList {
	switch policy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, policy, supportedPullPolicies)}
	}
}

func validateResizePolicy(policies []corev1.ContainerResizePolicy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[corev1.ResourceName]()
	for i, p := range policies {
		if seen.Has(p.ResourceName) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), p.ResourceName))
		}
		seen.Insert(p.ResourceName)
		switch p.ResourceName {
		case corev1.ResourceCPU, corev1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(fldPath, ""))
		default:
			errs = append(errs, field.NotSupported(fldPath, p.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
		}
		switch p.RestartPolicy {
		case corev1.NotRequired, corev1.RestartContainer:
		case "":
			errs = append(errs, field.Required(fldPath, ""))
		default:
			errs = append(errs, field.NotSupported(fldPath, p.RestartPolicy, []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}))
		}
	}
	return errs
}

// validateResourceRequirements checks names and quantities of limits and
// requests, that requests do not exceed limits, and claim references.
func validateResourceRequirements(req *corev1.ResourceRequirements, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList, claimNames sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	var cpuOrMemory, hugePages bool
	for name, q := range req.Limits {
		p := limPath.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
		if isHugePages(name) {
			hugePages = true
			errs = append(errs, validateHugePageValue(name, q, p)...)
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			cpuOrMemory = true
		}
	}
	for name, q := range req.Requests {
		p := reqPath.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
		if limit, ok := req.Limits[name]; ok {
			if q.Cmp(limit) != 0 && !isOvercommitAllowed(name) {
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			} else if q.Cmp(limit) > 0 {
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !isOvercommitAllowed(name) {
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		if isHugePages(name) {
			hugePages = true
			errs = append(errs, validateHugePageValue(name, q, p)...)
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			cpuOrMemory = true
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	seen := sets.New[string]()
	for i, c := range req.Claims {
		p := fldPath.Child("claims").Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case seen.Has(c.Name + "/" + c.Request):
			errs = append(errs, field.Duplicate(p, c.Name))
		case !claimNames.Has(c.Name):
			errs = append(errs, field.Invalid(p.Child("name"), c.Name, "must be the name of an entry in pod.spec.resourceClaims"))
		}
		seen.Insert(c.Name + "/" + c.Request)
	}
	return errs
}

func validateHugePageValue(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	size, err := hugePageSize(name)
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 || q.Value()%size.Value() != 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name))}
	}
	return nil
}

// Probes and handlers.

type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func probeHandler(p *corev1.ProbeHandler) handler {
	return handler{exec: p.Exec, httpGet: p.HTTPGet, tcpSocket: p.TCPSocket, grpc: p.GRPC}
}

func lifecycleHandler(h *corev1.LifecycleHandler) handler {
	return handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}
}

func validateHandler(h handler, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	check := func(set bool, name string, fn func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, fn(fldPath.Child(name))...)
	}
	check(h.exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	check(h.httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList { return validateHTTPGet(h.httpGet, p) })
	check(h.tcpSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, p.Child("port"))
	})
	check(h.grpc != nil, "grpc", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("port"))
	})
	check(h.sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		if gracePeriod != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *gracePeriod) {
			return field.ErrorList{field.Invalid(p, h.sleep.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a handler type"))
	}
	return errs
}

var supportedHTTPSchemes = sets.New(corev1.URISchemeHTTP, corev1.URISchemeHTTPS)

func validateHTTPGet(a *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(a.Port, fldPath.Child("port"))...)
	if !supportedHTTPSchemes.Has(a.Scheme) {
		errs = append(errs, field.NotSupported(fldPath.Child("scheme"), a.Scheme, sets.List(supportedHTTPSchemes)))
	}
	for _, h := range a.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(h.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("httpHeaders"), h.Name, msg))
		}
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

type probeKind int

const (
	livenessProbe probeKind = iota
	readinessProbe
	startupProbe
)

func validateProbe(p *corev1.Probe, kind probeKind, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateHandler(probeHandler(&p.ProbeHandler), gracePeriod, fldPath)
	errs = append(errs, nonNegative(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	errs = append(errs, nonNegative(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	errs = append(errs, nonNegative(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	errs = append(errs, nonNegative(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	errs = append(errs, nonNegative(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	switch kind {
	case livenessProbe, startupProbe:
		if p.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	case readinessProbe:
		if p.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	return errs
}

func validateProbes(c *corev1.Container, gracePeriod *int64, p *field.Path) field.ErrorList {
	errs := validateProbe(c.LivenessProbe, livenessProbe, gracePeriod, p.Child("livenessProbe"))
	errs = append(errs, validateProbe(c.ReadinessProbe, readinessProbe, gracePeriod, p.Child("readinessProbe"))...)
	errs = append(errs, validateProbe(c.StartupProbe, startupProbe, gracePeriod, p.Child("startupProbe"))...)
	return errs
}

func validateLifecycle(lc *corev1.Lifecycle, gracePeriod *int64, os *corev1.PodOS, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if lc.PostStart != nil {
		errs = append(errs, validateHandler(lifecycleHandler(lc.PostStart), gracePeriod, fldPath.Child("postStart"))...)
	}
	if lc.PreStop != nil {
		errs = append(errs, validateHandler(lifecycleHandler(lc.PreStop), gracePeriod, fldPath.Child("preStop"))...)
	}
	if lc.StopSignal != nil {
		p := fldPath.Child("stopSignal")
		switch {
		case os == nil:
			errs = append(errs, field.Forbidden(p, "may not be set for containers with empty `spec.os.name`"))
		case os.Name == corev1.Windows && *lc.StopSignal != corev1.SIGKILL && *lc.StopSignal != corev1.SIGTERM:
			errs = append(errs, field.NotSupported(p, *lc.StopSignal, []corev1.Signal{corev1.SIGKILL, corev1.SIGTERM}))
		case os.Name == corev1.Linux && !strings.HasPrefix(string(*lc.StopSignal), "SIG"):
			errs = append(errs, field.Invalid(p, *lc.StopSignal, "must be a Linux signal name such as SIGTERM"))
		}
	}
	return errs
}

var (
	supportedContainerRestartPolicies = []corev1.ContainerRestartPolicy{
		corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure,
	}
	supportedRestartRuleActions = []corev1.ContainerRestartRuleAction{
		corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleActionRestartAllContainers,
	}
	supportedRestartRuleOperators = []corev1.ContainerRestartRuleOnExitCodesOperator{
		corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn,
	}
)

// validateContainerRestartPolicy checks the per-container restart policy and
// rules (ContainerRestartRules and RestartAllContainersOnContainerExits are
// on by default in v1.37).
func validateContainerRestartPolicy(policy *corev1.ContainerRestartPolicy, rules []corev1.ContainerRestartRule, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	policyPath := fldPath.Child("restartPolicy")
	if policy == nil {
		if len(rules) == 0 {
			return nil
		}
		errs = append(errs, field.Required(policyPath, "must specify restartPolicy when restart rules are used"))
	} else if !contains(supportedContainerRestartPolicies, *policy) {
		errs = append(errs, field.NotSupported(policyPath, *policy, supportedContainerRestartPolicies))
	}
	rulesPath := fldPath.Child("restartPolicyRules")
	if len(rules) > 20 {
		errs = append(errs, field.TooMany(rulesPath, len(rules), 20))
	}
	for i, r := range rules {
		rp := rulesPath.Index(i)
		if !contains(supportedRestartRuleActions, r.Action) {
			errs = append(errs, field.NotSupported(rp.Child("action"), r.Action, supportedRestartRuleActions))
		}
		if r.ExitCodes == nil {
			errs = append(errs, field.Required(rp.Child("exitCodes"), "must be specified"))
			continue
		}
		if !contains(supportedRestartRuleOperators, r.ExitCodes.Operator) {
			errs = append(errs, field.NotSupported(rp.Child("exitCodes", "operator"), r.ExitCodes.Operator, supportedRestartRuleOperators))
		}
		if len(r.ExitCodes.Values) > 255 {
			errs = append(errs, field.TooMany(rp.Child("exitCodes", "values"), len(r.ExitCodes.Values), 255))
		}
	}
	return errs
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// validateContainers validates the regular containers of a pod spec.
func validateContainers(containers []corev1.Container, cc *containerCtx, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		c := &containers[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, cc, p)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		if c.Lifecycle != nil {
			errs = append(errs, validateLifecycle(c.Lifecycle, cc.gracePeriod, cc.os, p.Child("lifecycle"))...)
		}
		errs = append(errs, validateProbes(c, cc.gracePeriod, p)...)
		errs = append(errs, validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)...)
	}
	return append(errs, checkHostPortConflicts(containers, fldPath)...)
}

// validateInitContainers validates init containers; restartable ones
// (restartPolicy Always, "sidecars") may carry probes and lifecycle hooks.
func validateInitContainers(inits, regular []corev1.Container, cc *containerCtx, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range inits {
		c := &inits[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, cc, p)...)
		errs = append(errs, validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)...)
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		errs = append(errs, checkHostPortConflicts([]corev1.Container{*c}, fldPath)...)
		if sidecar {
			if c.Lifecycle != nil {
				errs = append(errs, validateLifecycle(c.Lifecycle, cc.gracePeriod, cc.os, p.Child("lifecycle"))...)
			}
			errs = append(errs, validateProbes(c, cc.gracePeriod, p)...)
			continue
		}
		const msg = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(p.Child("lifecycle"), msg))
		}
		if c.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("livenessProbe"), msg))
		}
		if c.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("readinessProbe"), msg))
		}
		if c.StartupProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("startupProbe"), msg))
		}
		for j, rp := range c.ResizePolicy {
			if rp.RestartPolicy == corev1.RestartContainer {
				errs = append(errs, field.Invalid(p.Child("resizePolicy").Index(j).Child("restartPolicy"), rp.RestartPolicy,
					"must not be set to 'RestartContainer' for non-sidecar initContainers"))
			}
		}
	}
	return errs
}

// validateEphemeralContainers checks names (unique across all containers)
// and the common container rules, and forbids the fields ephemeral
// containers may not use.
func validateEphemeralContainers(ephemeral []corev1.EphemeralContainer, containers, inits []corev1.Container, cc *containerCtx, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for _, c := range containers {
		names.Insert(c.Name)
	}
	for _, c := range inits {
		names.Insert(c.Name)
	}
	for i := range ephemeral {
		ec := &ephemeral[i]
		p := fldPath.Index(i)
		c := (*corev1.Container)(&ec.EphemeralContainerCommon)
		errs = append(errs, validateContainerCommon(c, cc, p)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		if ec.TargetContainerName != "" && !names.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		forbidden := map[string]bool{
			"ports": len(c.Ports) > 0, "resources": len(c.Resources.Limits)+len(c.Resources.Requests) > 0,
			"lifecycle": c.Lifecycle != nil, "livenessProbe": c.LivenessProbe != nil,
			"readinessProbe": c.ReadinessProbe != nil, "startupProbe": c.StartupProbe != nil,
			"resizePolicy": len(c.ResizePolicy) > 0, "restartPolicy": c.RestartPolicy != nil,
		}
		for _, name := range []string{"ports", "resources", "lifecycle", "livenessProbe", "readinessProbe", "startupProbe", "resizePolicy", "restartPolicy"} {
			if forbidden[name] {
				errs = append(errs, field.Forbidden(p.Child(name), "cannot be set for an Ephemeral Container"))
			}
		}
		for j, m := range c.VolumeMounts {
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return errs
}
