package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestExpandSubPathExpr(t *testing.T) {
	env := map[string]string{"A": "x", "B": "y", "EMPTY": ""}
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "plain", want: "plain"},
		{in: "$(A)/$(B)", want: "x/y"},
		{in: "a$$(A)", want: "a$(A)"},
		{in: "$$", want: "$"},
		{in: "cost$", want: "cost$"},
		{in: "$x", want: "$x"},
		{in: "$(A", want: "$(A"},
		{in: "$(MISSING)/$(EMPTY)", wantErr: "missing value for MISSING, EMPTY"},
	}
	for _, tt := range tests {
		got, err := expandSubPathExpr(tt.in, env)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("expand(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestFieldPathValue(t *testing.T) {
	pod := newPod("u1")
	pod.Labels = map[string]string{"b": "2", "a": "1"}
	pod.Annotations = map[string]string{"example.com/x": "y"}
	tests := []struct {
		path, want, wantErr string
	}{
		{path: "metadata.labels", want: "a=\"1\"\nb=\"2\""},
		{path: "metadata.labels['b']", want: "2"},
		{path: "metadata.labels['none']", want: ""},
		{path: "metadata.annotations['example.com/x']", want: "y"},
		{path: "metadata.name", want: "web"},
		{path: "metadata.labels['bad key!']", wantErr: "invalid key subscript in metadata.labels['bad key!']"},
		{path: "metadata.name['x']", wantErr: `fieldPath "metadata.name['x']" does not support a subscript`},
		{path: "status.podIP", wantErr: "unsupported fieldPath: status.podIP"},
	}
	for _, tt := range tests {
		got, err := FieldPathValue(pod, tt.path)
		if tt.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("%s: error = %v, want %q", tt.path, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
}

func TestResourceFieldValue(t *testing.T) {
	pod := newPod("u1")
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), "hugepages-2Mi": resource.MustParse("4Mi")},
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100M")},
	}
	pod.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	alloc := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("10G")}
	tests := []struct {
		container, res, divisor, want, wantErr string
	}{
		{container: "app", res: "limits.cpu", want: "2"}, // 1.5 rounded up
		{container: "app", res: "limits.cpu", divisor: "1m", want: "1500"},
		{container: "app", res: "limits.memory", divisor: "1Mi", want: "1024"}, // allocatable
		{container: "app", res: "requests.memory", divisor: "1M", want: "100"},
		{container: "app", res: "requests.cpu", want: "0"},
		{container: "app", res: "limits.ephemeral-storage", divisor: "1G", want: "10"},
		{container: "app", res: "limits.hugepages-2Mi", divisor: "1Mi", want: "4"},
		{container: "init", res: "limits.memory", want: "1073741824"},
		{container: "app", res: "limits.nvidia.com/gpu", wantErr: "unsupported container resource : limits.nvidia.com/gpu"},
		{container: "ghost", res: "limits.cpu", wantErr: "container ghost not found"},
	}
	for _, tt := range tests {
		sel := &corev1.ResourceFieldSelector{ContainerName: tt.container, Resource: tt.res}
		if tt.divisor != "" {
			sel.Divisor = resource.MustParse(tt.divisor)
		}
		got, err := ResourceFieldValue(pod, "", sel, alloc)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s %s: error = %v, want %q", tt.container, tt.res, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s %s /%s = %q, %v; want %q", tt.container, tt.res, tt.divisor, got, err, tt.want)
		}
	}
}

func TestAtomicWriteNested(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// A crash left a temporary link behind.
	mustSymlink(t, "nowhere", filepath.Join(dir, "..data_tmp"))
	v1 := map[string]file{"conf/a": {data: []byte("a"), mode: 0o644}, "conf/b": {data: []byte("b"), mode: 0o644}, "top": {data: []byte("t"), mode: 0o600}}
	if written, err := atomicWrite(dir, v1, now, nil); err != nil || !written {
		t.Fatalf("first write: %v, %v", written, err)
	}
	if l, _ := os.Readlink(filepath.Join(dir, "conf")); l != "..data/conf" {
		t.Errorf("conf -> %q, want ..data/conf", l)
	}
	if got := listVisible(t, dir); !reflect.DeepEqual(got, []string{"conf", "top"}) {
		t.Errorf("visible = %v", got)
	}
	if written, err := atomicWrite(dir, v1, now, nil); err != nil || written {
		t.Errorf("unchanged write: written=%v err=%v, want no write", written, err)
	}
	// A mode change alone is a change.
	v1["top"] = file{data: []byte("t"), mode: 0o644}
	if written, err := atomicWrite(dir, v1, now, nil); err != nil || !written {
		t.Errorf("mode change: written=%v err=%v, want a write", written, err)
	}
	// Removing a nested file keeps its directory; removing a top-level
	// name removes its link.
	v2 := map[string]file{"conf/a": {data: []byte("a2"), mode: 0o644}}
	if _, err := atomicWrite(dir, v2, now, nil); err != nil {
		t.Fatal(err)
	}
	if got := listVisible(t, dir); !reflect.DeepEqual(got, []string{"conf"}) {
		t.Errorf("visible = %v, want [conf]", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "conf", "b")); !os.IsNotExist(err) {
		t.Errorf("conf/b still there: %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "conf", "a")); got != "a2" {
		t.Errorf("conf/a = %q", got)
	}
	if got := versionDirs(t, dir); len(got) != 1 {
		t.Errorf("version dirs = %v, want 1", got)
	}
	// prepare runs before the swap and its failure leaves the old version.
	_, err := atomicWrite(dir, map[string]file{"conf/a": {data: []byte("a3"), mode: 0o644}}, now, func() error { return errBoom })
	if !errors.Is(err, errBoom) {
		t.Errorf("prepare error = %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "conf", "a")); got != "a2" {
		t.Errorf("conf/a = %q after a failed write, want a2", got)
	}
	if got := versionDirs(t, dir); len(got) != 1 {
		t.Errorf("version dirs = %v after a failed write, want 1", got)
	}
}

func TestCheckFilePath(t *testing.T) {
	for p, wantErr := range map[string]bool{
		"a": false, "a/b": false, "a..b": false, ".hidden": false,
		"": true, "/abs": true, "../x": true, "a/../b": true, "..data": true, "..x/y": true,
		strings.Repeat("n", 256): true,
	} {
		if err := checkFilePath(p); (err != nil) != wantErr {
			t.Errorf("checkFilePath(%q) = %v, want error %v", p, err, wantErr)
		}
	}
}

func TestVolumeErrors(t *testing.T) {
	a := &VolumeError{Volume: "a", Err: errBoom}
	b := &VolumeError{Volume: "b", Err: errBoom}
	got := VolumeErrors(errors.Join(a, b))
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("VolumeErrors = %v", got)
	}
	if got := VolumeErrors(fmt.Errorf("wrapped: %w", a)); len(got) != 1 || got[0] != a {
		t.Errorf("VolumeErrors(wrapped) = %v", got)
	}
	if got := VolumeErrors(errBoom); got != nil {
		t.Errorf("VolumeErrors(plain) = %v", got)
	}
}

func TestPodMemoryLimit(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	lim := func(s string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(s)}}
	}
	tests := []struct {
		name string
		spec corev1.PodSpec
		want int64
	}{
		{name: "sum of apps", spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: lim("100")}, {Resources: lim("50")}}}, want: 150},
		{name: "one app without a limit", spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: lim("100")}, {}}}, want: 0},
		{name: "bigger init", spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: lim("100")}}, InitContainers: []corev1.Container{{Resources: lim("300")}}}, want: 300},
		{name: "sidecar adds", spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: lim("100")}},
			InitContainers: []corev1.Container{{Resources: lim("20"), RestartPolicy: &always}}}, want: 120},
		{name: "overhead", spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: lim("100")}},
			Overhead: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10")}}, want: 110},
		{name: "pod level", spec: corev1.PodSpec{Containers: []corev1.Container{{}}, Resources: ptr(lim("500"))}, want: 500},
	}
	for _, tt := range tests {
		if got := podMemoryLimit(&corev1.Pod{Spec: tt.spec}); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (&Config{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	err := (&Config{PodsDir: "rel", RefreshInterval: -1}).Validate()
	if err == nil || !strings.Contains(err.Error(), `--data-dir: pods directory "rel" must be an absolute path`) || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("Validate = %v", err)
	}
	if _, err := New(Config{}, Deps{}); err == nil {
		t.Errorf("New without Objects succeeded")
	}
}
