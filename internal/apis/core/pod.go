package core

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// podOpts are the few switches pod spec validation needs.
type podOpts struct {
	// resourceIsPod is true when the spec belongs to a Pod rather than a
	// template embedded in another object.
	resourceIsPod bool
}

// ValidatePod validates a Pod on create.
func ValidatePod(pod *corev1.Pod) field.ErrorList {
	errs := validatePodMetaAndSpec(pod)
	specPath := field.NewPath("spec")
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		errs = append(errs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return errs
}

func validatePodMetaAndSpec(pod *corev1.Pod) field.ErrorList {
	metaPath, specPath := field.NewPath("metadata"), field.NewPath("spec")
	errs := validateMeta(&pod.ObjectMeta, true, nameIsSubdomain, metaPath)
	errs = append(errs, validatePodAnnotations(pod.Annotations, metaPath.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&pod.Spec, podMetaInfo{name: pod.Name}, specPath, podOpts{resourceIsPod: true})...)

	if pod.Spec.ServiceAccountName == "" {
		for vi, v := range pod.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for si, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil {
					errs = append(errs, field.Forbidden(specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		errs = append(errs, nonNegative(*pod.Spec.TerminationGracePeriodSeconds, specPath.Child("terminationGracePeriodSeconds"))...)
	}
	errs = append(errs, imageWhitespace(pod.Spec.Containers, specPath.Child("containers"))...)
	errs = append(errs, imageWhitespace(pod.Spec.InitContainers, specPath.Child("initContainers"))...)
	return errs
}

func imageWhitespace(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range containers {
		if len(c.Image) != len(strings.TrimSpace(c.Image)) {
			errs = append(errs, field.Invalid(fldPath.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return errs
}

// validatePodAnnotations checks the pod annotations that carry structured
// data (pod-deletion-cost).
func validatePodAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v, ok := annotations[corev1.PodDeletionCost]; ok {
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			errs = append(errs, field.Invalid(fldPath.Key(corev1.PodDeletionCost), v, "must be a 32bit integer"))
		}
	}
	return errs
}

// ValidatePodTemplateSpec validates a pod template embedded in another
// object: its labels and annotations and its spec. Ephemeral containers are
// forbidden. Callers add their own restartPolicy and selector rules.
func ValidatePodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	errs := metavalidation.ValidateLabels(t.Labels, fldPath.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, fldPath.Child("annotations"))...)
	errs = append(errs, validatePodAnnotations(t.Annotations, fldPath.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&t.Spec, podMetaInfo{}, fldPath.Child("spec"), podOpts{})...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// ValidatePodSpec validates a pod spec with template semantics (a hostPort
// of 0 is accepted under hostNetwork because it is defaulted when the pod is
// created). meta may be nil; when it carries the pod name, the names of PVCs
// for generic ephemeral volumes are checked too.
func ValidatePodSpec(spec *corev1.PodSpec, meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	var pm podMetaInfo
	if meta != nil {
		pm.name = meta.Name
	}
	return validatePodSpec(spec, pm, fldPath, podOpts{})
}

func validatePodSpec(spec *corev1.PodSpec, pm podMetaInfo, fldPath *field.Path, opts podOpts) field.ErrorList {
	var errs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	vols, vErrs := validateVolumes(spec.Volumes, pm, fldPath.Child("volumes"))
	errs = append(errs, vErrs...)
	claimNames, cErrs := validatePodResourceClaims(spec.ResourceClaims, fldPath.Child("resourceClaims"))
	errs = append(errs, cErrs...)
	cc := &containerCtx{
		volumes:     vols,
		claimNames:  claimNames,
		gracePeriod: spec.TerminationGracePeriodSeconds,
		os:          spec.OS,
		hostUsers:   spec.HostUsers == nil || *spec.HostUsers,
	}
	errs = append(errs, validateContainers(spec.Containers, cc, fldPath.Child("containers"))...)
	errs = append(errs, validateInitContainers(spec.InitContainers, spec.Containers, cc, fldPath.Child("initContainers"))...)
	errs = append(errs, validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, cc, fldPath.Child("ephemeralContainers"))...)
	errs = append(errs, validatePodLevelResources(spec, claimNames, fldPath)...)
	errs = append(errs, validateHostNetworkPorts(spec, opts, fldPath)...)
	errs = append(errs, validateRestartPolicy(spec.RestartPolicy, fldPath.Child("restartPolicy"))...)
	errs = append(errs, validateDNSPolicy(spec.DNSPolicy, fldPath.Child("dnsPolicy"))...)
	errs = append(errs, metavalidation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec, fldPath.Child("securityContext"))...)
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		errs = append(errs, field.Invalid(fldPath.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	errs = append(errs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, g := range spec.ReadinessGates {
		errs = append(errs, qualifiedName(string(g.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	errs = append(errs, validateSchedulingGates(spec.SchedulingGates, fldPath.Child("schedulingGates"))...)
	errs = append(errs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	errs = append(errs, validateHostUsers(spec, fldPath)...)
	errs = append(errs, validateHostnameOverride(spec, fldPath)...)
	if spec.ServiceAccountName != "" {
		errs = append(errs, nameErrs(apivalidation.ValidateServiceAccountName, spec.ServiceAccountName, fldPath.Child("serviceAccountName"))...)
	}
	//nolint:staticcheck // the deprecated alias must mirror serviceAccountName
	if spec.DeprecatedServiceAccount != spec.ServiceAccountName {
		errs = append(errs, field.Invalid(fldPath.Child("deprecatedServiceAccount"), spec.DeprecatedServiceAccount, //nolint:staticcheck
			fmt.Sprintf("must be the same as serviceAccountName: %q", spec.ServiceAccountName)))
	}
	if spec.NodeName != "" {
		errs = append(errs, nameErrs(nameIsSubdomain, spec.NodeName, fldPath.Child("nodeName"))...)
	}
	if ads := spec.ActiveDeadlineSeconds; ads != nil && (*ads < 1 || *ads > math.MaxInt32) {
		errs = append(errs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *ads, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if spec.Hostname != "" {
		errs = append(errs, dnsLabel(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, dnsLabel(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	errs = append(errs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	for i, ha := range spec.HostAliases {
		hp := fldPath.Child("hostAliases").Index(i)
		errs = append(errs, validIP(hp.Child("ip"), ha.IP, nil)...)
		for j, hn := range ha.Hostnames {
			errs = append(errs, dnsSubdomain(hn, hp.Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		errs = append(errs, nameErrs(nameIsSubdomain, spec.PriorityClassName, fldPath.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		errs = append(errs, nameErrs(nameIsSubdomain, *spec.RuntimeClassName, fldPath.Child("runtimeClassName"))...)
	}
	if pp := spec.PreemptionPolicy; pp != nil {
		switch *pp {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(fldPath.Child("preemptionPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("preemptionPolicy"), *pp, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
	}
	if spec.Overhead != nil {
		errs = append(errs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, validateContainerResourceName, nil, fldPath.Child("overhead"))...)
	}
	if spec.OS != nil {
		switch {
		case spec.OS.Name == "":
			errs = append(errs, field.Required(fldPath.Child("os", "name"), ""))
		case spec.OS.Name != corev1.Linux && spec.OS.Name != corev1.Windows:
			errs = append(errs, field.NotSupported(fldPath.Child("os"), spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows}))
		}
	}
	return errs
}

func validatePodResourceClaims(claims []corev1.PodResourceClaim, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, c := range claims {
		p := fldPath.Index(i)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p, c.Name))
		} else {
			errs = append(errs, dnsLabel(c.Name, p.Child("name"))...)
			names.Insert(c.Name)
		}
		set := 0
		if c.ResourceClaimName != nil {
			set++
			errs = append(errs, nameErrs(nameIsSubdomain, *c.ResourceClaimName, p.Child("resourceClaimName"))...)
		}
		if c.ResourceClaimTemplateName != nil {
			set++
			errs = append(errs, nameErrs(nameIsSubdomain, *c.ResourceClaimTemplateName, p.Child("resourceClaimTemplateName"))...)
		}
		switch set {
		case 0:
			errs = append(errs, field.Invalid(p, c, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
		case 2:
			errs = append(errs, field.Invalid(p, c, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
		}
	}
	return names, errs
}

// validatePodLevelResources checks spec.resources (PodLevelResources is on by
// default): only cpu, memory and hugepages, with the usual quantity rules.
func validatePodLevelResources(spec *corev1.PodSpec, claimNames sets.Set[string], fldPath *field.Path) field.ErrorList {
	if spec.Resources == nil {
		return nil
	}
	nameFn := func(name corev1.ResourceName, p *field.Path) field.ErrorList {
		if errs := validateResourceName(name, p); len(errs) > 0 {
			return errs
		}
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && !isHugePages(name) {
			return field.ErrorList{field.NotSupported(p, name, []string{string(corev1.ResourceCPU), corev1.ResourceHugePagesPrefix + "*", string(corev1.ResourceMemory)})}
		}
		return nil
	}
	return validateResourceRequirements(spec.Resources, nameFn, claimNames, fldPath.Child("resources"))
}

func validateHostNetworkPorts(spec *corev1.PodSpec, opts podOpts, fldPath *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range spec.Containers {
		for j, port := range c.Ports {
			if (opts.resourceIsPod || port.HostPort != 0) && port.HostPort != port.ContainerPort {
				errs = append(errs, field.Invalid(fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
					port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

func validateRestartPolicy(rp corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	switch rp {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, rp, []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
	}
}

func validateDNSPolicy(dp corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	switch dp {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, dp, []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone})}
	}
}

const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

func validateDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	}
	if cfg == nil {
		return nil
	}
	var errs field.ErrorList
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validIP(fldPath.Child("nameservers").Index(i), ns, nil)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range cfg.Searches {
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(s) {
			errs = append(errs, field.Invalid(fldPath.Child("searches").Index(i), s, msg))
		}
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

func validateSchedulingGates(gates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, g := range gates {
		errs = append(errs, qualifiedName(g.Name, fldPath.Index(i))...)
		if seen.Has(g.Name) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), g.Name))
		}
		seen.Insert(g.Name)
	}
	return errs
}

func validateHostUsers(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs field.ErrorList
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(fldPath.Child("hostNetwork"), "when `hostUsers` is false"))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(fldPath.Child("HostPID"), "when `hostUsers` is false"))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(fldPath.Child("HostIPC"), "when `hostUsers` is false"))
	}
	return errs
}

func validateHostnameOverride(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostnameOverride == nil {
		return nil
	}
	var errs field.ErrorList
	p := fldPath.Child("hostnameOverride")
	if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
		errs = append(errs, field.Forbidden(p, "may not be specified when setHostnameAsFQDN is true"))
	}
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(p, "may not be specified when hostNetwork is true"))
	}
	if len(*spec.HostnameOverride) > 64 {
		errs = append(errs, field.TooLong(p, "", 64))
	}
	return append(errs, dnsSubdomain(*spec.HostnameOverride, p)...)
}

// Security contexts.

var (
	sysctlRegexp = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)
	// sysctls that live in the network or IPC namespace of the pod.
	netSysctlPrefixes = []string{"net.", "net/"}
	ipcSysctlPrefixes = []string{"kernel.shm", "kernel/shm", "kernel.msg", "kernel/msg", "kernel.sem", "kernel/sem", "fs.mqueue.", "fs/mqueue/"}
)

const sysctlMaxLength = 253

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func validatePodSecurityContext(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		errs = append(errs, groupID(*sc.FSGroup, fldPath.Child("fsGroup"))...)
	}
	if sc.RunAsUser != nil {
		errs = append(errs, userID(*sc.RunAsUser, fldPath.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, groupID(*sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	}
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, groupID(g, fldPath.Child("supplementalGroups").Index(i))...)
	}
	names := sets.New[string]()
	for i, s := range sc.Sysctls {
		p := fldPath.Child("sysctls").Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlRegexp.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlRegexp)))
		case names.Has(s.Name):
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		if spec.HostNetwork && hasAnyPrefix(s.Name, netSysctlPrefixes) {
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		}
		if spec.HostIPC && hasAnyPrefix(s.Name, ipcSysctlPrefixes) {
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
		names.Insert(s.Name)
	}
	if p := sc.FSGroupChangePolicy; p != nil && *p != corev1.FSGroupChangeOnRootMismatch && *p != corev1.FSGroupChangeAlways {
		errs = append(errs, field.NotSupported(fldPath.Child("fsGroupChangePolicy"), *p, []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}))
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	if p := sc.SupplementalGroupsPolicy; p != nil && *p != corev1.SupplementalGroupsPolicyMerge && *p != corev1.SupplementalGroupsPolicyStrict {
		errs = append(errs, field.NotSupported(fldPath.Child("supplementalGroupsPolicy"), *p, []corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}))
	}
	if p := sc.SELinuxChangePolicy; p != nil && *p != corev1.SELinuxChangePolicyRecursive && *p != corev1.SELinuxChangePolicyMountOption {
		errs = append(errs, field.NotSupported(fldPath.Child("seLinuxChangePolicy"), *p, []corev1.PodSELinuxChangePolicy{corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive}))
	}
	return errs
}

func userID(id int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidUserID(id) {
		errs = append(errs, field.Invalid(fldPath, id, msg))
	}
	return errs
}

func groupID(id int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidGroupID(id) {
		errs = append(errs, field.Invalid(fldPath, id, msg))
	}
	return errs
}

func validateSecurityContext(sc *corev1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, userID(*sc.RunAsUser, fldPath.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, groupID(*sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	}
	if pm := sc.ProcMount; pm != nil {
		if *pm != corev1.DefaultProcMount && *pm != corev1.UnmaskedProcMount {
			errs = append(errs, field.NotSupported(fldPath.Child("procMount"), *pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
		if hostUsers && *pm == corev1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(fldPath.Child("procMount"), *pm, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	return errs
}

func validateSeccompProfile(sp *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), sp.Type, []corev1.SeccompProfileType{
			corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	if sp.Type == corev1.SeccompProfileTypeLocalhost {
		if sp.LocalhostProfile == nil {
			errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			errs = append(errs, localDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))...)
		}
	} else if sp.LocalhostProfile != nil {
		errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

func validateAppArmorProfile(ap *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	var errs field.ErrorList
	switch ap.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		if ap.LocalhostProfile == nil || strings.TrimSpace(*ap.LocalhostProfile) == "" {
			errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when AppArmor type is Localhost"))
		} else if len(*ap.LocalhostProfile) > 4095 {
			errs = append(errs, field.TooLong(fldPath.Child("localhostProfile"), "", 4095))
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if ap.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), ap.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when appArmorProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), ap.Type, []corev1.AppArmorProfileType{
			corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}))
	}
	return errs
}

// Scheduling: affinity, tolerations, topology spread.

func validateAffinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			errs = append(errs, validateNodeSelector(r, false, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if t.Weight <= 0 || t.Weight > 100 {
				errs = append(errs, field.Invalid(tp.Child("weight"), t.Weight, "must be in the range 1-100"))
			}
			errs = append(errs, validateNodeSelectorTerm(t.Preference, true, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		p := fldPath.Child("podAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		errs = append(errs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	if paa := a.PodAntiAffinity; paa != nil {
		p := fldPath.Child("podAntiAffinity")
		errs = append(errs, validatePodAffinityTerms(paa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		errs = append(errs, validateWeightedPodAffinityTerms(paa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	return errs
}

func validateNodeSelector(ns *corev1.NodeSelector, allowInvalidValues bool, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(ns.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, t := range ns.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(t, allowInvalidValues, termsPath.Index(i))...)
	}
	return errs
}

func validateNodeSelectorTerm(t corev1.NodeSelectorTerm, allowInvalidValues bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, r := range t.MatchExpressions {
		errs = append(errs, validateNodeSelectorRequirement(r, allowInvalidValues, fldPath.Child("matchExpressions").Index(j))...)
	}
	for j, r := range t.MatchFields {
		p := fldPath.Child("matchFields").Index(j)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		if r.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, "not a valid field selector key"))
		} else {
			for k, v := range r.Values {
				errs = append(errs, nameErrs(nameIsSubdomain, v, p.Child("values").Index(k))...)
			}
		}
	}
	return errs
}

func validateNodeSelectorRequirement(r corev1.NodeSelectorRequirement, allowInvalidValues bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			errs = append(errs, field.Required(fldPath.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			errs = append(errs, field.Required(fldPath.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.Invalid(fldPath.Child("operator"), r.Operator, "not a valid selector operator"))
	}
	errs = append(errs, metavalidation.ValidateLabelName(r.Key, fldPath.Child("key"))...)
	if !allowInvalidValues {
		for i, v := range r.Values {
			for _, msg := range validation.IsValidLabelValue(v) {
				errs = append(errs, field.Invalid(fldPath.Child("values").Index(i), v, msg))
			}
		}
	}
	return errs
}

func validatePodAffinityTerms(terms []corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range terms {
		errs = append(errs, validatePodAffinityTerm(t, fldPath.Index(i))...)
	}
	return errs
}

func validateWeightedPodAffinityTerms(terms []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range terms {
		p := fldPath.Index(i)
		if t.Weight <= 0 || t.Weight > 100 {
			errs = append(errs, field.Invalid(p.Child("weight"), t.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, validatePodAffinityTerm(t.PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return errs
}

func validatePodAffinityTerm(t corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	opts := metavalidation.LabelSelectorValidationOptions{}
	errs := metavalidation.ValidateLabelSelector(t.LabelSelector, opts, fldPath.Child("labelSelector"))
	errs = append(errs, metavalidation.ValidateLabelSelector(t.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		errs = append(errs, nameErrs(apivalidation.ValidateNamespaceName, ns, fldPath.Child("namespace"))...)
	}
	errs = append(errs, validateMatchLabelKeys(fldPath, t.MatchLabelKeys, t.MismatchLabelKeys, t.LabelSelector)...)
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metavalidation.ValidateLabelName(t.TopologyKey, fldPath.Child("topologyKey"))...)
}

// validateMatchLabelKeys: keys are label names, do not repeat between the
// two lists, and are not already constrained by the label selector.
func validateMatchLabelKeys(fldPath *field.Path, match, mismatch []string, selector *metav1.LabelSelector) field.ErrorList {
	var errs field.ErrorList
	selectorKeys := sets.New[string]()
	if selector != nil {
		for k := range selector.MatchLabels {
			selectorKeys.Insert(k)
		}
		for _, e := range selector.MatchExpressions {
			selectorKeys.Insert(e.Key)
		}
	}
	check := func(keys []string, p *field.Path) {
		for i, k := range keys {
			errs = append(errs, metavalidation.ValidateLabelName(k, p.Index(i))...)
			if selector == nil {
				errs = append(errs, field.Invalid(p.Index(i), k, "must not be specified when labelSelector is not set"))
			} else if selectorKeys.Has(k) {
				errs = append(errs, field.Invalid(p.Index(i), k, "exists in both matchLabelKeys and labelSelector"))
			}
		}
	}
	if len(match) > 0 {
		check(match, fldPath.Child("matchLabelKeys"))
	}
	if len(mismatch) > 0 {
		check(mismatch, fldPath.Child("mismatchLabelKeys"))
	}
	matchSet := sets.New(match...)
	for i, k := range mismatch {
		if matchSet.Has(k) {
			errs = append(errs, field.Invalid(fldPath.Child("mismatchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return errs
}

var supportedTaintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

func validateTaintEffect(effect corev1.TaintEffect, allowEmpty bool, fldPath *field.Path) field.ErrorList {
	if effect == "" {
		if allowEmpty {
			return nil
		}
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !contains(supportedTaintEffects, effect) {
		return field.ErrorList{field.NotSupported(fldPath, effect, supportedTaintEffects)}
	}
	return nil
}

func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, metavalidation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		errs = append(errs, validateTaintEffect(t.Effect, true, p.Child("effect"))...)
	}
	return errs
}

func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	actions := []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}
	policies := []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}
	for i, c := range constraints {
		p := fldPath.Index(i)
		errs = append(errs, positive(int64(c.MaxSkew), p.Child("maxSkew"))...)
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		if !contains(actions, c.WhenUnsatisfiable) {
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, actions))
		}
		for _, other := range constraints[i+1:] {
			if c.TopologyKey == other.TopologyKey && c.WhenUnsatisfiable == other.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if c.MinDomains != nil {
			errs = append(errs, positive(int64(*c.MinDomains), p.Child("minDomains"))...)
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		if c.NodeAffinityPolicy != nil && !contains(policies, *c.NodeAffinityPolicy) {
			errs = append(errs, field.NotSupported(p.Child("nodeAffinityPolicy"), *c.NodeAffinityPolicy, policies))
		}
		if c.NodeTaintsPolicy != nil && !contains(policies, *c.NodeTaintsPolicy) {
			errs = append(errs, field.NotSupported(p.Child("nodeTaintsPolicy"), *c.NodeTaintsPolicy, policies))
		}
		errs = append(errs, validateMatchLabelKeys(p, c.MatchLabelKeys, nil, c.LabelSelector)...)
		errs = append(errs, metavalidation.ValidateLabelSelector(c.LabelSelector, metavalidation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return errs
}

// Updates.

// updatablePodSpecFields is listed in the Forbidden message of a pod update
// that changes anything else.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
	"`spec.schedulingGates` (only deletions)",
}

// ValidatePodUpdate validates an update of a Pod's metadata and spec. Only
// container and init container images, activeDeadlineSeconds (set or
// lowered), added tolerations, removed scheduling gates and a negative grace
// period becoming 1 may change in the spec.
func ValidatePodUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	metaPath, specPath := field.NewPath("metadata"), field.NewPath("spec")
	errs := validateMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	errs = append(errs, validatePodMetaAndSpec(newPod)...)

	if len(newPod.Spec.Containers) != len(oldPod.Spec.Containers) {
		return append(errs, field.Forbidden(specPath.Child("containers"), "pod updates may not add or remove containers"))
	}
	errs = append(errs, requireImages(newPod.Spec.Containers, specPath.Child("containers"))...)
	if len(newPod.Spec.InitContainers) != len(oldPod.Spec.InitContainers) {
		return append(errs, field.Forbidden(specPath.Child("initContainers"), "pod updates may not add or remove containers"))
	}
	errs = append(errs, requireImages(newPod.Spec.InitContainers, specPath.Child("initContainers"))...)

	adsPath := specPath.Child("activeDeadlineSeconds")
	if nads := newPod.Spec.ActiveDeadlineSeconds; nads != nil {
		if *nads < 0 || *nads > math.MaxInt32 {
			return append(errs, field.Invalid(adsPath, *nads, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if oads := oldPod.Spec.ActiveDeadlineSeconds; oads != nil && *oads < *nads {
			return append(errs, field.Invalid(adsPath, *nads, "must be less than or equal to previous value"))
		}
	} else if oldPod.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(adsPath, newPod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	errs = append(errs, validateOnlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, validateOnlyDeletedSchedulingGates(newPod.Spec.SchedulingGates, oldPod.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)

	if equality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		return errs
	}
	// Overwrite the fields that may change with their old values; anything
	// still different is a forbidden change.
	munged := newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = oldPod.Spec.SchedulingGates
	munged.Tolerations = oldPod.Spec.Tolerations
	if old := oldPod.Spec.TerminationGracePeriodSeconds; old != nil && *old < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old
	}
	if len(oldPod.Spec.SchedulingGates) > 0 {
		// Gated pods may gain nodeSelector entries.
		if !equality.Semantic.DeepEqual(munged.NodeSelector, oldPod.Spec.NodeSelector) {
			errs = append(errs, validateNodeSelectorAdditions(specPath.Child("nodeSelector"), munged.NodeSelector, oldPod.Spec.NodeSelector)...)
			munged.NodeSelector = oldPod.Spec.NodeSelector
		}
	}
	if !equality.Semantic.DeepEqual(*munged, oldPod.Spec) {
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%s",
			strings.Join(updatablePodSpecFields, ","), specDiff(&oldPod.Spec, munged))))
	}
	return errs
}

// specDiff names the top-level spec fields that differ.
func specDiff(oldSpec, newSpec *corev1.PodSpec) string {
	o, n := map[string]interface{}{}, map[string]interface{}{}
	if err := toMap(oldSpec, o); err != nil {
		return ""
	}
	if err := toMap(newSpec, n); err != nil {
		return ""
	}
	keys := sets.KeySet(o).Union(sets.KeySet(n))
	var changed []string
	for _, k := range sets.List(keys) {
		if !equality.Semantic.DeepEqual(o[k], n[k]) {
			changed = append(changed, k)
		}
	}
	return "changed: " + strings.Join(changed, ", ")
}

func requireImages(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range containers {
		if c.Image == "" {
			errs = append(errs, field.Required(fldPath.Index(i).Child("image"), ""))
		}
	}
	return errs
}

func validateOnlyAddedTolerations(newTols, oldTols []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, old := range oldTols {
		found := false
		for _, nt := range newTols {
			candidate := old
			candidate.TolerationSeconds = nt.TolerationSeconds
			if equality.Semantic.DeepEqual(candidate, nt) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

func validateOnlyDeletedSchedulingGates(newGates, oldGates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	old := sets.New[string]()
	for _, g := range oldGates {
		old.Insert(g.Name)
	}
	var errs field.ErrorList
	for i, g := range newGates {
		if !old.Has(g.Name) {
			errs = append(errs, field.Forbidden(fldPath.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

func validateNodeSelectorAdditions(fldPath *field.Path, newSel, oldSel map[string]string) field.ErrorList {
	var errs field.ErrorList
	for k, v := range oldSel {
		if nv, ok := newSel[k]; !ok || nv != v {
			errs = append(errs, field.Invalid(fldPath.Key(k), newSel[k], "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
		}
	}
	return errs
}

// ValidatePodStatusUpdate validates a status update: metadata, that the spec
// is unchanged, conditions, IPs, node names and container state transitions.
func ValidatePodStatusUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	errs := validateMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	if newPod.Spec.NodeName != oldPod.Spec.NodeName {
		errs = append(errs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	if !equality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "may not be changed by a status update"))
	}
	st := &newPod.Status
	system := sets.New(corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized)
	for i, c := range st.Conditions {
		cp := statusPath.Child("conditions").Index(i)
		if c.ObservedGeneration < 0 {
			errs = append(errs, field.Invalid(cp.Child("observedGeneration"), c.ObservedGeneration, "must be a non-negative integer"))
		}
		if !system.Has(c.Type) {
			errs = append(errs, qualifiedName(string(c.Type), cp.Child("Type"))...)
		}
	}
	if st.NominatedNodeName != oldPod.Status.NominatedNodeName && st.NominatedNodeName != "" {
		errs = append(errs, nameErrs(nameIsSubdomain, st.NominatedNodeName, statusPath.Child("nominatedNodeName"))...)
		if oldPod.Spec.NodeName != "" {
			errs = append(errs, field.Forbidden(statusPath.Child("nominatedNodeName"), "may not be set on pods that are already bound to a node"))
		}
	}
	if st.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(statusPath.Child("observedGeneration"), st.ObservedGeneration, "must be a non-negative integer"))
	}
	errs = append(errs, immutable(st.QOSClass, oldPod.Status.QOSClass, statusPath.Child("qosClass"))...)
	errs = append(errs, validateContainerStatuses(st.ContainerStatuses, statusPath.Child("containerStatuses"))...)
	errs = append(errs, validateContainerStatuses(st.InitContainerStatuses, statusPath.Child("initContainerStatuses"))...)
	errs = append(errs, validateContainerStatuses(st.EphemeralContainerStatuses, statusPath.Child("ephemeralContainerStatuses"))...)
	errs = append(errs, validateStateTransitions(st.ContainerStatuses, oldPod.Status.ContainerStatuses, &oldPod.Spec, false, statusPath.Child("containerStatuses"))...)
	errs = append(errs, validateStateTransitions(st.InitContainerStatuses, oldPod.Status.InitContainerStatuses, &oldPod.Spec, true, statusPath.Child("initContainerStatuses"))...)
	errs = append(errs, validatePodIPs(newPod, oldPod)...)
	errs = append(errs, validateHostIPs(newPod, oldPod)...)
	return errs
}

func validateContainerStatuses(statuses []corev1.ContainerStatus, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range statuses {
		p := fldPath.Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			errs = append(errs, dnsLabel(s.Name, p.Child("name"))...)
		}
		errs = append(errs, nonNegative(int64(s.RestartCount), p.Child("restartCount"))...)
	}
	return errs
}

// validateStateTransitions forbids a terminated container from becoming
// non-terminated unless the pod or container policy restarts it.
func validateStateTransitions(newStatuses, oldStatuses []corev1.ContainerStatus, spec *corev1.PodSpec, init bool, fldPath *field.Path) field.ErrorList {
	containers := spec.Containers
	if init {
		containers = spec.InitContainers
	}
	var errs field.ErrorList
	for i, old := range oldStatuses {
		if old.State.Terminated == nil {
			continue
		}
		for _, n := range newStatuses {
			if n.Name != old.Name || n.State.Terminated != nil {
				continue
			}
			if !mayRestart(old.Name, old.State.Terminated.ExitCode, containers, spec.RestartPolicy, init) {
				errs = append(errs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}

func mayRestart(name string, exitCode int32, containers []corev1.Container, podPolicy corev1.RestartPolicy, init bool) bool {
	for _, c := range containers {
		if c.Name != name {
			continue
		}
		if c.RestartPolicy != nil {
			if len(c.RestartPolicyRules) > 0 {
				return true // rules are evaluated by the node; do not second-guess them here
			}
			switch *c.RestartPolicy {
			case corev1.ContainerRestartPolicyAlways:
				return true
			case corev1.ContainerRestartPolicyOnFailure:
				return exitCode != 0
			default:
				return false
			}
		}
	}
	switch podPolicy {
	case corev1.RestartPolicyAlways:
		return true
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		// Init containers of a Never pod are not restarted either.
		return false
	}
}

func validatePodIPs(pod, oldPod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("status", "podIPs")
	var existing []string
	for _, ip := range oldPod.Status.PodIPs {
		existing = append(existing, ip.IP)
	}
	var ips []string
	for i, ip := range pod.Status.PodIPs {
		errs = append(errs, validIP(p.Index(i), ip.IP, existing)...)
		ips = append(ips, ip.IP)
	}
	if len(ips) > 1 {
		dual, err := netutils.IsDualStackIPStrings(ips)
		if err != nil || !dual || len(ips) > 2 {
			errs = append(errs, field.Invalid(p, pod.Status.PodIPs, "may specify no more than one IP for each IP family"))
		}
	}
	hasIP, hasIPs := pod.Status.PodIP != "", len(pod.Status.PodIPs) > 0
	switch {
	case hasIP != hasIPs:
		errs = append(errs, field.Invalid(p, pod.Status.PodIPs, "podIP and podIPs must either both be set or both be unset"))
	case hasIPs && pod.Status.PodIP != pod.Status.PodIPs[0].IP:
		errs = append(errs, field.Invalid(p.Index(0).Child("ip"), pod.Status.PodIPs[0].IP, "must be equal to `podIP`"))
	}
	return errs
}

func validateHostIPs(pod, oldPod *corev1.Pod) field.ErrorList {
	if len(pod.Status.HostIPs) == 0 {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("status", "hostIPs")
	if pod.Status.HostIP != pod.Status.HostIPs[0].IP {
		errs = append(errs, field.Invalid(p.Index(0).Child("ip"), pod.Status.HostIPs[0].IP, "must be equal to `hostIP`"))
	}
	var existing []string
	for _, ip := range oldPod.Status.HostIPs {
		existing = append(existing, ip.IP)
	}
	var ips []string
	for i, ip := range pod.Status.HostIPs {
		errs = append(errs, validIP(p.Index(i), ip.IP, existing)...)
		ips = append(ips, ip.IP)
	}
	if len(ips) > 1 {
		dual, err := netutils.IsDualStackIPStrings(ips)
		if err != nil || !dual || len(ips) > 2 {
			errs = append(errs, field.Invalid(p, pod.Status.HostIPs, "may specify no more than one IP for each IP family"))
		}
	}
	return errs
}

// ValidatePodBinding validates a Binding of a pod to a node.
func ValidatePodBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	kindPath, namePath := field.NewPath("target", "kind"), field.NewPath("target", "name")
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(kindPath, b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(namePath, ""))
	} else if b.Target.Kind == "" || b.Target.Kind == "Node" {
		errs = append(errs, nameErrs(nameIsSubdomain, b.Target.Name, namePath)...)
	}
	return errs
}

// ValidatePodTemplate validates a PodTemplate on create.
func ValidatePodTemplate(pt *corev1.PodTemplate) field.ErrorList {
	errs := validateMeta(&pt.ObjectMeta, true, nameIsSubdomain, field.NewPath("metadata"))
	return append(errs, ValidatePodTemplateSpec(&pt.Template, field.NewPath("template"))...)
}

// ValidatePodTemplateUpdate validates a PodTemplate update.
func ValidatePodTemplateUpdate(newPT, oldPT *corev1.PodTemplate) field.ErrorList {
	errs := validateMetaUpdate(&newPT.ObjectMeta, &oldPT.ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidatePodTemplateSpec(&newPT.Template, field.NewPath("template"))...)
}
