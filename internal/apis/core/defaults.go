package core

import (
	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// RegisterDefaults installs a defaulting function for every core/v1 kind this
// package covers, and for its List type, into s.
func RegisterDefaults(s *runtime.Scheme) error {
	addDefaulter(s, &corev1.Pod{}, DefaultPod)
	addDefaulter(s, &corev1.PodList{}, listDefaulter(func(l *corev1.PodList) []corev1.Pod { return l.Items }, DefaultPod))
	addDefaulter(s, &corev1.PodTemplate{}, DefaultPodTemplate)
	addDefaulter(s, &corev1.PodTemplateList{}, listDefaulter(func(l *corev1.PodTemplateList) []corev1.PodTemplate { return l.Items }, DefaultPodTemplate))
	addDefaulter(s, &corev1.Service{}, DefaultService)
	addDefaulter(s, &corev1.ServiceList{}, listDefaulter(func(l *corev1.ServiceList) []corev1.Service { return l.Items }, DefaultService))
	addDefaulter(s, &corev1.Endpoints{}, DefaultEndpoints)
	addDefaulter(s, &corev1.EndpointsList{}, listDefaulter(func(l *corev1.EndpointsList) []corev1.Endpoints { return l.Items }, DefaultEndpoints))
	addDefaulter(s, &corev1.Node{}, DefaultNode)
	addDefaulter(s, &corev1.NodeList{}, listDefaulter(func(l *corev1.NodeList) []corev1.Node { return l.Items }, DefaultNode))
	addDefaulter(s, &corev1.Namespace{}, DefaultNamespace)
	addDefaulter(s, &corev1.NamespaceList{}, listDefaulter(func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items }, DefaultNamespace))
	addDefaulter(s, &corev1.Secret{}, DefaultSecret)
	addDefaulter(s, &corev1.SecretList{}, listDefaulter(func(l *corev1.SecretList) []corev1.Secret { return l.Items }, DefaultSecret))
	addDefaulter(s, &corev1.ConfigMap{}, DefaultConfigMap)
	addDefaulter(s, &corev1.ConfigMapList{}, listDefaulter(func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }, DefaultConfigMap))
	addDefaulter(s, &corev1.ServiceAccount{}, DefaultServiceAccount)
	addDefaulter(s, &corev1.ServiceAccountList{}, listDefaulter(func(l *corev1.ServiceAccountList) []corev1.ServiceAccount { return l.Items }, DefaultServiceAccount))
	addDefaulter(s, &corev1.Event{}, DefaultEvent)
	addDefaulter(s, &corev1.EventList{}, listDefaulter(func(l *corev1.EventList) []corev1.Event { return l.Items }, DefaultEvent))
	addDefaulter(s, &corev1.PersistentVolume{}, DefaultPersistentVolume)
	addDefaulter(s, &corev1.PersistentVolumeList{}, listDefaulter(func(l *corev1.PersistentVolumeList) []corev1.PersistentVolume { return l.Items }, DefaultPersistentVolume))
	addDefaulter(s, &corev1.PersistentVolumeClaim{}, DefaultPersistentVolumeClaim)
	addDefaulter(s, &corev1.PersistentVolumeClaimList{}, listDefaulter(func(l *corev1.PersistentVolumeClaimList) []corev1.PersistentVolumeClaim { return l.Items }, DefaultPersistentVolumeClaim))
	addDefaulter(s, &corev1.ResourceQuota{}, DefaultResourceQuota)
	addDefaulter(s, &corev1.ResourceQuotaList{}, listDefaulter(func(l *corev1.ResourceQuotaList) []corev1.ResourceQuota { return l.Items }, DefaultResourceQuota))
	addDefaulter(s, &corev1.LimitRange{}, DefaultLimitRange)
	addDefaulter(s, &corev1.LimitRangeList{}, listDefaulter(func(l *corev1.LimitRangeList) []corev1.LimitRange { return l.Items }, DefaultLimitRange))
	addDefaulter(s, &corev1.ReplicationController{}, DefaultReplicationController)
	addDefaulter(s, &corev1.ReplicationControllerList{}, listDefaulter(func(l *corev1.ReplicationControllerList) []corev1.ReplicationController { return l.Items }, DefaultReplicationController))
	return nil
}

func addDefaulter[T runtime.Object](s *runtime.Scheme, obj T, fn func(T)) {
	s.AddTypeDefaultingFunc(obj, func(o interface{}) { fn(o.(T)) })
}

// listDefaulter applies an item defaulter to every element of a list.
func listDefaulter[L any, I any](items func(*L) []I, fn func(*I)) func(*L) {
	return func(l *L) {
		it := items(l)
		for i := range it {
			fn(&it[i])
		}
	}
}

// defaultResourceList rounds every quantity up to milli precision, as the
// API has always stored them.
func defaultResourceList(rl corev1.ResourceList) {
	for name, q := range rl {
		q.RoundUp(resource.Milli)
		rl[name] = q
	}
}

// DefaultPod applies the core/v1 defaults to a Pod: the pod-only defaults
// (negative grace period, requests from limits, service links, host-network
// ports), then everything DefaultPodSpec does, then status defaults.
func DefaultPod(pod *corev1.Pod) {
	spec := &pod.Spec
	if spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds < 0 {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	}
	requestsFromLimits(spec.Containers)
	requestsFromLimits(spec.InitContainers)
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	if spec.HostNetwork {
		hostPortsFromContainerPorts(spec.Containers)
		hostPortsFromContainerPorts(spec.InitContainers)
	}

	DefaultPodSpec(spec)
	defaultPodStatus(&pod.Status)
}

// requestsFromLimits copies each limit into requests where no request for the
// resource is given. Upstream does this for Pods only, not for templates.
func requestsFromLimits(containers []corev1.Container) {
	for i := range containers {
		res := &containers[i].Resources
		if res.Limits == nil {
			continue
		}
		if res.Requests == nil {
			res.Requests = corev1.ResourceList{}
		}
		for name, q := range res.Limits {
			if _, ok := res.Requests[name]; !ok {
				res.Requests[name] = q.DeepCopy()
			}
		}
	}
}

// hostPortsFromContainerPorts sets hostPort = containerPort where hostPort is
// unset; used when the pod shares the host network.
func hostPortsFromContainerPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			p := &containers[i].Ports[j]
			if p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
}

func defaultPodStatus(st *corev1.PodStatus) {
	hasIP, hasIPs := st.PodIP != "", len(st.PodIPs) > 0
	switch {
	case hasIP && !hasIPs:
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	case !hasIP && hasIPs:
		st.PodIP = st.PodIPs[0].IP
	case hasIP && hasIPs && st.PodIPs[0].IP != st.PodIP:
		// The singular field wins: older kubelets only set it.
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	for _, statuses := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range statuses {
			defaultResourceList(statuses[i].AllocatedResources)
			if r := statuses[i].Resources; r != nil {
				defaultResourceList(r.Limits)
				defaultResourceList(r.Requests)
			}
		}
	}
	defaultResourceList(st.AllocatedResources)
	if st.Resources != nil {
		defaultResourceList(st.Resources.Limits)
		defaultResourceList(st.Resources.Requests)
	}
}

// DefaultPodTemplateSpec applies the defaults of a pod template (used by
// PodTemplate, ReplicationController and the apps/batch workload kinds).
func DefaultPodTemplateSpec(t *corev1.PodTemplateSpec) {
	DefaultPodSpec(&t.Spec)
}

// DefaultPodSpec applies the spec-level defaults (restartPolicy, dnsPolicy,
// securityContext, grace period, scheduler name, service account alias) and
// recurses into volumes and containers as upstream's generated defaulters do.
// The pod-only defaults live in DefaultPod.
func DefaultPodSpec(spec *corev1.PodSpec) {
	//nolint:staticcheck // the deprecated alias must stay in sync with serviceAccountName
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName //nolint:staticcheck
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}

	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	defaultResourceList(spec.Overhead)
	if spec.Resources != nil {
		defaultResourceList(spec.Resources.Limits)
		defaultResourceList(spec.Resources.Requests)
	}
}

// pullPolicyFor returns Always for images whose tag is "latest" or that carry
// neither tag nor digest, and IfNotPresent otherwise (including references
// that cannot be parsed; validation reports those).
func pullPolicyFor(image string) corev1.PullPolicy {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return corev1.PullIfNotPresent
	}
	tagged, hasTag := named.(reference.Tagged)
	_, hasDigest := named.(reference.Digested)
	if hasTag && tagged.Tag() == "latest" {
		return corev1.PullAlways
	}
	if !hasTag && !hasDigest {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		vf := c.Env[i].ValueFrom
		if vf == nil {
			continue
		}
		if vf.FieldRef != nil {
			defaultFieldSelector(vf.FieldRef)
		}
		if vf.FileKeyRef != nil && vf.FileKeyRef.Optional == nil {
			vf.FileKeyRef.Optional = ptr.To(false)
		}
	}
	defaultResourceList(c.Resources.Limits)
	defaultResourceList(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p != nil {
			defaultProbe(p)
		}
	}
	if lc := c.Lifecycle; lc != nil {
		for _, h := range []*corev1.LifecycleHandler{lc.PostStart, lc.PreStop} {
			if h != nil && h.HTTPGet != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultProbe(p *corev1.Probe) {
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if p.HTTPGet != nil {
		defaultHTTPGet(p.HTTPGet)
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

func defaultHTTPGet(a *corev1.HTTPGetAction) {
	if a.Path == "" {
		a.Path = "/"
	}
	if a.Scheme == "" {
		a.Scheme = corev1.URISchemeHTTP
	}
}

func defaultFieldSelector(fs *corev1.ObjectFieldSelector) {
	if fs.APIVersion == "" {
		fs.APIVersion = "v1"
	}
}

// isVolumeSourceEmpty reports whether no volume source member is set.
func isVolumeSourceEmpty(vs *corev1.VolumeSource) bool {
	return len(volumeSourceKinds(vs)) == 0
}

func defaultVolume(v *corev1.Volume) {
	vs := &v.VolumeSource
	if isVolumeSourceEmpty(vs) {
		vs.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if vs.Image != nil && vs.Image.PullPolicy == "" {
		vs.Image.PullPolicy = pullPolicyFor(vs.Image.Reference)
	}
	if vs.HostPath != nil && vs.HostPath.Type == nil {
		vs.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if vs.Secret != nil && vs.Secret.DefaultMode == nil {
		vs.Secret.DefaultMode = ptr.To[int32](corev1.SecretVolumeSourceDefaultMode)
	}
	if vs.ConfigMap != nil && vs.ConfigMap.DefaultMode == nil {
		vs.ConfigMap.DefaultMode = ptr.To[int32](corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if d := vs.DownwardAPI; d != nil {
		if d.DefaultMode == nil {
			d.DefaultMode = ptr.To[int32](corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range d.Items {
			if d.Items[i].FieldRef != nil {
				defaultFieldSelector(d.Items[i].FieldRef)
			}
		}
	}
	if p := vs.Projected; p != nil {
		if p.DefaultMode == nil {
			p.DefaultMode = ptr.To[int32](corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range p.Sources {
			src := &p.Sources[i]
			if src.DownwardAPI != nil {
				for j := range src.DownwardAPI.Items {
					if src.DownwardAPI.Items[j].FieldRef != nil {
						defaultFieldSelector(src.DownwardAPI.Items[j].FieldRef)
					}
				}
			}
			if src.ServiceAccountToken != nil && src.ServiceAccountToken.ExpirationSeconds == nil {
				src.ServiceAccountToken.ExpirationSeconds = ptr.To[int64](3600)
			}
		}
	}
	if vs.ISCSI != nil && vs.ISCSI.ISCSIInterface == "" {
		vs.ISCSI.ISCSIInterface = "default"
	}
	if r := vs.RBD; r != nil {
		defaultRBD(&r.RBDPool, &r.RadosUser, &r.Keyring)
	}
	if a := vs.AzureDisk; a != nil {
		defaultAzureDisk(a)
	}
	if s := vs.ScaleIO; s != nil {
		defaultScaleIO(&s.StorageMode, &s.FSType)
	}
	if e := vs.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		defaultPVCSpec(&e.VolumeClaimTemplate.Spec)
	}
}

func defaultRBD(pool, user, keyring *string) {
	if *pool == "" {
		*pool = "rbd"
	}
	if *user == "" {
		*user = "admin"
	}
	if *keyring == "" {
		*keyring = "/etc/ceph/keyring"
	}
}

func defaultAzureDisk(a *corev1.AzureDiskVolumeSource) {
	if a.CachingMode == nil {
		a.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
	}
	if a.FSType == nil {
		a.FSType = ptr.To("ext4")
	}
	if a.ReadOnly == nil {
		a.ReadOnly = ptr.To(false)
	}
	if a.Kind == nil {
		a.Kind = ptr.To(corev1.AzureSharedBlobDisk)
	}
}

func defaultScaleIO(mode, fsType *string) {
	if *mode == "" {
		*mode = "ThinProvisioned"
	}
	if *fsType == "" {
		*fsType = "xfs"
	}
}

func defaultPVCSpec(spec *corev1.PersistentVolumeClaimSpec) {
	if spec.VolumeMode == nil {
		spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	defaultResourceList(spec.Resources.Limits)
	defaultResourceList(spec.Resources.Requests)
}

// DefaultPodTemplate applies the pod template defaults to a PodTemplate.
func DefaultPodTemplate(pt *corev1.PodTemplate) {
	DefaultPodTemplateSpec(&pt.Template)
}

// DefaultReplicationController copies the template labels into an empty
// selector and empty object labels, defaults replicas to 1 and defaults the
// template.
func DefaultReplicationController(rc *corev1.ReplicationController) {
	if t := rc.Spec.Template; t != nil && t.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = t.Labels
		}
		if len(rc.Labels) == 0 {
			rc.Labels = t.Labels
		}
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
	if rc.Spec.Template != nil {
		DefaultPodTemplateSpec(rc.Spec.Template)
	}
}

// DefaultService applies the core/v1 Service defaults: session affinity,
// type, port protocol and target port, traffic policies, load balancer node
// port allocation and load balancer ingress IP mode. IP families are not
// defaulted here; see DefaultServiceIPFamilies.
func DefaultService(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		c := spec.SessionAffinityConfig
		if c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)},
			}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(svc) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil {
		switch spec.Type {
		case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
			spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
		}
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			spec.AllocateLoadBalancerNodePorts = ptr.To(true)
		}
		for i := range svc.Status.LoadBalancer.Ingress {
			ing := &svc.Status.LoadBalancer.Ingress[i]
			if ing.IP != "" && ing.IPMode == nil {
				ing.IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
}

// externallyAccessible reports whether traffic can reach the service from
// outside the cluster network (node ports, a load balancer or external IPs).
func externallyAccessible(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeClusterIP:
		return len(svc.Spec.ExternalIPs) > 0
	}
	return false
}

// needsHealthCheck reports whether the service needs a health check node port
// (LoadBalancer with externalTrafficPolicy Local).
func needsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// DefaultEndpoints defaults each endpoint port protocol to TCP.
func DefaultEndpoints(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if ep.Subsets[i].Ports[j].Protocol == "" {
				ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

// DefaultNode keeps spec.podCIDR and spec.podCIDRs in step (upstream does
// this in v1 conversion), copies capacity into an unset allocatable and
// rounds the resource lists; nothing else on a Node is defaulted.
func DefaultNode(n *corev1.Node) {
	switch {
	case len(n.Spec.PodCIDRs) == 0 && n.Spec.PodCIDR != "":
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	case len(n.Spec.PodCIDRs) > 0 && n.Spec.PodCIDR == "":
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
	st := &n.Status
	if st.Allocatable == nil && st.Capacity != nil {
		st.Allocatable = make(corev1.ResourceList, len(st.Capacity))
		for name, q := range st.Capacity {
			st.Allocatable[name] = q.DeepCopy()
		}
	}
	defaultResourceList(st.Capacity)
	defaultResourceList(st.Allocatable)
}

// DefaultNamespace sets the kubernetes.io/metadata.name label to the name
// (when the name is known) and defaults status.phase to Active.
//
// The "kubernetes" finalizer is not a defaulting concern upstream: the
// namespace registry adds it on create (see NamespaceFinalizers).
func DefaultNamespace(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// NamespaceFinalizers sets spec.finalizers to ["kubernetes"] when the
// finalizer is missing, as the upstream namespace registry does on create.
func NamespaceFinalizers(ns *corev1.Namespace) {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

// DefaultSecret defaults the secret type to Opaque.
//
// It also folds the write-only stringData into data (stringData wins), as
// upstream's v1 conversion does, so stored and served secrets never carry
// stringData.
func DefaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}

// DefaultConfigMap makes a nil data map empty.
func DefaultConfigMap(cm *corev1.ConfigMap) {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
}

// DefaultServiceAccount is a no-op: upstream has no ServiceAccount defaults.
// It exists so that every served kind has a defaulter.
func DefaultServiceAccount(*corev1.ServiceAccount) {}

// DefaultEvent is a no-op: upstream has no core/v1 Event defaults.
func DefaultEvent(*corev1.Event) {}

// DefaultPersistentVolume defaults status.phase Pending, reclaim policy
// Retain, volumeMode Filesystem and the volume source defaults.
func DefaultPersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	defaultResourceList(pv.Spec.Capacity)
	src := &pv.Spec.PersistentVolumeSource
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if r := src.RBD; r != nil {
		defaultRBD(&r.RBDPool, &r.RadosUser, &r.Keyring)
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
	if a := src.AzureDisk; a != nil {
		defaultAzureDisk(a)
	}
	if s := src.ScaleIO; s != nil {
		defaultScaleIO(&s.StorageMode, &s.FSType)
	}
}

// DefaultPersistentVolumeClaim defaults status.phase Pending and volumeMode
// Filesystem.
func DefaultPersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
	defaultPVCSpec(&pvc.Spec)
	defaultResourceList(pvc.Status.Capacity)
	defaultResourceList(pvc.Status.AllocatedResources)
}

// DefaultResourceQuota rounds the quota resource lists.
func DefaultResourceQuota(q *corev1.ResourceQuota) {
	defaultResourceList(q.Spec.Hard)
	defaultResourceList(q.Status.Hard)
	defaultResourceList(q.Status.Used)
}

// DefaultLimitRange fills, for Container limits, default from max, then
// defaultRequest from default, then defaultRequest from min.
func DefaultLimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type == corev1.LimitTypeContainer {
			if item.Default == nil {
				item.Default = corev1.ResourceList{}
			}
			if item.DefaultRequest == nil {
				item.DefaultRequest = corev1.ResourceList{}
			}
			fillMissing(item.Default, item.Max)
			fillMissing(item.DefaultRequest, item.Default)
			fillMissing(item.DefaultRequest, item.Min)
		}
		defaultResourceList(item.Max)
		defaultResourceList(item.Min)
		defaultResourceList(item.Default)
		defaultResourceList(item.DefaultRequest)
		defaultResourceList(item.MaxLimitRequestRatio)
	}
}

func fillMissing(dst, src corev1.ResourceList) {
	for name, q := range src {
		if _, ok := dst[name]; !ok {
			dst[name] = q.DeepCopy()
		}
	}
}
