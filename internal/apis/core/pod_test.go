package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// validPod returns a defaulted pod that passes validation.
func validPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "default",
			Volumes: []corev1.Volume{
				{Name: "data"},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
					Items:                []corev1.KeyToPath{{Key: "a", Path: "conf/a"}},
				}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
				}}}},
			},
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"true"}}},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.local/app:v1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Env: []corev1.EnvVar{
					{Name: "PLAIN", Value: "x"},
					{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
					{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
					{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
				},
				EnvFrom: []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi"), "example.com/gpu": resource.MustParse("1")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/data", SubPath: "sub"},
					{Name: "cfg", MountPath: "/etc/app", ReadOnly: true},
					{Name: "token", MountPath: "/var/run/token"},
				},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, SuccessThreshold: 2},
				StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
				Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}},
			}},
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Operator: corev1.TolerationOpExists},
			},
			Affinity: &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}},
			},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
			HostAliases: []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db.local"}}},
			DNSConfig:   &corev1.PodDNSConfig{Searches: []string{"svc.cluster.local."}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}},
		},
	}
	DefaultPod(pod)
	return pod
}

func TestValidatePodValid(t *testing.T) {
	expectErrs(t, ValidatePod(validPod()))

	sidecar := validPod()
	sidecar.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	sidecar.Spec.InitContainers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	expectErrs(t, ValidatePod(sidecar))
}

func TestValidatePodInvalid(t *testing.T) {
	c0 := "spec.containers[0]"
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []e
	}{
		{"no name", func(p *corev1.Pod) { p.Name = "" }, []e{required("metadata.name")}},
		{"no namespace", func(p *corev1.Pod) { p.Namespace = "" }, []e{required("metadata.namespace")}},
		{"bad label", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "-bad-"} }, []e{invalid("metadata.labels")}},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil }, []e{required("spec.containers")}},
		{"container name not a DNS label", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App_1" }, []e{invalid(c0 + ".name")}},
		{"container name missing", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" }, []e{required(c0 + ".name")}},
		{"init name clashes with container", func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = "app" }, []e{duplicate("spec.initContainers[0].name")}},
		{"duplicate container names", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, *p.Spec.Containers[0].DeepCopy())
			p.Spec.Containers[1].Ports = nil
		}, []e{duplicate("spec.containers[1].name")}},
		{"image missing", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, []e{required(c0 + ".image")}},
		{"image with whitespace", func(p *corev1.Pod) { p.Spec.Containers[0].Image = " app:v1" }, []e{invalid(c0 + ".image")}},
		{"containerPort missing", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }, []e{required(c0 + ".ports[0].containerPort")}},
		{"containerPort too big", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, []e{invalid(c0 + ".ports[0].containerPort")}},
		{"hostPort too big", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 65536 }, []e{invalid(c0 + ".ports[0].hostPort")}},
		{"bad protocol", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" }, []e{notSupported(c0 + ".ports[0].protocol")}},
		{"bad port name", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Name = "http_port" }, []e{invalid(c0 + ".ports[0].name")}},
		{"duplicate port name", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "http", ContainerPort: 9090, Protocol: corev1.ProtocolTCP})
		}, []e{duplicate(c0 + ".ports[1].name")}},
		{"host port conflict", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports[0].HostPort = 80
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 9090, HostPort: 80, Protocol: corev1.ProtocolTCP})
		}, []e{duplicate(c0 + ".ports[1].hostPort")}},
		{"hostNetwork hostPort mismatch", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 80
		}, []e{invalid(c0 + ".ports[0].hostPort")}},
		{"env name missing", func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Name = "" }, []e{required(c0 + ".env[0].name")}},
		{"env name with =", func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Name = "A=B" }, []e{invalid(c0 + ".env[0].name")}},
		{"valueFrom with value", func(p *corev1.Pod) { p.Spec.Containers[0].Env[1].Value = "x" }, []e{invalid(c0 + ".env[1].valueFrom")}},
		{"valueFrom empty", func(p *corev1.Pod) { p.Spec.Containers[0].Env[1].ValueFrom = &corev1.EnvVarSource{} }, []e{invalid(c0 + ".env[1].valueFrom")}},
		{"valueFrom two sources", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[1].ValueFrom.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}
		}, []e{invalid(c0 + ".env[1].valueFrom")}},
		{"fieldRef unknown path", func(p *corev1.Pod) { p.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath = "spec.nodeSelector" },
			[]e{invalid(c0 + ".env[1].valueFrom.fieldRef.fieldPath")}},
		{"fieldRef path not for env", func(p *corev1.Pod) { p.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath = "metadata.labels" },
			[]e{notSupported(c0 + ".env[1].valueFrom.fieldRef.fieldPath")}},
		{"fieldRef subscripted label", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath = "metadata.labels['app']"
		}, nil},
		{"fieldRef apiVersion", func(p *corev1.Pod) { p.Spec.Containers[0].Env[1].ValueFrom.FieldRef.APIVersion = "v2" },
			[]e{invalid(c0 + ".env[1].valueFrom.fieldRef.fieldPath")}},
		{"resourceFieldRef bad resource", func(p *corev1.Pod) { p.Spec.Containers[0].Env[2].ValueFrom.ResourceFieldRef.Resource = "limits.gpu" },
			[]e{notSupported(c0 + ".env[2].valueFrom.resourceFieldRef.resource")}},
		{"resourceFieldRef bad divisor", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[2].ValueFrom.ResourceFieldRef.Divisor = resource.MustParse("3")
		}, []e{invalid(c0 + ".env[2].valueFrom.resourceFieldRef.divisor")}},
		{"secretKeyRef no key", func(p *corev1.Pod) { p.Spec.Containers[0].Env[3].ValueFrom.SecretKeyRef.Key = "" },
			[]e{required(c0 + ".env[3].valueFrom.secretKeyRef.key")}},
		{"envFrom no source", func(p *corev1.Pod) { p.Spec.Containers[0].EnvFrom[0].ConfigMapRef = nil }, []e{invalid(c0 + ".envFrom")}},
		{"envFrom bad prefix", func(p *corev1.Pod) { p.Spec.Containers[0].EnvFrom[0].Prefix = "A=" }, []e{invalid(c0 + ".envFrom[0].prefix")}},
		{"envFrom no name", func(p *corev1.Pod) { p.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name = "" }, []e{required(c0 + ".envFrom[0].configMapRef.name")}},
		{"request above limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		},
			[]e{invalid(c0 + ".resources.requests")}},
		{"negative limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("-1")
			delete(p.Spec.Containers[0].Resources.Requests, corev1.ResourceMemory)
		}, []e{invalid(c0 + ".resources.limits[memory]")}},
		{"unknown resource", func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits["gpu"] = resource.MustParse("1") },
			[]e{invalid(c0 + ".resources.limits[gpu]"), invalid(c0 + ".resources.limits[gpu]")}},
		{"extended resource request without limit", func(p *corev1.Pod) {
			delete(p.Spec.Containers[0].Resources.Limits, "example.com/gpu")
		}, []e{required(c0 + ".resources.limits")}},
		{"extended resource fractional", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits["example.com/gpu"] = resource.MustParse("500m")
			p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("500m")
		}, []e{invalid(c0 + ".resources.limits[example.com/gpu]"), invalid(c0 + ".resources.requests[example.com/gpu]")}},
		{"probe without handler", func(p *corev1.Pod) { p.Spec.Containers[0].LivenessProbe.HTTPGet = nil }, []e{required(c0 + ".livenessProbe")}},
		{"probe with two handlers", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}
		}, []e{forbidden(c0 + ".livenessProbe.tcpSocket")}},
		{"liveness successThreshold", func(p *corev1.Pod) { p.Spec.Containers[0].LivenessProbe.SuccessThreshold = 2 },
			[]e{invalid(c0 + ".livenessProbe.successThreshold")}},
		{"startup successThreshold", func(p *corev1.Pod) { p.Spec.Containers[0].StartupProbe.SuccessThreshold = 3 },
			[]e{invalid(c0 + ".startupProbe.successThreshold")}},
		{"negative period", func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe.PeriodSeconds = -1 },
			[]e{invalid(c0 + ".readinessProbe.periodSeconds")}},
		{"readiness grace period", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe.TerminationGracePeriodSeconds = ptr.To[int64](5)
		},
			[]e{invalid(c0 + ".readinessProbe.terminationGracePeriodSeconds")}},
		{"http probe bad port", func(p *corev1.Pod) { p.Spec.Containers[0].LivenessProbe.HTTPGet.Port = intstr.FromInt32(0) },
			[]e{invalid(c0 + ".livenessProbe.httpGet.port")}},
		{"http probe bad scheme", func(p *corev1.Pod) { p.Spec.Containers[0].LivenessProbe.HTTPGet.Scheme = "FTP" },
			[]e{notSupported(c0 + ".livenessProbe.httpGet.scheme")}},
		{"exec without command", func(p *corev1.Pod) { p.Spec.Containers[0].StartupProbe.Exec.Command = nil },
			[]e{required(c0 + ".startupProbe.exec.command")}},
		{"lifecycle handler empty", func(p *corev1.Pod) { p.Spec.Containers[0].Lifecycle.PreStop = &corev1.LifecycleHandler{} },
			[]e{required(c0 + ".lifecycle.preStop")}},
		{"sleep longer than grace period", func(p *corev1.Pod) { p.Spec.Containers[0].Lifecycle.PreStop.Sleep.Seconds = 60 },
			[]e{invalid(c0 + ".lifecycle.preStop.sleep")}},
		{"init container with probe", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].LivenessProbe = p.Spec.Containers[0].LivenessProbe.DeepCopy()
			p.Spec.InitContainers[0].Lifecycle = p.Spec.Containers[0].Lifecycle.DeepCopy()
		}, []e{forbidden("spec.initContainers[0].livenessProbe"), forbidden("spec.initContainers[0].lifecycle")}},
		{"bad container restart policy", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicy("Sometimes"))
		}, []e{notSupported("spec.initContainers[0].restartPolicy")}},
		{"duplicate volume", func(p *corev1.Pod) { p.Spec.Volumes[1].Name = "data" },
			[]e{duplicate("spec.volumes[1].name"), notFound(c0 + ".volumeMounts[1].name")}},
		{"bad volume name", func(p *corev1.Pod) {
			p.Spec.Volumes[0].Name = "Data"
			p.Spec.Containers[0].VolumeMounts[0].Name = "Data"
		}, []e{invalid("spec.volumes[0].name"), notFound(c0 + ".volumeMounts[0].name")}},
		{"volume without source", func(p *corev1.Pod) {
			p.Spec.Volumes[0].EmptyDir = nil
		}, []e{required("spec.volumes[0]"), notFound(c0 + ".volumeMounts[0].name")}},
		{"volume with two sources", func(p *corev1.Pod) {
			p.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/x", Type: ptr.To(corev1.HostPathUnset)}
		}, []e{forbidden("spec.volumes[0].emptyDir"), notFound(c0 + ".volumeMounts[0].name")}},
		{"configMap volume without name", func(p *corev1.Pod) { p.Spec.Volumes[1].ConfigMap.Name = "" },
			[]e{required("spec.volumes[1].configMap.name"), notFound(c0 + ".volumeMounts[1].name")}},
		{"configMap item path with ..", func(p *corev1.Pod) { p.Spec.Volumes[1].ConfigMap.Items[0].Path = "a/../../b" },
			[]e{invalid("spec.volumes[1].configMap.items[0].path"), notFound(c0 + ".volumeMounts[1].name")}},
		{"configMap item absolute path", func(p *corev1.Pod) { p.Spec.Volumes[1].ConfigMap.Items[0].Path = "/etc/a" },
			[]e{invalid("spec.volumes[1].configMap.items[0].path"), notFound(c0 + ".volumeMounts[1].name")}},
		{"configMap bad mode", func(p *corev1.Pod) { p.Spec.Volumes[1].ConfigMap.DefaultMode = ptr.To[int32](0o1000) },
			[]e{invalid("spec.volumes[1].configMap.defaultMode"), notFound(c0 + ".volumeMounts[1].name")}},
		{"secret volume without name", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{DefaultMode: ptr.To[int32](0o644)}}
		}, []e{required("spec.volumes[1].secret.secretName"), notFound(c0 + ".volumeMounts[1].name")}},
		{"hostPath without path", func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Type: ptr.To(corev1.HostPathDirectory)}}
		}, []e{required("spec.volumes[0].hostPath.path"), notFound(c0 + ".volumeMounts[0].name")}},
		{"hostPath bad type", func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x", Type: ptr.To(corev1.HostPathType("Pipe"))}}
		}, []e{notSupported("spec.volumes[0].hostPath.type"), notFound(c0 + ".volumeMounts[0].name")}},
		{"pvc without claim", func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}
		}, []e{required("spec.volumes[0].persistentVolumeClaim.claimName"), notFound(c0 + ".volumeMounts[0].name")}},
		{"downwardAPI item without ref", func(p *corev1.Pod) {
			p.Spec.Volumes[2].Projected.Sources[1].DownwardAPI.Items[0].FieldRef = nil
		}, []e{required("spec.volumes[2].projected.sources[1].downwardAPI"), notFound(c0 + ".volumeMounts[2].name")}},
		{"token too short", func(p *corev1.Pod) {
			p.Spec.Volumes[2].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds = ptr.To[int64](60)
		}, []e{invalid("spec.volumes[2].projected.sources[0].serviceAccountToken.expirationSeconds"), notFound(c0 + ".volumeMounts[2].name")}},
		{"token without service account", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = ""
			p.Spec.DeprecatedServiceAccount = "" //nolint:staticcheck
		}, []e{forbidden("spec.volumes[2].projected.sources[0].serviceAccountToken")}},
		{"mount of unknown volume", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nope" }, []e{notFound(c0 + ".volumeMounts[0].name")}},
		{"mount without path", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPath = "" }, []e{required(c0 + ".volumeMounts[0].mountPath")}},
		{"duplicate mount path", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[1].MountPath = "/data" },
			[]e{invalid(c0 + ".volumeMounts[1].mountPath")}},
		{"absolute subPath", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "/abs" },
			[]e{invalid(c0 + ".volumeMounts[0].subPath")}},
		{"subPath with ..", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "../up" },
			[]e{invalid(c0 + ".volumeMounts[0].subPath")}},
		{"bidirectional without privilege", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts[0].MountPropagation = ptr.To(corev1.MountPropagationBidirectional)
		}, []e{forbidden(c0 + ".volumeMounts[0].mountPropagation")}},
		{"bad pull policy", func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" }, []e{notSupported(c0 + ".imagePullPolicy")}},
		{"bad restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []e{notSupported("spec.restartPolicy")}},
		{"bad dns policy", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" }, []e{notSupported("spec.dnsPolicy")}},
		{"dns None without config", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = nil
		}, []e{required("spec.dnsConfig")}},
		{"dns None without nameservers", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone }, []e{required("spec.dnsConfig.nameservers")}},
		{"dns None with nameserver", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig.Nameservers = []string{"1.1.1.1"}
		}, nil},
		{"dns bad nameserver", func(p *corev1.Pod) { p.Spec.DNSConfig.Nameservers = []string{"dns.example"} },
			[]e{invalid("spec.dnsConfig.nameservers[0]")}},
		{"dns bad search", func(p *corev1.Pod) { p.Spec.DNSConfig.Searches = []string{"-bad"} }, []e{invalid("spec.dnsConfig.searches[0]")}},
		{"hostAlias bad IP", func(p *corev1.Pod) { p.Spec.HostAliases[0].IP = "10.1.2" }, []e{invalid("spec.hostAliases[0].ip")}},
		{"hostAlias bad hostname", func(p *corev1.Pod) { p.Spec.HostAliases[0].Hostnames[0] = "DB_local" },
			[]e{invalid("spec.hostAliases[0].hostnames[0]")}},
		{"bad nodeSelector key", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"bad key": "x"} }, []e{invalid("spec.nodeSelector")}},
		{"bad node affinity operator", func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Operator = "Like"
		}, []e{invalid("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator")}},
		{"node affinity In without values", func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values = nil
		}, []e{required("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values")}},
		{"node affinity without terms", func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = nil
		}, []e{required("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")}},
		{"anti-affinity without topologyKey", func(p *corev1.Pod) {
			p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey = ""
		}, []e{
			required("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey"),
			invalid("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey"),
			invalid("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey"),
		}},
		{"anti-affinity weight", func(p *corev1.Pod) {
			p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight = 0
		}, []e{invalid("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight")}},
		{"toleration Exists with value", func(p *corev1.Pod) { p.Spec.Tolerations[0].Value = "x" }, []e{invalid("spec.tolerations[0].operator")}},
		{"toleration empty key with Equal", func(p *corev1.Pod) { p.Spec.Tolerations[1].Operator = corev1.TolerationOpEqual },
			[]e{invalid("spec.tolerations[1].operator")}},
		{"tolerationSeconds without NoExecute", func(p *corev1.Pod) { p.Spec.Tolerations[0].Effect = corev1.TaintEffectNoSchedule },
			[]e{invalid("spec.tolerations[0].effect")}},
		{"toleration bad effect", func(p *corev1.Pod) { p.Spec.Tolerations[1].Effect = "Evict" }, []e{notSupported("spec.tolerations[1].effect")}},
		{"pod runAsUser negative", func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr.To[int64](-1) },
			[]e{invalid("spec.securityContext.runAsUser")}},
		{"container runAsGroup negative", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsGroup: ptr.To[int64](-1)}
		}, []e{invalid(c0 + ".securityContext.runAsGroup")}},
		{"privileged without escalation", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false)}
		}, []e{invalid(c0 + ".securityContext")}},
		{"bad sysctl", func(p *corev1.Pod) { p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "Kernel.X", Value: "1"}} },
			[]e{invalid("spec.securityContext.sysctls[0].name")}},
		{"seccomp Localhost without profile", func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}
		}, []e{required("spec.securityContext.seccompProfile.localhostProfile")}},
		{"activeDeadlineSeconds zero", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) },
			[]e{invalid("spec.activeDeadlineSeconds")}},
		{"negative grace period", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1) },
			[]e{invalid("spec.terminationGracePeriodSeconds"), invalid(c0 + ".lifecycle.preStop.sleep")}},
		{"grace period missing", func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = nil
		}, []e{required("spec.terminationGracePeriodSeconds")}},
		{"spread maxSkew zero", func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints[0].MaxSkew = 0 },
			[]e{invalid("spec.topologySpreadConstraints[0].maxSkew")}},
		{"spread bad whenUnsatisfiable", func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints[0].WhenUnsatisfiable = "Maybe" },
			[]e{notSupported("spec.topologySpreadConstraints[0].whenUnsatisfiable")}},
		{"spread no topologyKey", func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints[0].TopologyKey = "" },
			[]e{required("spec.topologySpreadConstraints[0].topologyKey")}},
		{"spread duplicate", func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, p.Spec.TopologySpreadConstraints[0])
		}, []e{duplicate("spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}")}},
		{"spread minDomains with ScheduleAnyway", func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints[0].MinDomains = ptr.To[int32](2) },
			[]e{invalid("spec.topologySpreadConstraints[0].minDomains")}},
		{"bad serviceAccountName", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "Bad_SA"
			p.Spec.DeprecatedServiceAccount = "Bad_SA" //nolint:staticcheck
		}, []e{invalid("spec.serviceAccountName")}},
		{"deprecated service account out of sync", func(p *corev1.Pod) {
			p.Spec.DeprecatedServiceAccount = "other" //nolint:staticcheck
		}, []e{invalid("spec.deprecatedServiceAccount")}},
		{"bad nodeName", func(p *corev1.Pod) { p.Spec.NodeName = "Node_1" }, []e{invalid("spec.nodeName")}},
		{"bad hostname", func(p *corev1.Pod) { p.Spec.Hostname = "a.b" }, []e{invalid("spec.hostname")}},
		{"hostUsers false with hostNetwork", func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
		}, []e{forbidden("spec.hostNetwork")}},
		{"ephemeral containers on create", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}
		}, []e{forbidden("spec.ephemeralContainers")}},
		{"nodeName with scheduling gates", func(p *corev1.Pod) {
			p.Spec.NodeName = "node1"
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/gate"}}
		}, []e{forbidden("spec.nodeName")}},
		{"bad os", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: "plan9"} }, []e{notSupported("spec.os")}},
		{"bad deletion cost", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.PodDeletionCost: "cheap"}
		}, []e{invalid("metadata.annotations[controller.kubernetes.io/pod-deletion-cost]")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			expectErrs(t, ValidatePod(pod), tt.want...)
		})
	}
}

func TestValidatePodMessages(t *testing.T) {
	pod := validPod()
	pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	errs := ValidatePod(pod)
	if got := findDetail(errs, "spec.containers[0].resources.requests"); got != "must be less than or equal to cpu limit of 1" {
		t.Errorf("detail = %q", got)
	}
}

func TestValidatePodTemplateSpec(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			HostNetwork: true,
			Containers:  []corev1.Container{{Name: "c", Image: "x:1", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}},
		},
	}
	DefaultPodTemplateSpec(tmpl)
	// A template may leave hostPort unset under hostNetwork; it is defaulted on the pod.
	expectErrs(t, ValidatePodTemplateSpec(tmpl, field.NewPath("spec", "template")))

	bad := tmpl.DeepCopy()
	bad.Labels = map[string]string{"app": "not valid"}
	bad.Spec.Containers[0].Ports[0].HostPort = 81
	bad.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}
	expectErrs(t, ValidatePodTemplateSpec(bad, field.NewPath("spec", "template")),
		invalid("spec.template.labels"),
		invalid("spec.template.spec.containers[0].ports[0].hostPort"),
		forbidden("spec.template.spec.ephemeralContainers"))

	// PodTemplate objects.
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default"}, Template: *tmpl.DeepCopy()}
	expectErrs(t, ValidatePodTemplate(pt))
	pt2 := pt.DeepCopy()
	pt2.ResourceVersion = "1"
	pt.ResourceVersion = "1"
	pt2.Template.Spec.Containers[0].Image = ""
	expectErrs(t, ValidatePodTemplateUpdate(pt2, pt), required("template.spec.containers[0].image"))
}

func TestValidatePodUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(p *corev1.Pod)
		mutate func(p *corev1.Pod)
		want   []e
	}{
		{"no change", nil, func(p *corev1.Pod) {}, nil},
		{"labels may change", nil, func(p *corev1.Pod) { p.Labels["tier"] = "front" }, nil},
		{"name is immutable", nil, func(p *corev1.Pod) { p.Name = "other" }, []e{invalid("metadata.name")}},
		{"image may change", nil, func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "registry.local/app:v2"
			p.Spec.InitContainers[0].Image = "busybox:1.37"
		}, nil},
		{"image may not be emptied", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			[]e{required("spec.containers[0].image"), required("spec.containers[0].image")}},
		{"activeDeadlineSeconds set", nil, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](100) }, nil},
		{"activeDeadlineSeconds lowered", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](100) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](50) }, nil},
		{"activeDeadlineSeconds raised", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](100) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](200) }, []e{invalid("spec.activeDeadlineSeconds")}},
		{"activeDeadlineSeconds removed", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](100) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil }, []e{invalid("spec.activeDeadlineSeconds")}},
		{"toleration added", nil, func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v", Effect: corev1.TaintEffectNoSchedule})
		}, nil},
		{"tolerationSeconds changed", nil, func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](10) }, nil},
		{"toleration modified", nil, func(p *corev1.Pod) { p.Spec.Tolerations[0].Key = "other" }, []e{forbidden("spec.tolerations")}},
		{"toleration removed", nil, func(p *corev1.Pod) { p.Spec.Tolerations = p.Spec.Tolerations[:1] }, []e{forbidden("spec.tolerations")}},
		{"restartPolicy changed", nil, func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }, []e{forbidden("spec")}},
		{"container added", nil, func(p *corev1.Pod) {
			c := p.Spec.Containers[0].DeepCopy()
			c.Name = "second"
			c.Ports = nil
			p.Spec.Containers = append(p.Spec.Containers, *c)
		}, []e{forbidden("spec.containers")}},
		{"negative grace period may become 1", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1) },
			func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1) },
			[]e{invalid("spec.containers[0].lifecycle.preStop.sleep")}},
		{"grace period otherwise immutable", nil, func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
		}, []e{forbidden("spec")}},
		{"scheduling gate removed", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}} },
			func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }, nil},
		{"scheduling gate added", nil, func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}} },
			[]e{forbidden("spec.schedulingGates[0].name")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validPod()
			old.ResourceVersion = "1"
			if tt.old != nil {
				tt.old(old)
			}
			pod := old.DeepCopy()
			tt.mutate(pod)
			expectErrs(t, ValidatePodUpdate(pod, old), tt.want...)
		})
	}

	old := validPod()
	old.ResourceVersion = "1"
	pod := old.DeepCopy()
	pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	detail := findDetail(ValidatePodUpdate(pod, old), "spec")
	if !strings.Contains(detail, "pod updates may not change fields other than") || !strings.Contains(detail, "restartPolicy") {
		t.Errorf("forbidden detail does not list updatable fields and the change: %q", detail)
	}
}

func TestValidatePodStatusUpdate(t *testing.T) {
	base := func() *corev1.Pod {
		p := validPod()
		p.ResourceVersion = "1"
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.NodeName = "node1"
		p.Status = corev1.PodStatus{
			Phase:  corev1.PodRunning,
			HostIP: "192.168.1.10", HostIPs: []corev1.HostIP{{IP: "192.168.1.10"}},
			PodIP: "10.42.0.5", PodIPs: []corev1.PodIP{{IP: "10.42.0.5"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}},
		}
		return p
	}
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []e
	}{
		{"valid", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, nil},
		{"bad pod IP", func(p *corev1.Pod) {
			p.Status.PodIP = "10.42.0"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.42.0"}}
		}, []e{invalid("status.podIPs[0]")}},
		{"podIP without podIPs", func(p *corev1.Pod) { p.Status.PodIPs = nil }, []e{invalid("status.podIPs")}},
		{"podIPs not matching podIP", func(p *corev1.Pod) { p.Status.PodIP = "10.42.0.6" }, []e{invalid("status.podIPs[0].ip")}},
		{"two IPv4 pod IPs", func(p *corev1.Pod) {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "10.42.0.7"})
		}, []e{invalid("status.podIPs")}},
		{"dual-stack pod IPs", func(p *corev1.Pod) {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "fd00::5"})
		}, nil},
		{"hostIPs mismatch", func(p *corev1.Pod) { p.Status.HostIP = "192.168.1.11" }, []e{invalid("status.hostIPs[0].ip")}},
		{"spec changed", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "other" }, []e{forbidden("spec")}},
		{"nodeName changed", func(p *corev1.Pod) { p.Spec.NodeName = "node2" }, []e{forbidden("status.nodeName"), forbidden("spec")}},
		{"terminated container restarted in Never pod", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		}, []e{forbidden("status.containerStatuses[0].state")}},
		{"bad container status name", func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Name = "App" },
			[]e{invalid("status.containerStatuses[0].name")}},
		{"custom condition type", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: "bad type", Status: corev1.ConditionTrue}}
		}, []e{invalid("status.conditions[0].Type")}},
		{"qosClass immutable", func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSBestEffort }, []e{invalid("status.qosClass")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := base()
			pod := old.DeepCopy()
			tt.mutate(pod)
			expectErrs(t, ValidatePodStatusUpdate(pod, old), tt.want...)
		})
	}

	// OnFailure pods may restart containers that failed.
	old := base()
	old.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	old.Status.ContainerStatuses[0].State.Terminated.ExitCode = 1
	pod := old.DeepCopy()
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	expectErrs(t, ValidatePodStatusUpdate(pod, old))
}

func TestValidatePodBinding(t *testing.T) {
	tests := []struct {
		name   string
		target corev1.ObjectReference
		want   []e
	}{
		{"node", corev1.ObjectReference{Kind: "Node", Name: "node1"}, nil},
		{"empty kind", corev1.ObjectReference{Name: "node1"}, nil},
		{"wrong kind", corev1.ObjectReference{Kind: "Pod", Name: "x"}, []e{notSupported("target.kind")}},
		{"no name", corev1.ObjectReference{Kind: "Node"}, []e{required("target.name")}},
		{"bad node name", corev1.ObjectReference{Name: "Node_1"}, []e{invalid("target.name")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErrs(t, ValidatePodBinding(&corev1.Binding{Target: tt.target}), tt.want...)
		})
	}
}

func TestValidatePodSpecEphemeralVolumeName(t *testing.T) {
	spec := &corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			}},
		}}}},
		Containers: []corev1.Container{{Name: "c", Image: "x:1"}},
	}
	DefaultPodSpec(spec)
	path := field.NewPath("spec")
	expectErrs(t, ValidatePodSpec(spec, nil, path))
	expectErrs(t, ValidatePodSpec(spec, &metav1.ObjectMeta{Name: "ok"}, path))
	// The generated claim name "<pod>-<volume>" must be a valid object name.
	expectErrs(t, ValidatePodSpec(spec, &metav1.ObjectMeta{Name: strings.Repeat("a", 250)}, path), invalid("spec.volumes[0].name"))

	spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Name = "not-allowed"
	expectErrs(t, ValidatePodSpec(spec, nil, path), forbidden("spec.volumes[0].ephemeral.volumeClaimTemplate.metadata"))
}
