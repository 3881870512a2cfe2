package kuberuntime

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
}

func resourceRef(container, res, divisor string) *corev1.EnvVarSource {
	ref := &corev1.ResourceFieldSelector{ContainerName: container, Resource: res}
	if divisor != "" {
		ref.Divisor = resource.MustParse(divisor)
	}
	return &corev1.EnvVarSource{ResourceFieldRef: ref}
}

func cmKey(name, key string, optional bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}
}

func secretKey(name, key string, optional bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}
}

func service(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func envTestSetup(t *testing.T) *testEnv {
	te := newTestEnv(t, busybox)
	te.rt.PodIPs = []string{"10.42.0.7", "fd00:42::7"}
	te.env.configMaps["shop/cfg"] = &corev1.ConfigMap{
		Data:       map[string]string{"color": "blue", "size": "L", "has=equals": "skipped"},
		BinaryData: map[string][]byte{"blob": []byte("bin")},
	}
	te.env.secrets["shop/creds"] = &corev1.Secret{Data: map[string][]byte{"user": []byte("admin"), "password": []byte("hunter2")}}
	te.env.services = []*corev1.Service{
		service("default", "kubernetes", "10.43.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}),
		service("shop", "db-main", "10.43.0.20",
			corev1.ServicePort{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP},
			corev1.ServicePort{Name: "metrics-port", Port: 9187, Protocol: corev1.ProtocolUDP}),
		service("shop", "headless", "None", corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP}),
		service("shop", "noports", "10.43.0.21"),
		service("other", "elsewhere", "10.43.0.30", corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP}),
	}
	return te
}

var kubernetesServiceEnv = map[string]string{
	"KUBERNETES_SERVICE_HOST":       "10.43.0.1",
	"KUBERNETES_SERVICE_PORT":       "443",
	"KUBERNETES_SERVICE_PORT_HTTPS": "443",
	"KUBERNETES_PORT":               "tcp://10.43.0.1:443",
	"KUBERNETES_PORT_443_TCP":       "tcp://10.43.0.1:443",
	"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
	"KUBERNETES_PORT_443_TCP_PORT":  "443",
	"KUBERNETES_PORT_443_TCP_ADDR":  "10.43.0.1",
}

func TestSyncPodEnvironment(t *testing.T) {
	te := envTestSetup(t)
	app := corev1.Container{
		Name:    "app",
		Command: []string{"sh", "-c", "echo $(A) $(NOPE) $$(A)"},
		Args:    []string{"$(POD_NAME)", "$(CFG_color)", "$(password)"},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("130M")},
		},
		EnvFrom: []corev1.EnvFromSource{
			{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: ptr.To(true)}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: ptr.To(true)}},
		},
		Env: []corev1.EnvVar{
			{Name: "A", Value: "plain"},
			{Name: "B", Value: "$(A)-x"},
			{Name: "ESC", Value: "$$(A)"},
			{Name: "UNK", Value: "$(NOPE)"},
			{Name: "LATER", Value: "$(Z)"}, // Z is defined after: not expanded
			{Name: "Z", Value: "z"},
			{Name: "user", Value: "root"}, // overrides the secret's key
			{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")},
			{Name: "POD_NS", ValueFrom: fieldRef("metadata.namespace")},
			{Name: "POD_UID", ValueFrom: fieldRef("metadata.uid")},
			{Name: "NODE", ValueFrom: fieldRef("spec.nodeName")},
			{Name: "SA", ValueFrom: fieldRef("spec.serviceAccountName")},
			{Name: "LBL", ValueFrom: fieldRef("metadata.labels['app']")},
			{Name: "ANN", ValueFrom: fieldRef("metadata.annotations['team']")},
			{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")},
			{Name: "POD_IPS", ValueFrom: fieldRef("status.podIPs")},
			{Name: "HOST_IP", ValueFrom: fieldRef("status.hostIP")},
			{Name: "HOST_IPS", ValueFrom: fieldRef("status.hostIPs")},
			{Name: "MEM_LIMIT_MI", ValueFrom: resourceRef("", "limits.memory", "1Mi")},
			{Name: "MEM_LIMIT", ValueFrom: resourceRef("", "limits.memory", "")},
			{Name: "CPU_REQ_M", ValueFrom: resourceRef("", "requests.cpu", "1m")},
			{Name: "CPU_LIMIT", ValueFrom: resourceRef("", "limits.cpu", "")},
			{Name: "SIDE_MEM", ValueFrom: resourceRef("side", "requests.memory", "1Ki")},
			{Name: "CM", ValueFrom: cmKey("cfg", "color", false)},
			{Name: "CM_BIN", ValueFrom: cmKey("cfg", "blob", false)},
			{Name: "SEC", ValueFrom: secretKey("creds", "password", false)},
			{Name: "OPT_CM", ValueFrom: cmKey("gone", "x", true)},
			{Name: "OPT_KEY", ValueFrom: cmKey("cfg", "nokey", true)},
			{Name: "OPT_SEC", ValueFrom: secretKey("gone", "x", true)},
			{Name: "OPT_SEC_KEY", ValueFrom: secretKey("creds", "nokey", true)},
		},
	}
	side := corev1.Container{Name: "side", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}}
	pod := testPod(app, side)
	pod.Labels = map[string]string{"app": "web"}
	pod.Annotations = map[string]string{"team": "blue"}
	pod.Spec.ServiceAccountName = "builder"

	if res := te.sync(t, pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("SyncPod = %+v", res)
	}
	_, c := te.rt.ContainerNamed(t, "app")
	want := map[string]string{
		"CFG_color": "blue", "CFG_size": "L", "user": "root", "password": "hunter2",
		"A": "plain", "B": "plain-x", "ESC": "$(A)", "UNK": "$(NOPE)", "LATER": "$(Z)", "Z": "z",
		"POD_NAME": "web", "POD_NS": "shop", "POD_UID": "uid-1", "NODE": "node1", "SA": "builder",
		"LBL": "web", "ANN": "blue",
		"POD_IP": "10.42.0.7", "POD_IPS": "10.42.0.7,fd00:42::7",
		"HOST_IP": "192.168.5.10", "HOST_IPS": "192.168.5.10,fd00::10",
		"MEM_LIMIT_MI": "124", // 130e6 / 2^20 = 123.98, rounded up
		"MEM_LIMIT":    "130000000",
		"CPU_REQ_M":    "250",
		"CPU_LIMIT":    "2", // 1.5 cores rounded up
		"SIDE_MEM":     "65536",
		"CM":           "blue", "CM_BIN": "bin", "SEC": "hunter2",
		"DB_MAIN_SERVICE_HOST":              "10.43.0.20",
		"DB_MAIN_SERVICE_PORT":              "5432",
		"DB_MAIN_SERVICE_PORT_PG":           "5432",
		"DB_MAIN_SERVICE_PORT_METRICS_PORT": "9187",
		"DB_MAIN_PORT":                      "tcp://10.43.0.20:5432",
		"DB_MAIN_PORT_5432_TCP":             "tcp://10.43.0.20:5432",
		"DB_MAIN_PORT_5432_TCP_PROTO":       "tcp",
		"DB_MAIN_PORT_5432_TCP_PORT":        "5432",
		"DB_MAIN_PORT_5432_TCP_ADDR":        "10.43.0.20",
		"DB_MAIN_PORT_9187_UDP":             "udp://10.43.0.20:9187",
		"DB_MAIN_PORT_9187_UDP_PROTO":       "udp",
		"DB_MAIN_PORT_9187_UDP_PORT":        "9187",
		"DB_MAIN_PORT_9187_UDP_ADDR":        "10.43.0.20",
	}
	for k, v := range kubernetesServiceEnv {
		want[k] = v
	}
	if diff := cmp.Diff(want, envMap(c.Cfg.Envs)); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
	if len(c.Cfg.Envs) != len(want) {
		t.Errorf("%d variables for %d names: duplicates", len(c.Cfg.Envs), len(want))
	}
	if got, want := c.Cfg.Command, []string{"sh", "-c", "echo plain $(NOPE) $(A)"}; !cmp.Equal(got, want) {
		t.Errorf("command = %q, want %q", got, want)
	}
	if got, want := c.Cfg.Args, []string{"web", "blue", "hunter2"}; !cmp.Equal(got, want) {
		t.Errorf("args = %q, want %q", got, want)
	}
	// The volume manager sees the pod IPs and the resolved environment
	// (for subPathExpr).
	opts := te.volumes.opts[0]
	if !cmp.Equal(opts.PodIPs, []string{"10.42.0.7", "fd00:42::7"}) || opts.Env["POD_NAME"] != "web" {
		t.Errorf("volume options = %+v", opts)
	}
}

func TestServiceLinksDisabled(t *testing.T) {
	te := envTestSetup(t)
	pod := testPod(corev1.Container{Name: "app"})
	pod.Spec.EnableServiceLinks = ptr.To(false)
	if res := te.sync(t, pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	_, c := te.rt.ContainerNamed(t, "app")
	if diff := cmp.Diff(kubernetesServiceEnv, envMap(c.Cfg.Envs)); diff != "" {
		t.Errorf("with service links off only the kubernetes service remains (-want +got):\n%s", diff)
	}
}

func TestEnvironmentErrors(t *testing.T) {
	tests := []struct {
		name    string
		c       corev1.Container
		getErr  error
		wantMsg string
	}{
		{name: "missing configmap", c: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: cmKey("gone", "k", false)}}},
			wantMsg: `configmaps "gone" not found`},
		{name: "missing configmap key", c: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: cmKey("cfg", "nokey", false)}}},
			wantMsg: "couldn't find key nokey in ConfigMap shop/cfg"},
		{name: "missing secret", c: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: secretKey("gone", "k", false)}}},
			wantMsg: `secrets "gone" not found`},
		{name: "missing secret key", c: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: secretKey("creds", "nokey", false)}}},
			wantMsg: "couldn't find key nokey in Secret shop/creds"},
		{name: "missing envFrom configmap", c: corev1.Container{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}}}},
			wantMsg: `configmap "gone"`},
		{name: "missing envFrom secret", c: corev1.Container{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}}}},
			wantMsg: `secret "gone"`},
		{name: "an optional reference still fails on other errors", c: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: cmKey("cfg", "k", true)}}},
			getErr: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cfg", errBoom), wantMsg: "forbidden"},
		{name: "unsupported fieldRef", c: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: fieldRef("status.phase")}}},
			wantMsg: `unsupported fieldRef "status.phase"`},
		{name: "resourceFieldRef to an unknown container", c: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: resourceRef("nope", "limits.cpu", "")}}},
			wantMsg: `container "nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := envTestSetup(t)
			te.env.getErr = tt.getErr
			tt.c.Name = "app"
			pod := testPod(tt.c)
			res := te.sync(t, pod)
			w := res.Waiting["app"]
			if w.Reason != ReasonConfigError || !strings.Contains(w.Message, tt.wantMsg) {
				t.Fatalf("waiting = %+v, want %s with %q", w, ReasonConfigError, tt.wantMsg)
			}
			if te.rt.CallsOf("CreateContainer") != 0 {
				t.Errorf("container created despite the error")
			}
			if !te.events.has("Failed") {
				t.Errorf("no Failed event")
			}
		})
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "$(A)", "EMPTY": ""}
	tests := []struct{ in, want string }{
		{"", ""},
		{"no refs", "no refs"},
		{"$(A)", "alpha"},
		{"x$(A)y$(A)", "xalphayalpha"},
		{"$(B)", "$(A)"}, // values are not expanded again
		{"$(EMPTY)|", "|"},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"$(A $(A)", "$(A $(A)"}, // the name runs to the first ')'
		{"$()", "$()"},
		{"100$ and $(A)", "100$ and alpha"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, vars); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := expandAll(nil, vars); got != nil {
		t.Errorf("expandAll(nil) = %v, want nil", got)
	}
}

// TestEnvFromPrefixesAndDefaultLimits: envFrom prefixes that upstream
// accepts (a leading digit, symbols) make variables as they are, and a
// resourceFieldRef on a limit the container does not set resolves to the
// node's allocatable amount (the ConfigMap, Secrets and Downward API
// conformance specs).
func TestEnvFromPrefixesAndDefaultLimits(t *testing.T) {
	te := envTestSetup(t)
	te.m.UseNodeAllocatable(func() corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	})
	cfg := func(prefix string) corev1.EnvFromSource {
		return corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}
	}
	pod := testPod(corev1.Container{
		Name:    "app",
		EnvFrom: []corev1.EnvFromSource{cfg("1-"), cfg("$_-"), cfg("#@!"), {Prefix: "p-", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}},
		Env: []corev1.EnvVar{
			{Name: "CPU_LIMIT", ValueFrom: resourceRef("", "limits.cpu", "")},
			{Name: "MEMORY_LIMIT", ValueFrom: resourceRef("", "limits.memory", "")},
		},
	})
	pod.Spec.EnableServiceLinks = ptr.To(false)
	if res := te.sync(t, pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("SyncPod = %+v", res)
	}
	_, c := te.rt.ContainerNamed(t, "app")
	got := envMap(c.Cfg.Envs)
	want := map[string]string{
		"1-color": "blue", "1-size": "L", "$_-color": "blue", "$_-size": "L", "#@!color": "blue", "#@!size": "L",
		"p-user": "admin", "p-password": "hunter2",
		"CPU_LIMIT": "4", "MEMORY_LIMIT": "8589934592",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if strings.Contains(k, "=") {
			t.Errorf("variable %q has '=' in its name", k)
		}
	}
}
