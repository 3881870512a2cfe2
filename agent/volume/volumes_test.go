package volume

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

func configMapVolume(name, cm string, mutate ...func(*corev1.ConfigMapVolumeSource)) corev1.Volume {
	src := &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}
	for _, m := range mutate {
		m(src)
	}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: src}}
}

func TestConfigMapVolume(t *testing.T) {
	tests := []struct {
		name      string
		data      map[string]string // nil: the configMap does not exist
		binary    map[string][]byte
		source    func(*corev1.ConfigMapVolumeSource)
		wantFiles map[string]string
		wantModes map[string]os.FileMode
		wantErr   string
	}{
		{
			name:      "all keys with the default mode",
			data:      map[string]string{"a.conf": "A", "b.conf": "B"},
			wantFiles: map[string]string{"a.conf": "A", "b.conf": "B"},
			wantModes: map[string]os.FileMode{"a.conf": 0o644, "b.conf": 0o644},
		},
		{
			name:      "binary data and defaultMode",
			data:      map[string]string{"a": "A"},
			binary:    map[string][]byte{"bin": {0, 1, 2}},
			source:    func(s *corev1.ConfigMapVolumeSource) { s.DefaultMode = ptr[int32](0o600) },
			wantFiles: map[string]string{"a": "A", "bin": "\x00\x01\x02"},
			wantModes: map[string]os.FileMode{"a": 0o600, "bin": 0o600},
		},
		{
			name: "items with paths and modes",
			data: map[string]string{"a": "A", "b": "B", "c": "C"},
			source: func(s *corev1.ConfigMapVolumeSource) {
				s.Items = []corev1.KeyToPath{{Key: "a", Path: "conf/first"}, {Key: "b", Path: "second", Mode: ptr[int32](0o400)}}
			},
			wantFiles: map[string]string{"conf/first": "A", "second": "B"},
			wantModes: map[string]os.FileMode{"conf/first": 0o644, "second": 0o400},
		},
		{
			name:    "missing configMap",
			wantErr: `MountVolume.SetUp failed for volume "cfg" : configmap "app" not found`,
		},
		{
			name:      "missing optional configMap is empty",
			source:    func(s *corev1.ConfigMapVolumeSource) { s.Optional = ptr(true) },
			wantFiles: map[string]string{},
		},
		{
			name:    "missing key",
			data:    map[string]string{"a": "A"},
			source:  func(s *corev1.ConfigMapVolumeSource) { s.Items = []corev1.KeyToPath{{Key: "nope", Path: "x"}} },
			wantErr: `MountVolume.SetUp failed for volume "cfg" : configmap "app" has no key "nope"`,
		},
		{
			name: "missing key of an optional configMap is skipped",
			data: map[string]string{"a": "A"},
			source: func(s *corev1.ConfigMapVolumeSource) {
				s.Optional = ptr(true)
				s.Items = []corev1.KeyToPath{{Key: "nope", Path: "x"}, {Key: "a", Path: "y"}}
			},
			wantFiles: map[string]string{"y": "A"},
		},
		{
			name:    "item path escaping the volume",
			data:    map[string]string{"a": "A"},
			source:  func(s *corev1.ConfigMapVolumeSource) { s.Items = []corev1.KeyToPath{{Key: "a", Path: "../a"}} },
			wantErr: `MountVolume.SetUp failed for volume "cfg" : write volume files: invalid path "../a": must not contain '..'`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.data != nil {
				e.objects.setConfigMap("ns1", "app", tt.data)
				e.objects.configMaps["ns1/app"].BinaryData = tt.binary
			}
			var mut []func(*corev1.ConfigMapVolumeSource)
			if tt.source != nil {
				mut = append(mut, tt.source)
			}
			pod := newPod("uid1", configMapVolume("cfg", "app", mut...))
			paths, err := e.mgr.SetUpPod(context.Background(), pod)
			if tt.wantErr != "" {
				ves := mustVolumeErrors(t, err)
				if len(ves) != 1 || ves[0].Error() != tt.wantErr || ves[0].Volume != "cfg" {
					t.Fatalf("errors = %v, want one %q", ves, tt.wantErr)
				}
				if _, ok := paths["cfg"]; ok {
					t.Errorf("failed volume is in the paths: %v", paths)
				}
				return
			}
			if err != nil {
				t.Fatalf("SetUpPod: %v", err)
			}
			dir := paths["cfg"]
			if want := filepath.Join(e.podDir("uid1"), "volumes", ConfigMapPluginDir, "cfg"); dir != want {
				t.Fatalf("path = %s, want %s", dir, want)
			}
			if _, ok := e.mounter.Get(dir); ok {
				t.Errorf("configMap volume is on a tmpfs, want a plain directory")
			}
			for p, want := range tt.wantFiles {
				if got := readFile(t, filepath.Join(dir, p)); got != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
			for p, want := range tt.wantModes {
				if got := fileMode(t, filepath.Join(dir, p)); got != want {
					t.Errorf("mode of %s = %v, want %v", p, got, want)
				}
			}
			var wantTop []string
			for p := range tt.wantFiles {
				top, _, _ := strings.Cut(p, "/")
				wantTop = append(wantTop, top)
			}
			if got := listVisible(t, dir); !sameSet(got, wantTop) {
				t.Errorf("visible names = %v, want %v", got, wantTop)
			}
			// Each visible name links through ..data to the one version.
			for _, top := range wantTop {
				if l, err := os.Readlink(filepath.Join(dir, top)); err != nil || l != filepath.Join("..data", top) {
					t.Errorf("link %s = %q, %v; want ..data/%s", top, l, err, top)
				}
			}
			data, err := os.Readlink(filepath.Join(dir, "..data"))
			if err != nil || !strings.HasPrefix(data, "..2026_03_01_12_00_00.") {
				t.Errorf("..data -> %q, %v; want the timestamped version", data, err)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestConfigMapNotFoundKeepsAPIError(t *testing.T) {
	e := newEnv(t)
	_, err := e.mgr.SetUpPod(context.Background(), newPod("uid1", configMapVolume("cfg", "app")))
	if !apierrors.IsNotFound(err) {
		t.Errorf("apierrors.IsNotFound(%v) = false, want true", err)
	}
	e.objects.err = errBoom
	_, err = e.mgr.SetUpPod(context.Background(), newPod("uid2", configMapVolume("cfg", "app")))
	ves := mustVolumeErrors(t, err)
	if want := `MountVolume.SetUp failed for volume "cfg" : get configmap "app": boom`; ves[0].Error() != want {
		t.Errorf("error = %q, want %q", ves[0].Error(), want)
	}
}

func TestConfigMapUpdateIsAtomicAndThrottled(t *testing.T) {
	e := newEnv(t)
	e.objects.setConfigMap("ns1", "app", map[string]string{"a": "A1", "b": "B1"})
	pod := newPod("uid1", configMapVolume("cfg", "app"))
	dir := e.setUp(pod)["cfg"]
	v1 := versionDirs(t, dir)
	if len(v1) != 1 {
		t.Fatalf("version dirs = %v, want one", v1)
	}

	// Within the refresh interval nothing is fetched.
	e.objects.setConfigMap("ns1", "app", map[string]string{"a": "A2", "c": "C2"})
	reads := e.objects.readCount()
	e.clock.Step(30 * time.Second)
	e.setUp(pod)
	if got := e.objects.readCount(); got != reads {
		t.Fatalf("reads = %d after 30s, want %d (throttled)", got, reads)
	}
	if got := readFile(t, filepath.Join(dir, "a")); got != "A1" {
		t.Fatalf("a = %q within the interval, want A1", got)
	}

	// After the interval the new version replaces the old one.
	e.clock.Step(31 * time.Second)
	e.setUp(pod)
	if got := readFile(t, filepath.Join(dir, "a")); got != "A2" {
		t.Errorf("a = %q, want A2", got)
	}
	if got := readFile(t, filepath.Join(dir, "c")); got != "C2" {
		t.Errorf("c = %q, want C2", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "b")); !os.IsNotExist(err) {
		t.Errorf("b still there (%v), want removed", err)
	}
	v2 := versionDirs(t, dir)
	if len(v2) != 1 || v2[0] == v1[0] {
		t.Errorf("version dirs = %v, want one new one (old was %v)", v2, v1)
	}
	if l, _ := os.Readlink(filepath.Join(dir, "..data")); len(v2) == 1 && l != v2[0] {
		t.Errorf("..data -> %q, want %q", l, v2[0])
	}

	// Unchanged content is not rewritten.
	e.clock.Step(2 * time.Minute)
	e.setUp(pod)
	if v3 := versionDirs(t, dir); !reflect.DeepEqual(v3, v2) {
		t.Errorf("version dirs = %v after an unchanged refresh, want %v", v3, v2)
	}

	// A changed pod refreshes at once.
	e.objects.setConfigMap("ns1", "app", map[string]string{"a": "A3"})
	pod.Labels = map[string]string{"new": "label"}
	e.setUp(pod)
	if got := readFile(t, filepath.Join(dir, "a")); got != "A3" {
		t.Errorf("a = %q after a pod change, want A3", got)
	}
}

func TestRefreshFailureKeepsContent(t *testing.T) {
	e := newEnv(t)
	e.objects.setConfigMap("ns1", "app", map[string]string{"a": "A1"})
	pod := newPod("uid1", configMapVolume("cfg", "app"))
	dir := e.setUp(pod)["cfg"]

	e.objects.err = errBoom
	e.clock.Step(2 * time.Minute)
	paths := e.setUp(pod)
	if paths["cfg"] != dir || readFile(t, filepath.Join(dir, "a")) != "A1" {
		t.Fatalf("volume lost its content on a failed refresh")
	}
	// The failed refresh is not retried before the interval.
	reads := e.objects.readCount()
	e.clock.Step(10 * time.Second)
	e.setUp(pod)
	if got := e.objects.readCount(); got != reads {
		t.Errorf("reads = %d, want %d", got, reads)
	}

	// A new manager (agent restart) with the API down still serves the
	// content on disk.
	e2 := newEnv(t)
	e2.objects.err = errBoom
	mgr, err := New(Config{PodsDir: filepath.Join(e.dir, "pods")}, Deps{Objects: e2.objects, Mounter: e.mounter, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	paths, err = mgr.SetUpPod(context.Background(), pod)
	if err != nil || paths["cfg"] != dir {
		t.Errorf("after restart: paths %v, err %v; want %s and no error", paths, err, dir)
	}
}

func TestSecretVolume(t *testing.T) {
	e := newEnv(t)
	e.objects.setSecret("ns1", "creds", map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cret")})
	pod := newPod("uid1",
		corev1.Volume{Name: "all", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		corev1.Volume{Name: "one", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "creds", DefaultMode: ptr[int32](0o440),
			Items: []corev1.KeyToPath{{Key: "pass", Path: "p"}, {Key: "user", Path: "u", Mode: ptr[int32](0o400)}},
		}}},
		corev1.Volume{Name: "gone", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nope"}}},
		corev1.Volume{Name: "opt", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nope", Optional: ptr(true)}}},
	)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}
	paths, err := e.mgr.SetUpPod(context.Background(), pod)
	ves := mustVolumeErrors(t, err)
	if len(ves) != 1 || ves[0].Error() != `MountVolume.SetUp failed for volume "gone" : secret "nope" not found` {
		t.Fatalf("errors = %v", ves)
	}
	if _, ok := paths["gone"]; ok || len(paths) != 3 {
		t.Fatalf("paths = %v, want all, one, opt", paths)
	}
	for _, name := range []string{"all", "one", "opt"} {
		m, ok := e.mounter.Get(paths[name])
		if !ok || m.Type != "tmpfs" {
			t.Errorf("volume %s: mount %+v, want a tmpfs", name, m)
		}
		// The pod's memory limit is below the node's allocatable memory.
		if m.Size != 256<<20 {
			t.Errorf("volume %s: tmpfs size %d, want %d", name, m.Size, 256<<20)
		}
	}
	if got := readFile(t, filepath.Join(paths["all"], "pass")); got != "s3cret" {
		t.Errorf("pass = %q", got)
	}
	if got := fileMode(t, filepath.Join(paths["all"], "user")); got != 0o644 {
		t.Errorf("mode of user = %v, want 0644", got)
	}
	if got := fileMode(t, filepath.Join(paths["one"], "p")); got != 0o440 {
		t.Errorf("mode of p = %v, want 0440", got)
	}
	if got := fileMode(t, filepath.Join(paths["one"], "u")); got != 0o400 {
		t.Errorf("mode of u = %v, want 0400", got)
	}
	if got := listVisible(t, paths["opt"]); len(got) != 0 {
		t.Errorf("optional missing secret shows %v, want nothing", got)
	}
}

func TestDownwardAPIVolume(t *testing.T) {
	e := newEnv(t)
	pod := newPod("uid-42", corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
			{Path: "tier", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}},
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr[int32](0o400)},
			{Path: "meta/ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
			{Path: "uid", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}},
			{Path: "mem_mi", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
			{Path: "cpu_m", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
			{Path: "cpu_req", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "requests.cpu"}},
		},
	}}})
	pod.Labels = map[string]string{"tier": "front", "app": `we"b`}
	pod.Annotations = map[string]string{"z": "last", "a": "multi\nline"}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("300Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}
	dir := e.setUp(pod)["info"]
	want := map[string]string{
		"labels":      "app=\"we\\\"b\"\ntier=\"front\"",
		"annotations": "a=\"multi\\nline\"\nz=\"last\"",
		"tier":        "front",
		"name":        "web",
		"meta/ns":     "ns1",
		"uid":         "uid-42",
		"mem_mi":      "300",
		"cpu_m":       "2000", // no limit: the node's allocatable 2 CPUs
		"cpu_req":     "1",    // 250m rounded up
	}
	for p, w := range want {
		if got := readFile(t, filepath.Join(dir, p)); got != w {
			t.Errorf("%s = %q, want %q", p, got, w)
		}
	}
	if got := fileMode(t, filepath.Join(dir, "name")); got != 0o400 {
		t.Errorf("mode of name = %v, want 0400", got)
	}
	if m, ok := e.mounter.Get(dir); !ok || m.Type != "tmpfs" {
		t.Errorf("downwardAPI volume not on a tmpfs: %+v", m)
	}

	// A label change shows at the next sync, without waiting.
	pod.Labels = map[string]string{"tier": "back"}
	e.clock.Step(time.Second)
	e.setUp(pod)
	if got := readFile(t, filepath.Join(dir, "labels")); got != `tier="back"` {
		t.Errorf("labels after update = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "tier")); got != "back" {
		t.Errorf("tier after update = %q", got)
	}
}

func TestDownwardAPIErrors(t *testing.T) {
	e := newEnv(t)
	pod := newPod("uid1", corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{
			{Path: "x", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}},
			{Path: "y", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "ghost", Resource: "limits.cpu"}},
		},
	}}})
	_, err := e.mgr.SetUpPod(context.Background(), pod)
	ves := mustVolumeErrors(t, err)
	want := `MountVolume.SetUp failed for volume "info" : downward API: unsupported fieldPath: spec.nodeName; container ghost not found`
	if ves[0].Error() != want {
		t.Errorf("error = %q, want %q", ves[0].Error(), want)
	}
}

func projectedVolume() corev1.Volume {
	return corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr[int64](3600)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

func TestProjectedVolume(t *testing.T) {
	e := newEnv(t)
	e.objects.setConfigMap("ns1", "kube-root-ca.crt", map[string]string{"ca.crt": "CA"})
	pod := newPod("uid1", projectedVolume())
	pod.Spec.ServiceAccountName = "builder"
	dir := e.setUp(pod)["kube-api-access"]
	if m, ok := e.mounter.Get(dir); !ok || m.Type != "tmpfs" {
		t.Errorf("projected volume not on a tmpfs: %+v", m)
	}
	for p, w := range map[string]string{"token": "token-1", "ca.crt": "CA", "namespace": "ns1"} {
		if got := readFile(t, filepath.Join(dir, p)); got != w {
			t.Errorf("%s = %q, want %q", p, got, w)
		}
	}
	if got := fileMode(t, filepath.Join(dir, "token")); got != 0o644 {
		t.Errorf("token mode = %v, want 0644", got)
	}
	want := []tokenCall{{namespace: "ns1", serviceAccount: "builder", seconds: 3600, podUID: "uid1"}}
	if !reflect.DeepEqual(e.tokens.calls, want) {
		t.Errorf("token calls = %+v, want %+v", e.tokens.calls, want)
	}
}

func TestProjectedMissingSourceWritesNothing(t *testing.T) {
	e := newEnv(t)
	pod := newPod("uid1", projectedVolume())
	_, err := e.mgr.SetUpPod(context.Background(), pod)
	ves := mustVolumeErrors(t, err)
	if want := `MountVolume.SetUp failed for volume "kube-api-access" : configmap "kube-root-ca.crt" not found`; ves[0].Error() != want {
		t.Errorf("error = %q, want %q", ves[0].Error(), want)
	}
	dir := filepath.Join(e.podDir("uid1"), "volumes", ProjectedPluginDir, "kube-api-access")
	if got := listVisible(t, dir); len(got) != 0 {
		t.Errorf("partial content written: %v", got)
	}
}

func TestTokenRefresh(t *testing.T) {
	tests := []struct {
		name    string
		seconds int64
		// renewAfter is when the token must be renewed: 80% of its
		// lifetime, at most 24 hours.
		renewAfter time.Duration
	}{
		{name: "one hour token renews at 48 minutes", seconds: 3600, renewAfter: 48 * time.Minute},
		{name: "ten minute token renews at 8 minutes", seconds: 600, renewAfter: 8 * time.Minute},
		{name: "two day token renews at 24 hours", seconds: 2 * 86400, renewAfter: 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.objects.setConfigMap("ns1", "kube-root-ca.crt", map[string]string{"ca.crt": "CA"})
			vol := projectedVolume()
			vol.Projected.Sources[0].ServiceAccountToken.ExpirationSeconds = ptr(tt.seconds)
			vol.Projected.Sources[0].ServiceAccountToken.Audience = "vault"
			pod := newPod("uid1", vol)
			dir := e.setUp(pod)["kube-api-access"]

			// Syncs up to just before the renewal reuse the token, even
			// though the configMap is fetched again every minute.
			e.clock.Step(tt.renewAfter - time.Second)
			e.setUp(pod)
			if n := e.tokens.count(); n != 1 {
				t.Fatalf("token requests = %d before renewal time, want 1", n)
			}
			if got := readFile(t, filepath.Join(dir, "token")); got != "token-1" {
				t.Fatalf("token = %q, want token-1", got)
			}
			e.clock.Step(time.Second)
			e.setUp(pod)
			if n := e.tokens.count(); n != 2 {
				t.Fatalf("token requests = %d at renewal time, want 2", n)
			}
			if got := readFile(t, filepath.Join(dir, "token")); got != "token-2" {
				t.Errorf("token = %q after renewal, want token-2", got)
			}
			if c := e.tokens.calls[1]; !reflect.DeepEqual(c.audiences, []string{"vault"}) || c.seconds != tt.seconds {
				t.Errorf("renewal call = %+v", c)
			}
		})
	}
}

func TestTokenRenewalFailure(t *testing.T) {
	e := newEnv(t)
	e.objects.setConfigMap("ns1", "kube-root-ca.crt", map[string]string{"ca.crt": "CA"})
	pod := newPod("uid1", projectedVolume())
	dir := e.setUp(pod)["kube-api-access"]

	// Renewal fails while the token is still valid: it stays in place.
	e.tokens.err = errBoom
	e.clock.Step(50 * time.Minute)
	e.setUp(pod)
	if got := readFile(t, filepath.Join(dir, "token")); got != "token-1" {
		t.Errorf("token = %q, want the still valid token-1", got)
	}

	// A new pod cannot start without a token.
	_, err := e.mgr.SetUpPod(context.Background(), newPod("uid2", projectedVolume()))
	ves := mustVolumeErrors(t, err)
	if want := `MountVolume.SetUp failed for volume "kube-api-access" : request token for service account "default": boom`; ves[0].Error() != want {
		t.Errorf("error = %q, want %q", ves[0].Error(), want)
	}
}

func TestFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing file groups needs root")
	}
	e := newEnv(t)
	e.objects.setConfigMap("ns1", "kube-root-ca.crt", map[string]string{"ca.crt": "CA"})
	pod := newPod("uid1", projectedVolume(), corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr[int64](2000)}
	paths := e.setUp(pod)
	check := func(p string, wantMode os.FileMode) {
		t.Helper()
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if gid := statGID(info); gid != 2000 {
			t.Errorf("%s: gid %d, want 2000", p, gid)
		}
		if got := info.Mode() & (os.ModePerm | os.ModeSetgid); got != wantMode {
			t.Errorf("%s: mode %v, want %v", p, got, wantMode)
		}
	}
	// The token is 0600 with an fsGroup, plus group read.
	check(filepath.Join(paths["kube-api-access"], "token"), 0o640)
	check(filepath.Join(paths["kube-api-access"], "ca.crt"), 0o644)
	check(paths["scratch"], 0o777|os.ModeSetgid)
}

func TestEmptyDir(t *testing.T) {
	tests := []struct {
		name      string
		src       corev1.EmptyDirVolumeSource
		podLimit  string
		wantMode  os.FileMode
		wantTmpfs bool
		wantSize  int64
		wantErr   string
	}{
		{name: "disk", wantMode: 0o777},
		{name: "disk with mode", src: corev1.EmptyDirVolumeSource{Mode: ptr[int32](0o750)}, wantMode: 0o750},
		{name: "memory sized by allocatable", src: corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}, wantTmpfs: true, wantSize: 4 << 30},
		{name: "memory sized by pod limit", src: corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}, podLimit: "1Gi", wantTmpfs: true, wantSize: 1 << 30},
		{
			name:      "memory sized by sizeLimit",
			src:       corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("64Mi"))},
			podLimit:  "1Gi",
			wantTmpfs: true, wantSize: 64 << 20,
		},
		{
			name:    "hugepages",
			src:     corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumHugePages},
			wantErr: `MountVolume.SetUp failed for volume "scratch" : emptyDir medium "HugePages" is not supported`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			src := tt.src
			pod := newPod("uid1", corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &src}})
			if tt.podLimit != "" {
				pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(tt.podLimit)}
			}
			paths, err := e.mgr.SetUpPod(context.Background(), pod)
			if tt.wantErr != "" {
				if ves := mustVolumeErrors(t, err); ves[0].Error() != tt.wantErr {
					t.Fatalf("error = %q, want %q", ves[0].Error(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir := paths["scratch"]
			if want := filepath.Join(e.podDir("uid1"), "volumes", EmptyDirPluginDir, "scratch"); dir != want {
				t.Fatalf("path = %s, want %s", dir, want)
			}
			m, mounted := e.mounter.Get(dir)
			if mounted != tt.wantTmpfs || (mounted && (m.Type != "tmpfs" || m.Size != tt.wantSize)) {
				t.Errorf("mount = %+v (%v), want tmpfs=%v size %d", m, mounted, tt.wantTmpfs, tt.wantSize)
			}
			if tt.wantMode != 0 {
				if got := fileMode(t, dir); got != tt.wantMode {
					t.Errorf("mode = %v, want %v", got, tt.wantMode)
				}
			}
			// Files written by containers survive later syncs.
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			e.clock.Step(time.Hour)
			e.setUp(pod)
			if got := readFile(t, filepath.Join(dir, "f")); got != "x" {
				t.Errorf("file lost across syncs")
			}
		})
	}
}

func TestUnsupportedVolume(t *testing.T) {
	e := newEnv(t)
	pod := newPod("uid1", corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}}})
	_, err := e.mgr.SetUpPod(context.Background(), pod)
	ves := mustVolumeErrors(t, err)
	if want := `MountVolume.SetUp failed for volume "data" : volume type nfs is not supported by this node`; ves[0].Error() != want {
		t.Errorf("error = %q, want %q", ves[0].Error(), want)
	}
}
