package localpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/k1s/k1s/internal/cachesync"
)

const node = "node-a"

func class(expand bool, reclaim corev1.PersistentVolumeReclaimPolicy) *storagev1.StorageClass {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	return &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: "local-path"},
		Provisioner:          ProvisionerName,
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &wffc,
		AllowVolumeExpansion: &expand,
	}
}

func claim(mut ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	sc := "local-path"
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "u1", Annotations: map[string]string{
			AnnStorageProvisioner: ProvisionerName, AnnSelectedNode: node,
		}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, m := range mut {
		m(c)
	}
	return c
}

// start builds a provisioner over objs with synced informers and a fake
// recorder, its storage path a new directory.
func start(t *testing.T, objs ...runtime.Object) (*Provisioner, *fake.Clientset, *record.FakeRecorder, string) {
	t.Helper()
	storage := t.TempDir()
	p, client, rec := startIn(t, storage, objs...)
	return p, client, rec, storage
}

func startIn(t *testing.T, storage string, objs ...runtime.Object) (*Provisioner, *fake.Clientset, *record.FakeRecorder) {
	t.Helper()
	client := fake.NewClientset(objs...)
	p, err := New(Config{NodeName: node, StoragePath: storage}, client)
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(10)
	p.recorder = rec
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); p.factory.Shutdown() })
	p.factory.Start(ctx.Done())
	if !cachesync.WaitForCacheSync(ctx, p.synced...) {
		t.Fatal("caches did not sync")
	}
	return p, client, rec
}

func events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestProvision(t *testing.T) {
	rwx := func(c *corev1.PersistentVolumeClaim) {
		c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany}
	}
	block := func(c *corev1.PersistentVolumeClaim) { m := corev1.PersistentVolumeBlock; c.Spec.VolumeMode = &m }
	tests := []struct {
		name      string
		claim     *corev1.PersistentVolumeClaim
		class     *storagev1.StorageClass
		wantPV    bool
		wantEvent string // substring of the one event expected; "" for none
	}{
		{name: "selected node is this one", claim: claim(), class: class(false, corev1.PersistentVolumeReclaimDelete), wantPV: true, wantEvent: "Normal ProvisioningSucceeded"},
		{name: "beta provisioner annotation", claim: claim(func(c *corev1.PersistentVolumeClaim) {
			delete(c.Annotations, AnnStorageProvisioner)
			c.Annotations[AnnBetaStorageProvisioner] = ProvisionerName
		}), class: class(false, corev1.PersistentVolumeReclaimRetain), wantPV: true, wantEvent: "ProvisioningSucceeded"},
		{name: "another node's claim", claim: claim(func(c *corev1.PersistentVolumeClaim) { c.Annotations[AnnSelectedNode] = "node-b" }), class: class(false, corev1.PersistentVolumeReclaimDelete)},
		{name: "no selected node yet", claim: claim(func(c *corev1.PersistentVolumeClaim) { delete(c.Annotations, AnnSelectedNode) }), class: class(false, corev1.PersistentVolumeReclaimDelete)},
		{name: "another provisioner", claim: claim(func(c *corev1.PersistentVolumeClaim) { c.Annotations[AnnStorageProvisioner] = "ebs.csi.aws.com" }), class: class(false, corev1.PersistentVolumeReclaimDelete)},
		{name: "already bound", claim: claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-x" }), class: class(false, corev1.PersistentVolumeReclaimDelete)},
		{name: "ReadWriteMany refused", claim: claim(rwx), class: class(false, corev1.PersistentVolumeReclaimDelete), wantEvent: "Warning ProvisioningFailed access mode ReadWriteMany"},
		{name: "Block refused", claim: claim(block), class: class(false, corev1.PersistentVolumeReclaimDelete), wantEvent: "Warning ProvisioningFailed volumeMode Block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, client, rec, storage := start(t, tt.claim, tt.class)
			if err := p.sync(context.Background(), claimKeyPrefix+"ns/data"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			pvs, err := client.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(storage, "pvc-u1_ns_data")
			_, statErr := os.Stat(dir)
			if !tt.wantPV {
				if len(pvs.Items) != 0 || statErr == nil {
					t.Fatalf("provisioned %d volumes (directory err %v), want none", len(pvs.Items), statErr)
				}
			} else {
				if len(pvs.Items) != 1 {
					t.Fatalf("got %d volumes, want 1", len(pvs.Items))
				}
				pv := pvs.Items[0]
				if pv.Name != "pvc-u1" || pv.Annotations[AnnProvisionedBy] != ProvisionerName {
					t.Errorf("volume %s annotations %v", pv.Name, pv.Annotations)
				}
				if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != dir || *pv.Spec.HostPath.Type != corev1.HostPathDirectoryOrCreate {
					t.Errorf("hostPath %+v, want %s", pv.Spec.HostPath, dir)
				}
				if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "1Gi" {
					t.Errorf("capacity %s", q.String())
				}
				if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != "u1" || pv.Spec.ClaimRef.Name != "data" {
					t.Errorf("claimRef %+v", pv.Spec.ClaimRef)
				}
				if pv.Spec.PersistentVolumeReclaimPolicy != *tt.class.ReclaimPolicy || pv.Spec.StorageClassName != "local-path" {
					t.Errorf("reclaim %s class %s", pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.StorageClassName)
				}
				if !onNode(&pv, node) || onNode(&pv, "node-b") {
					t.Errorf("node affinity %+v", pv.Spec.NodeAffinity)
				}
				if *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || len(pv.Spec.AccessModes) != 1 || pv.Spec.AccessModes[0] != corev1.ReadWriteOnce {
					t.Errorf("mode %s access %v", *pv.Spec.VolumeMode, pv.Spec.AccessModes)
				}
				if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o777 {
					t.Errorf("directory %s: %v %v", dir, fi, err)
				}
			}
			evs := events(rec)
			if tt.wantEvent == "" && len(evs) > 0 || tt.wantEvent != "" && (len(evs) != 1 || !strings.Contains(evs[0], tt.wantEvent)) {
				t.Errorf("events %q, want one with %q", evs, tt.wantEvent)
			}
		})
	}
}

func releasedVolume(path string, reclaim corev1.PersistentVolumeReclaimPolicy, nodeName string, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	p := &Provisioner{cfg: Config{NodeName: nodeName}}
	pv := p.newVolume(claim(), class(false, reclaim), "pvc-u1", path)
	pv.UID = "pv-uid"
	pv.Status.Phase = phase
	return pv
}

func TestDeleteReleased(t *testing.T) {
	tests := []struct {
		name        string
		pv          func(storage string) *corev1.PersistentVolume
		wantDeleted bool
		wantErr     bool
	}{
		{name: "released, Delete", pv: func(s string) *corev1.PersistentVolume {
			return releasedVolume(filepath.Join(s, "pvc-u1_ns_data"), corev1.PersistentVolumeReclaimDelete, node, corev1.VolumeReleased)
		}, wantDeleted: true},
		{name: "released, Retain", pv: func(s string) *corev1.PersistentVolume {
			return releasedVolume(filepath.Join(s, "pvc-u1_ns_data"), corev1.PersistentVolumeReclaimRetain, node, corev1.VolumeReleased)
		}},
		{name: "bound", pv: func(s string) *corev1.PersistentVolume {
			return releasedVolume(filepath.Join(s, "pvc-u1_ns_data"), corev1.PersistentVolumeReclaimDelete, node, corev1.VolumeBound)
		}},
		{name: "another node's", pv: func(s string) *corev1.PersistentVolume {
			return releasedVolume(filepath.Join(s, "pvc-u1_ns_data"), corev1.PersistentVolumeReclaimDelete, "node-b", corev1.VolumeReleased)
		}},
		{name: "path outside the storage path", pv: func(s string) *corev1.PersistentVolume {
			return releasedVolume(filepath.Join(s, "pvc-u1_ns_data", ".."), corev1.PersistentVolumeReclaimDelete, node, corev1.VolumeReleased)
		}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			storage := t.TempDir()
			dir := filepath.Join(storage, "pvc-u1_ns_data")
			if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			p, client, rec := startIn(t, storage, tt.pv(storage))
			ctx := context.Background()
			err := p.sync(ctx, volumeKeyPrefix+"pvc-u1")
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync: %v, want error %v", err, tt.wantErr)
			}
			_, getErr := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-u1", metav1.GetOptions{})
			_, statErr := os.Stat(dir)
			if tt.wantDeleted != (getErr != nil) || tt.wantDeleted != (statErr != nil) {
				t.Fatalf("volume get err %v, directory stat err %v, want deleted %v", getErr, statErr, tt.wantDeleted)
			}
			if _, err := os.Stat(storage); err != nil {
				t.Fatalf("storage path itself: %v", err)
			}
			if tt.wantErr {
				if evs := events(rec); len(evs) != 1 || !strings.Contains(evs[0], ReasonVolumeFailedDelete) {
					t.Errorf("events %q", evs)
				}
			}
		})
	}
}

func TestExpand(t *testing.T) {
	bound := func(size string) *corev1.PersistentVolumeClaim {
		return claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeName = "pvc-u1"
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
			c.Status.Phase = corev1.ClaimBound
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
		})
	}
	tests := []struct {
		name     string
		claim    *corev1.PersistentVolumeClaim
		expand   bool
		wantSize string
	}{
		{name: "grown, class allows", claim: bound("3Gi"), expand: true, wantSize: "3Gi"},
		{name: "grown, class forbids", claim: bound("3Gi"), expand: false, wantSize: "1Gi"},
		{name: "unchanged", claim: bound("1Gi"), expand: true, wantSize: "1Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv := releasedVolume("/somewhere/pvc-u1", corev1.PersistentVolumeReclaimDelete, node, corev1.VolumeBound)
			p, client, rec, _ := start(t, tt.claim, pv, class(tt.expand, corev1.PersistentVolumeReclaimDelete))
			if err := p.sync(context.Background(), claimKeyPrefix+"ns/data"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			gotPV, _ := client.CoreV1().PersistentVolumes().Get(context.Background(), "pvc-u1", metav1.GetOptions{})
			gotClaim, _ := client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data", metav1.GetOptions{})
			pvSize, claimSize := gotPV.Spec.Capacity[corev1.ResourceStorage], gotClaim.Status.Capacity[corev1.ResourceStorage]
			if pvSize.String() != tt.wantSize || claimSize.String() != tt.wantSize {
				t.Fatalf("volume %s, claim status %s, want %s", pvSize.String(), claimSize.String(), tt.wantSize)
			}
			if evs := events(rec); (tt.wantSize != "1Gi") != (len(evs) == 1) {
				t.Errorf("events %q", evs)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{NodeName: "n", StoragePath: "/x"}, ""},
		{Config{NodeName: "n", StoragePath: "rel"}, "--default-local-storage-path"},
		{Config{NodeName: "n", StoragePath: "/"}, "--default-local-storage-path"},
		{Config{NodeName: "", StoragePath: "/x"}, "--node-name"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
	}
}
