package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// EphemeralClaimName is the claim of an ephemeral volume: <pod>-<volume>,
// the name the ephemeral-volume controller gives it.
func EphemeralClaimName(pod *corev1.Pod, vol *corev1.Volume) string {
	return pod.Name + "-" + vol.Name
}

// setUpClaim resolves a persistentVolumeClaim (or, when ephemeral, the
// pod's own claim) to its bound volume and returns the volume's host path,
// used in place: the runtime bind-mounts it into the containers. Once
// found, the path is kept for the pod's life; until then every sync looks
// again (an unbound claim makes the pod wait, with a FailedMount event).
func (m *manager) setUpClaim(ctx context.Context, pod *corev1.Pod, vs *volumeState, claimName string, ephemeral bool) (string, error) {
	if vs.ready {
		return vs.path, nil
	}
	if m.claims == nil {
		return "", errors.New("this node reads no persistentvolumeclaims")
	}
	claim, err := m.claims.GetPersistentVolumeClaim(ctx, pod.Namespace, claimName)
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("persistentvolumeclaim %q not found", claimName)
	}
	if err != nil {
		return "", fmt.Errorf("get persistentvolumeclaim %q: %w", claimName, err)
	}
	if ephemeral && !metav1.IsControlledBy(claim, pod) {
		return "", fmt.Errorf("persistentvolumeclaim %q of the ephemeral volume is not owned by the pod", claimName)
	}
	if claim.DeletionTimestamp != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q is being deleted", claimName)
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.VolumeName == "" {
		return "", fmt.Errorf("persistentvolumeclaim %q is not bound (phase %q)", claimName, claim.Status.Phase)
	}
	pv, err := m.claims.GetPersistentVolume(ctx, claim.Spec.VolumeName)
	if err != nil {
		return "", fmt.Errorf("get persistentvolume %q of claim %q: %w", claim.Spec.VolumeName, claimName, err)
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID {
		return "", fmt.Errorf("persistentvolume %q is not bound to claim %q", pv.Name, claimName)
	}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return "", fmt.Errorf("persistentvolume %q: volumeMode Block is not supported by this node", pv.Name)
	}
	var path string
	switch {
	case pv.Spec.HostPath != nil:
		if err := checkHostPath(pv.Spec.HostPath); err != nil {
			return "", fmt.Errorf("persistentvolume %q: %w", pv.Name, err)
		}
		path = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		// A local volume's path must be there already: nothing creates it.
		fi, err := os.Stat(pv.Spec.Local.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("persistentvolume %q: local path %q does not exist", pv.Name, pv.Spec.Local.Path)
		}
		if err != nil {
			return "", fmt.Errorf("persistentvolume %q: %w", pv.Name, err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("persistentvolume %q: local path %q is not a directory", pv.Name, pv.Spec.Local.Path)
		}
		path = pv.Spec.Local.Path
	default:
		return "", fmt.Errorf("persistentvolume %q: its volume type is not supported by this node (hostPath and local are)", pv.Name)
	}
	klog.FromContext(ctx).V(2).Info("Claim's volume ready", "pod", klog.KObj(pod), "claim", claimName, "volume", pv.Name, "path", path)
	vs.ready, vs.path = true, path
	return path, nil
}
