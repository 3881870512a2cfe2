package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/k1s/k1s/agent/volume"
	"github.com/k1s/k1s/internal/fakecri"
)

// fakeRecorder keeps events as "Type Reason Message" strings.
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *fakeRecorder) Event(_ runtime.Object, typ, reason, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, typ+" "+reason+" "+msg)
}

func (r *fakeRecorder) Eventf(o runtime.Object, typ, reason, format string, args ...any) {
	r.Event(o, typ, reason, fmt.Sprintf(format, args...))
}

func (r *fakeRecorder) AnnotatedEventf(o runtime.Object, _ map[string]string, typ, reason, format string, args ...any) {
	r.Eventf(o, typ, reason, format, args...)
}

// has reports whether an event with this reason was recorded.
func (r *fakeRecorder) has(reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if strings.Fields(e)[1] == reason {
			return true
		}
	}
	return false
}

// fakeEnv serves configmaps, secrets and services.
type fakeEnv struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	services   []*corev1.Service
	getErr     error
}

func (e *fakeEnv) GetConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if e.getErr != nil {
		return nil, e.getErr
	}
	if cm, ok := e.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
}

func (e *fakeEnv) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if e.getErr != nil {
		return nil, e.getErr
	}
	if s, ok := e.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

func (e *fakeEnv) ListServices(ns string) ([]*corev1.Service, error) {
	var out []*corev1.Service
	for _, s := range e.services {
		if s.Namespace == ns || (s.Namespace == "default" && s.Name == "kubernetes") {
			out = append(out, s)
		}
	}
	return out, nil
}

// fakeVolumes gives every container one mount per volume path and records
// the options it was called with.
type fakeVolumes struct {
	mu   sync.Mutex
	opts []volume.ContainerOptions
	err  error
}

func (v *fakeVolumes) Mounts(_ *corev1.Pod, c *corev1.Container, paths map[string]string, opts volume.ContainerOptions) ([]*runtimeapi.Mount, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.opts = append(v.opts, opts)
	if v.err != nil {
		return nil, v.err
	}
	var out []*runtimeapi.Mount
	for _, m := range c.VolumeMounts {
		out = append(out, &runtimeapi.Mount{ContainerPath: m.MountPath, HostPath: paths[m.Name]})
	}
	return out, nil
}

// testEnv is a runtime manager over fakes.
type testEnv struct {
	m       *Manager
	rt      *fakecri.Runtime
	images  *fakecri.Images
	clock   *testingclock.FakeClock
	events  *fakeRecorder
	env     *fakeEnv
	volumes *fakeVolumes
	logDir  string
}

var testStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTestEnv(t *testing.T, images ...string) *testEnv {
	t.Helper()
	clk := testingclock.NewFakeClock(testStart)
	te := &testEnv{
		rt: fakecri.NewRuntime(clk), images: fakecri.NewImages(images...), clock: clk, events: &fakeRecorder{},
		env:     &fakeEnv{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}},
		volumes: &fakeVolumes{}, logDir: t.TempDir(),
	}
	m, err := New(Config{
		NodeName: "node1", NodeIPs: []net.IP{net.ParseIP("192.168.5.10"), net.ParseIP("fd00::10")},
		Hostname: "node1-host", PodLogsDir: te.logDir, ResolvConf: filepath.Join(t.TempDir(), "missing"),
		MemoryCapacity: 4 << 30,
	}, te.rt, te.images, te.volumes, te.env, te.events, clk)
	if err != nil {
		t.Fatal(err)
	}
	te.m = m
	return te
}

// status reads the pod's runtime status.
func (te *testEnv) status(t *testing.T, pod *corev1.Pod) *PodStatus {
	t.Helper()
	st, err := te.m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// sync runs one SyncPod pass from a fresh runtime status.
func (te *testEnv) sync(t *testing.T, pod *corev1.Pod) SyncResult {
	t.Helper()
	return te.m.SyncPod(context.Background(), pod, te.status(t, pod), nil, Probes{})
}

func testPod(containers ...corev1.Container) *corev1.Pod {
	for i := range containers {
		if containers[i].Image == "" {
			containers[i].Image = "k1s.local/busybox:1.36"
		}
		if containers[i].ImagePullPolicy == "" {
			containers[i].ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: types.UID("uid-1")},
		Spec: corev1.PodSpec{
			Containers: containers, RestartPolicy: corev1.RestartPolicyAlways,
			DNSPolicy: corev1.DNSClusterFirst, NodeName: "node1",
		},
	}
}

var errBoom = errors.New("boom")
