package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// TestLocalPath runs persistent volumes end to end on one node: the
// default local-path StorageClass, the node's provisioner, the binder and
// the scheduler's volume binding (WaitForFirstConsumer), the agent's
// mounts of persistentVolumeClaim and ephemeral volumes, reclaim Delete
// and pvc-protection, with real containers.
func TestLocalPath(t *testing.T) {
	s := framework.NewNodeServer(t)
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	c := s.Client(t)
	ctx := context.Background()
	storage := filepath.Join(s.DataDir, "storage")
	waitServiceAccount(t, c, "default")
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := s.Kubectl(ctx, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	t.Run("default StorageClass", func(t *testing.T) {
		var sc *storagev1.StorageClass
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			sc, err = c.StorageV1().StorageClasses().Get(ctx, "local-path", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatal("no local-path StorageClass")
		}
		if sc.Provisioner != "rancher.io/local-path" || sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" ||
			sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer ||
			sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
			t.Fatalf("local-path StorageClass %+v", sc)
		}
	})

	t.Run("statefulset: a volume per replica, data survives the pod", func(t *testing.T) {
		ss := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To[int32](2),
				ServiceName: "db",
				Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
					Spec: corev1.PodSpec{
						TerminationGracePeriodSeconds: ptr.To[int64](1),
						Containers: []corev1.Container{{
							Name: "db", Image: busybox, ImagePullPolicy: corev1.PullNever,
							Command:      []string{"sleep", "3600"},
							VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
						}},
					},
				},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claimTemplate("data", "local-path", "16Mi")},
			},
		}
		if _, err := c.AppsV1().StatefulSets("default").Create(ctx, ss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			name := fmt.Sprintf("db-%d", i)
			framework.WaitPod(t, c, "default", name, 120*time.Second, "Running", framework.Running)
			pvc, pv := boundClaim(t, c, "data-"+name)
			dir := assertLocalPathVolume(t, storage, pvc, pv)
			kubectl(t, "exec", name, "--", "sh", "-c", "echo hello-from-"+name+" > /data/f")
			if got, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || strings.TrimSpace(string(got)) != "hello-from-"+name {
				t.Fatalf("file written in %s, read on the node at %s: %q, %v", name, dir, got, err)
			}
		}
		old := framework.WaitPod(t, c, "default", "db-0", time.Second, "Running", framework.Running)
		if err := c.CoreV1().Pods("default").Delete(ctx, "db-0", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.WaitPod(t, c, "default", "db-0", 120*time.Second, "replaced and Running", func(p *corev1.Pod) bool {
			return p.UID != old.UID && framework.Running(p)
		})
		if got := strings.TrimSpace(kubectl(t, "exec", "db-0", "--", "cat", "/data/f")); got != "hello-from-db-0" {
			t.Fatalf("the new db-0 reads %q, want the old pod's data", got)
		}
	})

	t.Run("reclaim Delete removes the volume and its directory", func(t *testing.T) {
		kubectl(t, "scale", "statefulset/db", "--replicas=1")
		waitGone(t, "pod db-1", func(ctx context.Context) error {
			_, err := c.CoreV1().Pods("default").Get(ctx, "db-1", metav1.GetOptions{})
			return err
		})
		pvc, pv := boundClaim(t, c, "data-db-1")
		dir := pv.Spec.HostPath.Path
		if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitVolumeGone(t, c, pvc.Name, pv.Name, dir)
	})

	t.Run("a claim in use stays until its pod is gone", func(t *testing.T) {
		pvc, pv := boundClaim(t, c, "data-db-0")
		dir := pv.Spec.HostPath.Path
		if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// db-0 still runs and uses it: pvc-protection holds the claim.
		time.Sleep(5 * time.Second)
		got, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("claim used by a running pod was removed: %v", err)
		}
		if got.DeletionTimestamp == nil {
			t.Errorf("claim has no deletion timestamp")
		}
		if _, err := os.Stat(filepath.Join(dir, "f")); err != nil {
			t.Fatalf("the volume's data went while its pod runs: %v", err)
		}
		kubectl(t, "scale", "statefulset/db", "--replicas=0")
		waitVolumeGone(t, c, pvc.Name, pv.Name, dir)
	})

	t.Run("WaitForFirstConsumer: pending until a pod uses it", func(t *testing.T) {
		claim := claimTemplate("later", "", "8Mi") // the default class
		if _, err := c.CoreV1().PersistentVolumeClaims("default").Create(ctx, &claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		got, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "later", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != corev1.ClaimPending || got.Spec.VolumeName != "" {
			t.Fatalf("claim without consumer: phase %s volume %q, want Pending and no volume", got.Status.Phase, got.Spec.VolumeName)
		}
		if entries, _ := os.ReadDir(storage); len(entries) != 0 {
			t.Fatalf("storage holds %d directories with no consumer", len(entries))
		}
		pod := volumePod("later-user", corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "later"}}})
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.WaitPod(t, c, "default", "later-user", 120*time.Second, "Running", framework.Running)
		pvc, pv := boundClaim(t, c, "later")
		if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "local-path" {
			t.Errorf("claim without a class got class %v, want the default local-path", pvc.Spec.StorageClassName)
		}
		dir := assertLocalPathVolume(t, storage, pvc, pv)

		// Expansion (the class allows it): the volume and the claim's
		// status get the new size.
		kubectl(t, "patch", "pvc", "later", "-p", `{"spec":{"resources":{"requests":{"storage":"24Mi"}}}}`)
		want := resource.MustParse("24Mi")
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			pv, err := c.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			pvc, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "later", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return pv.Spec.Capacity.Storage().Cmp(want) == 0 && pvc.Status.Capacity.Storage().Cmp(want) == 0, nil
		})
		if err != nil {
			t.Fatalf("claim grown to %s: volume or claim status not resized", want.String())
		}

		if err := c.CoreV1().Pods("default").Delete(ctx, "later-user", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "later", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitVolumeGone(t, c, "later", pv.Name, dir)
	})

	t.Run("ephemeral volume lives and goes with its pod", func(t *testing.T) {
		tmpl := claimTemplate("", "local-path", "8Mi")
		pod := volumePod("eph", corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: tmpl.Spec},
		}}})
		created, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		framework.WaitPod(t, c, "default", "eph", 120*time.Second, "Running", framework.Running)
		pvc, pv := boundClaim(t, c, "eph-scratch")
		if !metav1.IsControlledBy(pvc, created) {
			t.Errorf("ephemeral claim owners %+v, want the pod", pvc.OwnerReferences)
		}
		dir := assertLocalPathVolume(t, storage, pvc, pv)
		kubectl(t, "exec", "eph", "--", "sh", "-c", "echo scratch > /mnt/f")
		if _, err := os.Stat(filepath.Join(dir, "f")); err != nil {
			t.Fatalf("file written to the ephemeral volume: %v", err)
		}
		if err := c.CoreV1().Pods("default").Delete(ctx, "eph", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitVolumeGone(t, c, "eph-scratch", pv.Name, dir)
	})

	t.Run("refused modes are said on the claim", func(t *testing.T) {
		claim := claimTemplate("shared", "local-path", "8Mi")
		claim.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		if _, err := c.CoreV1().PersistentVolumeClaims("default").Create(ctx, &claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := volumePod("shared-user", corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "shared"}}})
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=shared,reason=ProvisioningFailed"})
			if err != nil {
				return false, nil
			}
			for _, e := range evs.Items {
				if strings.Contains(e.Message, "ReadWriteMany") {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatal("no ProvisioningFailed event naming ReadWriteMany on the claim")
		}
		_ = c.CoreV1().Pods("default").Delete(ctx, "shared-user", metav1.DeleteOptions{})
		_ = c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "shared", metav1.DeleteOptions{})
	})
}

func claimTemplate(name, class, size string) corev1.PersistentVolumeClaim {
	pvc := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	return pvc
}

// volumePod is a scheduled (not pinned) pod mounting vol at /mnt.
func volumePod(name string, vol corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Volumes:                       []corev1.Volume{vol},
			Containers: []corev1.Container{{
				Name: "c", Image: busybox, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: vol.Name, MountPath: "/mnt"}},
			}},
		},
	}
}

// boundClaim waits for a claim to be Bound and returns it with its volume.
func boundClaim(t *testing.T, c kubernetes.Interface, name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	t.Helper()
	var pvc *corev1.PersistentVolumeClaim
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		pvc, err = c.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	})
	if err != nil {
		t.Fatalf("claim %s not Bound: %+v", name, pvc)
	}
	pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("volume of claim %s: %v", name, err)
	}
	return pvc, pv
}

// assertLocalPathVolume checks a volume is the node provisioner's for the
// claim and returns its directory.
func assertLocalPathVolume(t *testing.T, storage string, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) string {
	t.Helper()
	want := filepath.Join(storage, fmt.Sprintf("pvc-%s_%s_%s", pvc.UID, pvc.Namespace, pvc.Name))
	if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != want {
		t.Fatalf("volume %s source %+v, want hostPath %s", pv.Name, pv.Spec.PersistentVolumeSource, want)
	}
	if pv.Annotations["pv.kubernetes.io/provisioned-by"] != "rancher.io/local-path" {
		t.Errorf("volume %s annotations %v", pv.Name, pv.Annotations)
	}
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil || len(na.Required.NodeSelectorTerms) != 1 ||
		fmt.Sprint(na.Required.NodeSelectorTerms[0].MatchExpressions) != fmt.Sprint([]corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{framework.NodeName}}}) {
		t.Errorf("volume %s node affinity %+v, want this node", pv.Name, na)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("volume %s reclaim policy %s", pv.Name, pv.Spec.PersistentVolumeReclaimPolicy)
	}
	if fi, err := os.Stat(want); err != nil || !fi.IsDir() {
		t.Fatalf("volume directory %s: %v", want, err)
	}
	return want
}

// waitVolumeGone waits until a claim, its volume and the volume's
// directory are all gone.
func waitVolumeGone(t *testing.T, c kubernetes.Interface, claim, volume, dir string) {
	t.Helper()
	waitGone(t, "claim "+claim, func(ctx context.Context) error {
		_, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim, metav1.GetOptions{})
		return err
	})
	waitGone(t, "volume "+volume, func(ctx context.Context) error {
		_, err := c.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
		return err
	})
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("volume directory %s still there after its volume went: %v", dir, err)
	}
}

// waitGone waits until get reports NotFound.
func waitGone(t *testing.T, what string, get func(context.Context) error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 120*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx)), nil
	})
	if err != nil {
		t.Fatalf("%s not gone within 120s", what)
	}
}
