package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeClaims serves claims and volumes from maps and counts reads.
type fakeClaims struct {
	mu      sync.Mutex
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	reads   int
}

func (f *fakeClaims) GetPersistentVolumeClaim(_ context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	c, ok := f.claims[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("persistentvolumeclaims"), name)
	}
	return c.DeepCopy(), nil
}

func (f *fakeClaims) GetPersistentVolume(_ context.Context, name string) (*corev1.PersistentVolume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	v, ok := f.volumes[name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("persistentvolumes"), name)
	}
	return v.DeepCopy(), nil
}

// bind stores a claim bound to a volume with src.
func (f *fakeClaims) bind(ns, name string, src corev1.PersistentVolumeSource, mutate ...func(*corev1.PersistentVolumeClaim, *corev1.PersistentVolume)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("claim-uid-" + name)},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv-" + name},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	v := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: src,
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: name, UID: c.UID},
		},
	}
	for _, m := range mutate {
		m(c, v)
	}
	f.claims[ns+"/"+name] = c
	f.volumes[v.Name] = v
}

func claimVolume(name, claim string, readOnly bool) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}}
}

func TestClaimVolume(t *testing.T) {
	dirType := corev1.HostPathDirectoryOrCreate
	block := corev1.PersistentVolumeBlock
	tests := []struct {
		name    string
		setup   func(e *env, dir string) // dir: a fresh directory for the volume
		wantErr string                   // "" for success, the path being dir
	}{
		{name: "hostPath DirectoryOrCreate", setup: func(e *env, dir string) {
			e.claims.bind("ns1", "data", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType}})
		}},
		{name: "local", setup: func(e *env, dir string) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			e.claims.bind("ns1", "data", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}})
		}},
		{name: "local path missing", setup: func(e *env, dir string) {
			e.claims.bind("ns1", "data", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}})
		}, wantErr: "does not exist"},
		{name: "claim missing", setup: func(*env, string) {}, wantErr: `persistentvolumeclaim "data" not found`},
		{name: "claim pending", setup: func(e *env, dir string) {
			e.claims.bind("ns1", "data", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}, func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
				c.Status.Phase, c.Spec.VolumeName = corev1.ClaimPending, ""
			})
		}, wantErr: `persistentvolumeclaim "data" is not bound (phase "Pending")`},
		{name: "claim being deleted", setup: func(e *env, dir string) {
			e.claims.bind("ns1", "data", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}, func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
				now := metav1.Now()
				c.DeletionTimestamp = &now
			})
		}, wantErr: "is being deleted"},
		{name: "volume bound to another claim", setup: func(e *env, dir string) {
			e.claims.bind("ns1", "data", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}, func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) {
				v.Spec.ClaimRef.UID = "someone-else"
			})
		}, wantErr: "is not bound to claim"},
		{name: "block volume", setup: func(e *env, dir string) {
			e.claims.bind("ns1", "data", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}, func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) {
				v.Spec.VolumeMode = &block
			})
		}, wantErr: "volumeMode Block"},
		{name: "unsupported source", setup: func(e *env, dir string) {
			e.claims.bind("ns1", "data", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}})
		}, wantErr: "not supported by this node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			dir := filepath.Join(e.dir, "storage", "pvc-1")
			tt.setup(e, dir)
			pod := newPod("uid1", claimVolume("vol", "data", false))
			paths, err := e.mgr.SetUpPod(context.Background(), pod)
			if tt.wantErr != "" {
				errs := mustVolumeErrors(t, err)
				if len(errs) != 1 || errs[0].Volume != "vol" || !strings.Contains(errs[0].Error(), tt.wantErr) {
					t.Fatalf("error %v, want one for volume vol with %q", err, tt.wantErr)
				}
				if _, ok := paths["vol"]; ok {
					t.Errorf("volume has a path despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if paths["vol"] != dir {
				t.Fatalf("path %q, want %q", paths["vol"], dir)
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				t.Fatalf("volume directory: %v", err)
			}
			// Once ready, the claim is not read again.
			reads := e.claims.reads
			e.setUp(pod)
			if e.claims.reads != reads {
				t.Errorf("claim read again on a later sync")
			}
		})
	}
}

func TestClaimVolumeWaitsForBinding(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.dir, "storage", "pvc-1")
	e.claims.bind("ns1", "data", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}, func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
		c.Status.Phase = corev1.ClaimPending
	})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pod := newPod("uid1", claimVolume("vol", "data", false))
	if _, err := e.mgr.SetUpPod(context.Background(), pod); err == nil {
		t.Fatal("a pending claim set up")
	}
	e.claims.mu.Lock()
	e.claims.claims["ns1/data"].Status.Phase = corev1.ClaimBound
	e.claims.mu.Unlock()
	if paths := e.setUp(pod); paths["vol"] != dir {
		t.Fatalf("path %q once bound, want %q", paths["vol"], dir)
	}
}

func TestEphemeralVolume(t *testing.T) {
	ctrl := true
	tests := []struct {
		name    string
		owner   []metav1.OwnerReference
		wantErr string
	}{
		{name: "owned by the pod", owner: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid1", Controller: &ctrl}}},
		{name: "not owned", wantErr: "not owned by the pod"},
		{name: "owned by another pod", owner: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "old-uid", Controller: &ctrl}}, wantErr: "not owned by the pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			dir := filepath.Join(e.dir, "storage", "pvc-1")
			e.claims.bind("ns1", "web-scratch", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr(corev1.HostPathDirectoryOrCreate)}}, func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
				c.OwnerReferences = tt.owner
			})
			pod := newPod("uid1", corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
			paths, err := e.mgr.SetUpPod(context.Background(), pod)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || paths["scratch"] != dir {
				t.Fatalf("paths %v, err %v; want %s", paths, err, dir)
			}
		})
	}
}

func TestClaimMountsReadOnlyAndSubPath(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.dir, "storage", "pvc-1")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.claims.bind("ns1", "data", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}})
	pod := newPod("uid1", claimVolume("rw", "data", false), claimVolume("ro", "data", true))
	paths := e.setUp(pod)
	c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
		{Name: "rw", MountPath: "/data"},
		{Name: "ro", MountPath: "/ro"},
		{Name: "rw", MountPath: "/ro-by-mount", ReadOnly: true},
		{Name: "rw", MountPath: "/sub", SubPath: "sub"},
	}}
	mounts, err := e.mgr.Mounts(pod, c, paths, ContainerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: dir},
		{ContainerPath: "/ro", HostPath: dir, Readonly: true},
		{ContainerPath: "/ro-by-mount", HostPath: dir, Readonly: true},
	}
	for i, w := range want {
		if mounts[i].String() != w.String() {
			t.Errorf("mount %d = %v, want %v", i, mounts[i], w)
		}
	}
	if sub := mounts[3]; sub.ContainerPath != "/sub" || sub.Readonly || !strings.HasPrefix(sub.HostPath, filepath.Join(e.podDir("uid1"), "volume-subpaths")) {
		t.Errorf("subPath mount %v", sub)
	}
}
