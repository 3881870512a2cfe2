package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	volumetesting "github.com/k1s/k1s/agent/volume/testing"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeObjects serves configMaps and secrets from maps and counts reads.
type fakeObjects struct {
	mu         sync.Mutex
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	err        error // returned by every read when set
	reads      int
}

func newFakeObjects() *fakeObjects {
	return &fakeObjects{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
}

func (f *fakeObjects) GetConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	cm, ok := f.configMaps[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}
	return cm.DeepCopy(), nil
}

func (f *fakeObjects) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	s, ok := f.secrets[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
	}
	return s.DeepCopy(), nil
}

func (f *fakeObjects) setConfigMap(ns, name string, data map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.configMaps[ns+"/"+name] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func (f *fakeObjects) setSecret(ns, name string, data map[string][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.secrets[ns+"/"+name] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func (f *fakeObjects) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// tokenCall is one call of the fake token requester.
type tokenCall struct {
	namespace, serviceAccount string
	audiences                 []string
	seconds                   int64
	podUID                    types.UID
}

// fakeTokens issues "token-<n>" tokens valid for the requested time.
type fakeTokens struct {
	mu    sync.Mutex
	clock *clocktesting.FakeClock
	calls []tokenCall
	err   error
}

func (f *fakeTokens) request(_ context.Context, ns, sa string, auds []string, seconds int64, pod *corev1.Pod) (string, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", time.Time{}, f.err
	}
	f.calls = append(f.calls, tokenCall{ns, sa, auds, seconds, pod.UID})
	return "token-" + string(rune('0'+len(f.calls))), f.clock.Now().Add(time.Duration(seconds) * time.Second), nil
}

func (f *fakeTokens) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

type env struct {
	t       *testing.T
	dir     string
	mgr     Manager
	objects *fakeObjects
	claims  *fakeClaims
	tokens  *fakeTokens
	bundles *fakeTrustBundles
	pcrs    *fakePodCertificates
	mounter *volumetesting.FakeMounter
	clock   *clocktesting.FakeClock
	alloc   corev1.ResourceList
}

func newEnv(t *testing.T, mutate ...func(*Config)) *env {
	t.Helper()
	e := &env{
		t:       t,
		dir:     t.TempDir(),
		objects: newFakeObjects(),
		claims:  &fakeClaims{claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{}},
		mounter: volumetesting.NewFakeMounter(),
		clock:   clocktesting.NewFakeClock(t0),
		alloc: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("2"),
			corev1.ResourceMemory: resource.MustParse("4Gi"),
		},
	}
	e.tokens = &fakeTokens{clock: e.clock}
	e.bundles = &fakeTrustBundles{}
	e.pcrs = newFakePodCertificates()
	cfg := Config{PodsDir: filepath.Join(e.dir, "pods"), NodeHostsFile: filepath.Join(e.dir, "node-hosts")}
	for _, m := range mutate {
		m(&cfg)
	}
	mgr, err := New(cfg, Deps{
		Objects:         e.objects,
		Claims:          e.claims,
		RequestToken:    e.tokens.request,
		TrustBundles:    e.bundles,
		PodCertificates: e.pcrs,
		NodeAllocatable: func() corev1.ResourceList { return e.alloc },
		Mounter:         e.mounter,
		Clock:           e.clock,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.mgr = mgr
	return e
}

func (e *env) podDir(uid types.UID) string { return filepath.Join(e.dir, "pods", string(uid)) }

func (e *env) setUp(pod *corev1.Pod) map[string]string {
	e.t.Helper()
	paths, err := e.mgr.SetUpPod(context.Background(), pod)
	if err != nil {
		e.t.Fatalf("SetUpPod: %v", err)
	}
	return paths
}

func newPod(uid string, vols ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "web", UID: types.UID(uid)},
		Spec: corev1.PodSpec{
			Volumes:    vols,
			Containers: []corev1.Container{{Name: "app"}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// readFile reads a file through the volume's visible names.
func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func fileMode(t *testing.T, p string) os.FileMode {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	return info.Mode().Perm()
}

// listVisible lists a volume directory's names that do not start with "..".
func listVisible(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read dir %s: %v", dir, err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// versionDirs lists a volume directory's timestamped version directories.
func versionDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read dir %s: %v", dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "..2") {
			out = append(out, e.Name())
		}
	}
	return out
}

func mustVolumeErrors(t *testing.T, err error) []*VolumeError {
	t.Helper()
	if err == nil {
		t.Fatal("SetUpPod succeeded, want an error")
	}
	ves := VolumeErrors(err)
	if len(ves) == 0 {
		t.Fatalf("error %v holds no *VolumeError", err)
	}
	return ves
}

var errBoom = errors.New("boom")
