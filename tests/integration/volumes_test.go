package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/integration/framework"
)

func volPV(name, class string, reclaim corev1.PersistentVolumeReclaimPolicy, node string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              class,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: reclaim,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/k1s-test-" + name}},
		},
	}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}
	}
	return pv
}

func volPVC(name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("500Mi")}},
		},
	}
}

func volPod(name, claim, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

func volPoll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func waitPVPhase(t *testing.T, c kubernetes.Interface, name string, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	t.Helper()
	var pv *corev1.PersistentVolume
	volPoll(t, "volume "+name+" "+string(phase), func(ctx context.Context) (bool, error) {
		var err error
		pv, err = c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && pv.Status.Phase == phase, nil
	})
	return pv
}

func waitClaimBound(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	var pvc *corev1.PersistentVolumeClaim
	volPoll(t, "claim "+name+" Bound", func(ctx context.Context) (bool, error) {
		var err error
		pvc, err = c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	})
	return pvc
}

func waitGone(t *testing.T, what string, get func(ctx context.Context) error) {
	t.Helper()
	volPoll(t, what+" gone", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(get(ctx)), nil
	})
}

func hasEvent(ctx context.Context, c kubernetes.Interface, ns, name, reason string) bool {
	evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return false
	}
	return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool { return e.Reason == reason })
}

// TestVolumes runs the control plane's side of persistent volumes: the
// binder, the protection finalizers, WaitForFirstConsumer binding through
// the scheduler, external provisioning, and reclaim.
func TestVolumes(t *testing.T) {
	s := framework.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	ns := "default"
	schedNode(t, c, "vol-n1", "4", nil)
	schedNode(t, c, "vol-n2", "4", nil)

	t.Run("static binding and protection", func(t *testing.T) {
		if _, err := c.CoreV1().PersistentVolumes().Create(ctx, volPV("static-pv", "manual", corev1.PersistentVolumeReclaimRetain, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, volPVC("static", "manual"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pvc := waitClaimBound(t, c, ns, "static")
		pv := waitPVPhase(t, c, "static-pv", corev1.VolumeBound)
		if pvc.Spec.VolumeName != "static-pv" || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
			t.Fatalf("claim volume %q, volume claimRef %+v: not bound to each other", pvc.Spec.VolumeName, pv.Spec.ClaimRef)
		}
		if !slices.Contains(pvc.Finalizers, "kubernetes.io/pvc-protection") || !slices.Contains(pv.Finalizers, "kubernetes.io/pv-protection") {
			t.Errorf("finalizers: claim %v, volume %v", pvc.Finalizers, pv.Finalizers)
		}
		if pv.Status.LastPhaseTransitionTime == nil {
			t.Error("volume lacks lastPhaseTransitionTime")
		}
		// A pod on a node uses the claim: deleting claim and volume waits.
		if _, err := c.CoreV1().Pods(ns).Create(ctx, volPod("user", "static", "vol-n1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "static", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.CoreV1().PersistentVolumes().Delete(ctx, "static-pv", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if got, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "static", metav1.GetOptions{}); err != nil || got.DeletionTimestamp == nil {
			t.Fatalf("claim in use: %v, err %v; want it kept, being deleted", got, err)
		}
		if got, err := c.CoreV1().PersistentVolumes().Get(ctx, "static-pv", metav1.GetOptions{}); err != nil || got.Status.Phase != corev1.VolumeBound {
			t.Fatalf("bound volume: err %v; want it kept while Bound", err)
		}
		// The pod goes: the claim goes, the volume is released, then goes.
		if err := c.CoreV1().Pods(ns).Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "claim", func(ctx context.Context) error {
			_, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "static", metav1.GetOptions{})
			return err
		})
		waitGone(t, "volume", func(ctx context.Context) error {
			_, err := c.CoreV1().PersistentVolumes().Get(ctx, "static-pv", metav1.GetOptions{})
			return err
		})
	})

	t.Run("reclaim", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			reclaim corev1.PersistentVolumeReclaimPolicy
			ann     string
			want    corev1.PersistentVolumePhase
			event   string
		}{
			{name: "retain", reclaim: corev1.PersistentVolumeReclaimRetain, want: corev1.VolumeReleased},
			{name: "delete-external", reclaim: corev1.PersistentVolumeReclaimDelete, ann: "example.com/ext", want: corev1.VolumeReleased},
			{name: "delete-none", reclaim: corev1.PersistentVolumeReclaimDelete, want: corev1.VolumeFailed, event: "VolumeFailedDelete"},
		} {
			pv := volPV("reclaim-"+tc.name, "reclaim-"+tc.name, tc.reclaim, "")
			if tc.ann != "" {
				pv.Annotations = map[string]string{volume.AnnDynamicallyProvisioned: tc.ann}
			}
			if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, volPVC("reclaim-"+tc.name, "reclaim-"+tc.name), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitPVPhase(t, c, pv.Name, corev1.VolumeBound)
			if err := c.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "reclaim-"+tc.name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitPVPhase(t, c, pv.Name, tc.want)
			if tc.event != "" {
				volPoll(t, tc.name+" event", func(ctx context.Context) (bool, error) { return hasEvent(ctx, c, "default", pv.Name, tc.event), nil })
			}
		}
	})

	t.Run("wait for first consumer", func(t *testing.T) {
		mode := storagev1.VolumeBindingWaitForFirstConsumer
		if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"},
			Provisioner: volume.NotSupportedProvisioner, VolumeBindingMode: &mode}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().PersistentVolumes().Create(ctx, volPV("local-n2", "local", corev1.PersistentVolumeReclaimRetain, "vol-n2"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, volPVC("wffc", "local"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		volPoll(t, "WaitForFirstConsumer event", func(ctx context.Context) (bool, error) {
			return hasEvent(ctx, c, ns, "wffc", "WaitForFirstConsumer"), nil
		})
		if got, _ := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "wffc", metav1.GetOptions{}); got.Spec.VolumeName != "" {
			t.Fatalf("claim bound to %s before a pod used it", got.Spec.VolumeName)
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, volPod("consumer", "wffc", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pvc := waitClaimBound(t, c, ns, "wffc")
		if pvc.Spec.VolumeName != "local-n2" {
			t.Errorf("claim bound to %q, want local-n2", pvc.Spec.VolumeName)
		}
		volPoll(t, "pod placed", func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "consumer", metav1.GetOptions{})
			return err == nil && p.Spec.NodeName != "", err
		})
		if p, _ := c.CoreV1().Pods(ns).Get(ctx, "consumer", metav1.GetOptions{}); p.Spec.NodeName != "vol-n2" {
			t.Errorf("pod on %q, want vol-n2 (the volume's node)", p.Spec.NodeName)
		}
		// A second pod of the claim goes where its bound volume is.
		if _, err := c.CoreV1().Pods(ns).Create(ctx, volPod("consumer2", "wffc", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		volPoll(t, "second pod placed", func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "consumer2", metav1.GetOptions{})
			return err == nil && p.Spec.NodeName != "", err
		})
		if p, _ := c.CoreV1().Pods(ns).Get(ctx, "consumer2", metav1.GetOptions{}); p.Spec.NodeName != "vol-n2" {
			t.Errorf("second pod on %q, want vol-n2", p.Spec.NodeName)
		}
	})

	t.Run("external provisioning", func(t *testing.T) {
		mode := storagev1.VolumeBindingWaitForFirstConsumer
		if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "ext"},
			Provisioner: "example.com/ext", VolumeBindingMode: &mode, ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete)}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, volPVC("prov", "ext"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, volPod("prov-user", "prov", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The scheduler picks a node; the binder hands the claim over.
		var pvc *corev1.PersistentVolumeClaim
		volPoll(t, "claim handed to the provisioner", func(ctx context.Context) (bool, error) {
			var err error
			pvc, err = c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "prov", metav1.GetOptions{})
			return err == nil && pvc.Annotations[volume.AnnSelectedNode] != "" && pvc.Annotations[volume.AnnStorageProvisioner] == "example.com/ext" &&
				pvc.Annotations[volume.AnnBetaStorageProvisioner] == "example.com/ext", nil
		})
		node := pvc.Annotations[volume.AnnSelectedNode]
		volPoll(t, "ExternalProvisioning event", func(ctx context.Context) (bool, error) {
			return hasEvent(ctx, c, ns, "prov", "ExternalProvisioning"), nil
		})
		// Play the external provisioner: a volume on that node, pre-bound.
		pv := volPV("pvc-"+string(pvc.UID), "ext", corev1.PersistentVolumeReclaimDelete, node)
		pv.Annotations = map[string]string{volume.AnnDynamicallyProvisioned: "example.com/ext"}
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "prov", UID: pvc.UID}
		if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitClaimBound(t, c, ns, "prov")
		volPoll(t, "pod bound to the selected node", func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "prov-user", metav1.GetOptions{})
			return err == nil && p.Spec.NodeName == node, err
		})
		// Reclaim Delete of a provisioned volume: Released, for the provisioner.
		if err := c.CoreV1().Pods(ns).Delete(ctx, "prov-user", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		if err := c.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "prov", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPVPhase(t, c, pv.Name, corev1.VolumeReleased)
	})

	t.Run("expansion only where the class allows it", func(t *testing.T) {
		for _, sc := range []*storagev1.StorageClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "grows"}, Provisioner: "example.com/none", AllowVolumeExpansion: ptr.To(true)},
			{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}, Provisioner: "example.com/none"},
		} {
			if _, err := c.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, class := range []string{"grows", "fixed"} {
			if _, err := c.CoreV1().PersistentVolumes().Create(ctx, volPV(class+"-pv", class, corev1.PersistentVolumeReclaimRetain, ""), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, volPVC(class, class), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		pending := volPVC("pending", "grows")
		pending.Spec.VolumeName = "no-such-pv" // stays Pending
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pending, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		grow := func(name string) error {
			pvc := waitClaimPhase(t, c, ns, name)
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("800Mi")
			_, err := c.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{})
			return err
		}
		waitClaimBound(t, c, ns, "grows")
		waitClaimBound(t, c, ns, "fixed")
		if err := grow("grows"); err != nil {
			t.Errorf("growing a bound claim of an expandable class: %v", err)
		}
		if err := grow("fixed"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "must support resize") {
			t.Errorf("growing a claim whose class forbids it: %v, want 403 naming the class's resize support", err)
		}
		// Validation refuses it before admission, as upstream's.
		if err := grow("pending"); !apierrors.IsInvalid(err) {
			t.Errorf("growing an unbound claim: %v, want 422", err)
		}
	})

	t.Run("unbound immediate claim", func(t *testing.T) {
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, volPVC("nothing", "none-such"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, volPod("stuck", "nothing", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		volPoll(t, "FailedScheduling", func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "stuck", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
					if cond.Message != "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling." {
						t.Logf("message %q", cond.Message)
					}
					return cond.Reason == corev1.PodReasonUnschedulable && strings.Contains(cond.Message, "pod has unbound immediate PersistentVolumeClaims"), nil
				}
			}
			return false, nil
		})
	})
}

// waitClaimPhase returns the claim once it exists (any phase).
func waitClaimPhase(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	var pvc *corev1.PersistentVolumeClaim
	volPoll(t, "claim "+name, func(ctx context.Context) (bool, error) {
		got, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pvc = got
		return true, nil
	})
	return pvc
}
