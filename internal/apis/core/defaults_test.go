package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestDefaultPodEmpty(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	DefaultPod(pod)
	want := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "c", Image: "nginx",
			ImagePullPolicy:          corev1.PullAlways,
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		DNSPolicy:                     corev1.DNSClusterFirst,
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		SchedulerName:                 "default-scheduler",
		SecurityContext:               &corev1.PodSecurityContext{},
		EnableServiceLinks:            ptr.To(true),
	}}
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Fatalf("defaulted pod mismatch (-want +got):\n%s", diff)
	}
}

func TestDefaultPodKeepsExplicitValues(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "c", Image: "nginx", ImagePullPolicy: corev1.PullNever,
			TerminationMessagePath: "/tmp/x", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
		RestartPolicy:                 corev1.RestartPolicyNever,
		DNSPolicy:                     corev1.DNSDefault,
		TerminationGracePeriodSeconds: ptr.To[int64](5),
		SchedulerName:                 "other",
		SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
		EnableServiceLinks:            ptr.To(false),
	}}
	want := pod.DeepCopy()
	DefaultPod(pod)
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Fatalf("explicit values changed (-want +got):\n%s", diff)
	}
}

func TestPullPolicyDefault(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"docker.io/library/nginx:latest", corev1.PullAlways},
		{"nginx:1.25", corev1.PullIfNotPresent},
		{"registry.local:5000/app:v1", corev1.PullIfNotPresent},
		{"registry.local:5000/app", corev1.PullAlways},
		{"nginx@sha256:" + sha, corev1.PullIfNotPresent},
		{"nginx:latest@sha256:" + sha, corev1.PullAlways},
		{"Not A Valid Ref", corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: tt.image}}}
			DefaultPodSpec(spec)
			if got := spec.Containers[0].ImagePullPolicy; got != tt.want {
				t.Fatalf("pull policy for %q = %s, want %s", tt.image, got, tt.want)
			}
		})
	}
}

const sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func TestDefaultPodNested(t *testing.T) {
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{
			HostNetwork: true,
			Volumes: []corev1.Volume{
				{Name: "empty"},
				{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
				{Name: "dapi", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
					Items: []corev1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
				{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
				{Name: "hp", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}},
				{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
					VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}},
			},
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			Containers: []corev1.Container{{
				Name: "c", Image: "app:v1",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				Env:   []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}},
				Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(1)}}},
			}},
		},
		Status: corev1.PodStatus{PodIP: "10.0.0.1"},
	}
	DefaultPod(pod)

	vols := pod.Spec.Volumes
	if vols[0].EmptyDir == nil {
		t.Errorf("volume without source not defaulted to emptyDir")
	}
	if got := *vols[1].ConfigMap.DefaultMode; got != 0o644 {
		t.Errorf("configMap defaultMode = %o, want 644", got)
	}
	if got := *vols[2].Secret.DefaultMode; got != 0o644 {
		t.Errorf("secret defaultMode = %o, want 644", got)
	}
	if got := *vols[3].DownwardAPI.DefaultMode; got != 0o644 {
		t.Errorf("downwardAPI defaultMode = %o, want 644", got)
	}
	if got := vols[3].DownwardAPI.Items[0].FieldRef.APIVersion; got != "v1" {
		t.Errorf("downwardAPI fieldRef apiVersion = %q, want v1", got)
	}
	if got := *vols[4].Projected.DefaultMode; got != 0o644 {
		t.Errorf("projected defaultMode = %o, want 644", got)
	}
	if got := *vols[4].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds; got != 3600 {
		t.Errorf("token expirationSeconds = %d, want 3600", got)
	}
	if got := *vols[5].HostPath.Type; got != corev1.HostPathUnset {
		t.Errorf("hostPath type = %q, want empty HostPathUnset", got)
	}
	if got := *vols[6].Ephemeral.VolumeClaimTemplate.Spec.VolumeMode; got != corev1.PersistentVolumeFilesystem {
		t.Errorf("ephemeral claim volumeMode = %q", got)
	}

	c := pod.Spec.Containers[0]
	if c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("tagged image pull policy = %s", c.ImagePullPolicy)
	}
	if c.Ports[0].Protocol != corev1.ProtocolTCP || c.Ports[0].HostPort != 8080 {
		t.Errorf("port = %+v, want TCP and hostPort 8080 under hostNetwork", c.Ports[0])
	}
	if c.Env[0].ValueFrom.FieldRef.APIVersion != "v1" {
		t.Errorf("env fieldRef apiVersion not defaulted")
	}
	if got := c.Resources.Requests.Cpu().String(); got != "100m" {
		t.Errorf("explicit cpu request overwritten: %s", got)
	}
	if got := c.Resources.Requests.Memory().String(); got != "128Mi" {
		t.Errorf("memory request not defaulted from limit: %s", got)
	}
	if got := pod.Spec.InitContainers[0].Resources.Requests.Cpu().String(); got != "1" {
		t.Errorf("init container request not defaulted from limit: %s", got)
	}
	lp := c.LivenessProbe
	if lp.TimeoutSeconds != 1 || lp.PeriodSeconds != 10 || lp.SuccessThreshold != 1 || lp.FailureThreshold != 3 {
		t.Errorf("probe defaults = %+v", lp)
	}
	if lp.HTTPGet.Path != "/" || lp.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Errorf("httpGet defaults = %+v", lp.HTTPGet)
	}
	if c.ReadinessProbe.GRPC.Service == nil || *c.ReadinessProbe.GRPC.Service != "" {
		t.Errorf("grpc service not defaulted to empty string")
	}
	if c.Lifecycle.PreStop.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Errorf("lifecycle httpGet scheme not defaulted")
	}
	if len(pod.Status.PodIPs) != 1 || pod.Status.PodIPs[0].IP != "10.0.0.1" {
		t.Errorf("podIPs not defaulted from podIP: %+v", pod.Status.PodIPs)
	}
}

func TestDefaultPodGracePeriodAndTemplateDifferences(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](-5)}}
	DefaultPod(pod)
	if got := *pod.Spec.TerminationGracePeriodSeconds; got != 1 {
		t.Errorf("negative grace period on a pod = %d, want 1", got)
	}

	// Templates keep requests unset and do not get pod-only defaults.
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](-5),
		HostNetwork:                   true,
		Containers: []corev1.Container{{Name: "c", Image: "x",
			Ports:     []corev1.ContainerPort{{ContainerPort: 80}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
	}}
	DefaultPodTemplateSpec(tmpl)
	if got := *tmpl.Spec.TerminationGracePeriodSeconds; got != -5 {
		t.Errorf("template grace period changed to %d", got)
	}
	if tmpl.Spec.Containers[0].Resources.Requests != nil {
		t.Errorf("template got requests from limits")
	}
	if tmpl.Spec.Containers[0].Ports[0].HostPort != 0 {
		t.Errorf("template got host port defaulted")
	}
	if tmpl.Spec.EnableServiceLinks != nil {
		t.Errorf("template got enableServiceLinks")
	}
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("template restartPolicy not defaulted")
	}
}

func TestDefaultersIdempotent(t *testing.T) {
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{
			HostNetwork: true,
			Volumes:     []corev1.Volume{{Name: "v"}, {Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}},
			Containers: []corev1.Container{{Name: "c", Image: "x",
				Ports:         []corev1.ContainerPort{{ContainerPort: 80}},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
				Resources:     corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
		},
	}
	DefaultPod(pod)
	once := pod.DeepCopy()
	DefaultPod(pod)
	if diff := cmp.Diff(once, pod); diff != "" {
		t.Errorf("pod defaulting not idempotent:\n%s", diff)
	}

	svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityClientIP,
		Ports: []corev1.ServicePort{{Port: 80}}}}
	DefaultService(svc)
	onceSvc := svc.DeepCopy()
	DefaultService(svc)
	if diff := cmp.Diff(onceSvc, svc); diff != "" {
		t.Errorf("service defaulting not idempotent:\n%s", diff)
	}
}

func TestDefaultService(t *testing.T) {
	cluster := corev1.ServiceInternalTrafficPolicyCluster
	tests := []struct {
		name string
		in   corev1.ServiceSpec
		want corev1.ServiceSpec
	}{{
		name: "empty ClusterIP service",
		in:   corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		want: corev1.ServiceSpec{
			Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
			SessionAffinity:       corev1.ServiceAffinityNone,
			Type:                  corev1.ServiceTypeClusterIP,
			InternalTrafficPolicy: &cluster,
		},
	}, {
		name: "named target port kept, UDP kept",
		in:   corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}}},
		want: corev1.ServiceSpec{
			Ports:                 []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}},
			SessionAffinity:       corev1.ServiceAffinityNone,
			Type:                  corev1.ServiceTypeClusterIP,
			InternalTrafficPolicy: &cluster,
		},
	}, {
		name: "NodePort gets external policy",
		in:   corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, SessionAffinity: corev1.ServiceAffinityNone,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster, InternalTrafficPolicy: &cluster,
		},
	}, {
		name: "LoadBalancer allocates node ports",
		in:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityNone,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster, InternalTrafficPolicy: &cluster,
			AllocateLoadBalancerNodePorts: ptr.To(true),
		},
	}, {
		name: "ClientIP affinity gets timeout",
		in:   corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityClientIP},
		want: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityClientIP, InternalTrafficPolicy: &cluster,
			SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)}},
		},
	}, {
		name: "None affinity drops config",
		in: corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityNone,
			SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](5)}}},
		want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: &cluster},
	}, {
		name: "ExternalName gets no traffic policies",
		in:   corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"},
		want: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com", SessionAffinity: corev1.ServiceAffinityNone},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{Spec: tt.in}
			DefaultService(svc)
			if diff := cmp.Diff(tt.want, svc.Spec); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultServiceIPFamilies(t *testing.T) {
	single, require := corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyRequireDualStack
	tests := []struct {
		name       string
		spec       corev1.ServiceSpec
		wantPolicy *corev1.IPFamilyPolicy
		wantFams   []corev1.IPFamily
	}{
		{"plain ClusterIP", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}, &single, []corev1.IPFamily{corev1.IPv4Protocol}},
		{"headless with selector", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", Selector: map[string]string{"a": "b"}},
			&single, []corev1.IPFamily{corev1.IPv4Protocol}},
		{"headless without selector", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None"},
			&require, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}},
		{"headless without selector, SingleStack asked", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", IPFamilyPolicy: &single},
			&single, []corev1.IPFamily{corev1.IPv4Protocol}},
		{"ExternalName untouched", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}, nil, nil},
		{"explicit kept", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, IPFamilyPolicy: &require, IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol}},
			&require, []corev1.IPFamily{corev1.IPv6Protocol}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{Spec: tt.spec}
			DefaultServiceIPFamilies(svc)
			if diff := cmp.Diff(tt.wantPolicy, svc.Spec.IPFamilyPolicy); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFams, svc.Spec.IPFamilies); diff != "" {
				t.Errorf("families (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeServiceClusterIPs(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.10"}}
	NormalizeServiceClusterIPs(svc, nil)
	if diff := cmp.Diff([]string{"10.0.0.10"}, svc.Spec.ClusterIPs); diff != "" {
		t.Errorf("create: %s", diff)
	}
	old := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.10", ClusterIPs: []string{"10.0.0.10"}}}
	upd := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.10"}}
	NormalizeServiceClusterIPs(upd, old)
	if diff := cmp.Diff([]string{"10.0.0.10"}, upd.Spec.ClusterIPs); diff != "" {
		t.Errorf("update omitting clusterIPs: %s", diff)
	}
	cleared := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIPs: []string{"10.0.0.10"}}}
	NormalizeServiceClusterIPs(cleared, old)
	if cleared.Spec.ClusterIPs != nil {
		t.Errorf("clearing clusterIP should clear clusterIPs, got %v", cleared.Spec.ClusterIPs)
	}
}

func TestDefaultOtherKinds(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	DefaultNamespace(ns)
	if ns.Status.Phase != corev1.NamespaceActive || ns.Labels[corev1.LabelMetadataName] != "team" {
		t.Errorf("namespace defaults: %+v", ns)
	}
	if len(ns.Spec.Finalizers) != 0 {
		t.Errorf("scheme defaulting must not add the kubernetes finalizer (it would come back after removal)")
	}
	NamespaceFinalizers(ns)
	NamespaceFinalizers(ns)
	if diff := cmp.Diff([]corev1.FinalizerName{corev1.FinalizerKubernetes}, ns.Spec.Finalizers); diff != "" {
		t.Errorf("NamespaceFinalizers: %s", diff)
	}

	sec := &corev1.Secret{}
	DefaultSecret(sec)
	if sec.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret type = %q", sec.Type)
	}

	pv := &corev1.PersistentVolume{}
	DefaultPersistentVolume(pv)
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || pv.Status.Phase != corev1.VolumePending {
		t.Errorf("pv defaults: %+v", pv)
	}

	pvc := &corev1.PersistentVolumeClaim{}
	DefaultPersistentVolumeClaim(pvc)
	if *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || pvc.Status.Phase != corev1.ClaimPending {
		t.Errorf("pvc defaults: %+v", pvc)
	}

	ep := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}}}}
	DefaultEndpoints(ep)
	if ep.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("endpoint port protocol not defaulted")
	}

	cm := &corev1.ConfigMap{}
	DefaultConfigMap(cm)
	if cm.Data == nil {
		t.Errorf("configmap data not initialised")
	}

	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	DefaultNode(node)
	if got := node.Status.Allocatable.Cpu().String(); got != "2" {
		t.Errorf("node allocatable = %s, want copy of capacity", got)
	}
	node.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("4")
	if got := node.Status.Allocatable.Cpu().String(); got != "2" {
		t.Errorf("allocatable aliases capacity")
	}
	cidr := &corev1.Node{Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}}
	DefaultNode(cidr)
	if len(cidr.Spec.PodCIDRs) != 1 || cidr.Spec.PodCIDRs[0] != "10.42.0.0/24" {
		t.Errorf("podCIDRs not filled from podCIDR: %v", cidr.Spec.PodCIDRs)
	}
	cidrs := &corev1.Node{Spec: corev1.NodeSpec{PodCIDRs: []string{"10.42.1.0/24", "fd00:42::/64"}}}
	DefaultNode(cidrs)
	if cidrs.Spec.PodCIDR != "10.42.1.0/24" {
		t.Errorf("podCIDR not filled from podCIDRs: %q", cidrs.Spec.PodCIDR)
	}
}

func TestDefaultLimitRange(t *testing.T) {
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{
			Type: corev1.LimitTypeContainer,
			Max:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Min:  corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
			DefaultRequest: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("256Mi"),
			},
		},
		{Type: corev1.LimitTypePod, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
	}}}
	DefaultLimitRange(lr)
	c := lr.Spec.Limits[0]
	want := map[string]string{"cpu": "2", "memory": "1Gi"}
	for name, q := range want {
		if got := c.Default[corev1.ResourceName(name)]; got.String() != q {
			t.Errorf("default[%s] = %s, want %s", name, got.String(), q)
		}
	}
	wantReq := map[string]string{"cpu": "2", "memory": "256Mi", "ephemeral-storage": "1Gi"}
	for name, q := range wantReq {
		if got := c.DefaultRequest[corev1.ResourceName(name)]; got.String() != q {
			t.Errorf("defaultRequest[%s] = %s, want %s", name, got.String(), q)
		}
	}
	if lr.Spec.Limits[1].Default != nil {
		t.Errorf("pod limit got defaults")
	}
}

func TestDefaultReplicationController(t *testing.T) {
	rc := &corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{
		Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x:1"}}},
		},
	}}
	DefaultReplicationController(rc)
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || *rc.Spec.Replicas != 1 {
		t.Errorf("rc defaults: %+v", rc)
	}
	if rc.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("rc template not defaulted")
	}
}

func TestRegisterDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	list := &corev1.PodList{Items: []corev1.Pod{{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	s.Default(list)
	if list.Items[0].Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("PodList items not defaulted through the scheme")
	}
	objs := []runtime.Object{
		&corev1.Pod{}, &corev1.PodTemplate{}, &corev1.Service{}, &corev1.Endpoints{}, &corev1.Node{}, &corev1.Namespace{},
		&corev1.Secret{}, &corev1.ConfigMap{}, &corev1.ServiceAccount{}, &corev1.Event{}, &corev1.PersistentVolume{},
		&corev1.PersistentVolumeClaim{}, &corev1.ResourceQuota{}, &corev1.LimitRange{}, &corev1.ReplicationController{},
		&corev1.PodList{}, &corev1.PodTemplateList{}, &corev1.ServiceList{}, &corev1.EndpointsList{}, &corev1.NodeList{},
		&corev1.NamespaceList{}, &corev1.SecretList{}, &corev1.ConfigMapList{}, &corev1.ServiceAccountList{}, &corev1.EventList{},
		&corev1.PersistentVolumeList{}, &corev1.PersistentVolumeClaimList{}, &corev1.ResourceQuotaList{}, &corev1.LimitRangeList{},
		&corev1.ReplicationControllerList{},
	}
	for _, o := range objs {
		s.Default(o) // must not panic on a zero object
	}
	sec := &corev1.Secret{}
	s.Default(sec)
	if sec.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret not defaulted through the scheme")
	}
}
