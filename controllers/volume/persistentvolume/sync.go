package persistentvolume

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/volume/storageutil"
)

// Event reasons, as upstream's.
const (
	reasonFailedBinding        = "FailedBinding"
	reasonVolumeMismatch       = "VolumeMismatch"
	reasonVolumeFailedRecycle  = "VolumeFailedRecycle"
	reasonVolumeFailedDelete   = "VolumeFailedDelete"
	reasonExternalProvisioning = "ExternalProvisioning"
	reasonProvisioningFailed   = "ProvisioningFailed"
	reasonWaitForFirstConsumer = "WaitForFirstConsumer"
	reasonWaitForPodScheduled  = "WaitForPodScheduled"
	reasonClaimLost            = "ClaimLost"
	reasonClaimMisbound        = "ClaimMisbound"
	reasonUnknownReclaim       = "VolumeUnknownReclaimPolicy"
)

var everything = labels.Everything()

// syncClaim brings one claim closer to being bound.
func (c *Controller) syncClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if !metav1.HasAnnotation(claim.ObjectMeta, volume.AnnBindCompleted) {
		return c.syncUnboundClaim(ctx, claim)
	}
	return c.syncBoundClaim(ctx, claim)
}

// delayBinding reports whether the claim's class binds on first consumer.
// A class that does not exist (yet) binds immediately, as upstream.
func (c *Controller) delayBinding(claim *corev1.PersistentVolumeClaim) (bool, error) {
	return volume.IsDelayBindingMode(claim, c.classLister)
}

func (c *Controller) syncUnboundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	logger := klog.FromContext(ctx)
	if claim.Spec.VolumeName == "" {
		delay, err := c.delayBinding(claim)
		if err != nil {
			return err
		}
		pv, err := c.findBestMatch(claim, delay)
		if err != nil {
			return fmt.Errorf("find a volume for claim %s: %w", claimKey(claim), err)
		}
		if pv != nil {
			return c.bind(ctx, pv, claim)
		}
		// No volume: take the default class if the claim has none, then
		// wait for a consumer, ask for a volume, or wait for one.
		if updated, err := c.assignDefaultClass(ctx, claim); err != nil || updated {
			return err
		}
		switch {
		case delay && !volume.IsDelayBindingProvisioning(claim):
			c.eventForWaitingClaim(claim)
		case volume.GetPersistentVolumeClaimClass(claim) != "":
			return c.provision(ctx, claim)
		default:
			c.recorder.Event(claim, corev1.EventTypeNormal, reasonFailedBinding, "no persistent volumes available for this claim and no storage class is set")
		}
		_, err = c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err
	}
	// The user asked for one volume.
	pv, ok := c.volumes.get(claim.Spec.VolumeName)
	switch {
	case !ok:
		logger.V(4).Info("Claim asks for a volume that does not exist yet", "pvc", klog.KObj(claim), "volume", claim.Spec.VolumeName)
		_, err := c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err
	case pv.Spec.ClaimRef == nil:
		if err := checkVolumeSatisfiesClaim(pv, claim); err != nil {
			c.recorder.Event(claim, corev1.EventTypeWarning, reasonVolumeMismatch, fmt.Sprintf("Cannot bind to requested volume %q: %s", pv.Name, err))
			_, err := c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
			return err
		}
		return c.bind(ctx, pv, claim)
	case volume.IsVolumeBoundToClaim(pv, claim):
		return c.bind(ctx, pv, claim)
	default:
		c.recorder.Event(claim, corev1.EventTypeWarning, reasonFailedBinding, fmt.Sprintf("volume %q already bound to a different claim.", pv.Name))
		if metav1.HasAnnotation(claim.ObjectMeta, volume.AnnBoundByController) {
			return fmt.Errorf("claim %s: volume %q is already claimed by %s", claimKey(claim), pv.Name, claimRefKey(pv.Spec.ClaimRef))
		}
		_, err := c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err
	}
}

func (c *Controller) syncBoundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Spec.VolumeName == "" {
		_, err := c.updateClaimStatusWithEvent(ctx, claim, corev1.ClaimLost, nil, corev1.EventTypeWarning, reasonClaimLost, "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
		return err
	}
	pv, ok := c.volumes.get(claim.Spec.VolumeName)
	switch {
	case !ok:
		_, err := c.updateClaimStatusWithEvent(ctx, claim, corev1.ClaimLost, nil, corev1.EventTypeWarning, reasonClaimLost, "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
		return err
	case pv.Spec.ClaimRef == nil, pv.Spec.ClaimRef.UID == claim.UID:
		// Finish or repair the binding (and keep the claim's status).
		return c.bind(ctx, pv, claim)
	default:
		_, err := c.updateClaimStatusWithEvent(ctx, claim, corev1.ClaimLost, nil, corev1.EventTypeWarning, reasonClaimMisbound, "Two claims are bound to the same volume, this one is bound incorrectly")
		return err
	}
}

// eventForWaitingClaim tells why a WaitForFirstConsumer claim waits.
func (c *Controller) eventForWaitingClaim(claim *corev1.PersistentVolumeClaim) {
	var names []string
	if pods, err := c.podLister.Pods(claim.Namespace).List(everything); err == nil {
		for _, p := range pods {
			if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
				continue
			}
			for _, pc := range storageutil.PodClaims(p) {
				if pc.Name == claim.Name {
					names = append(names, p.Name)
					break
				}
			}
		}
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		c.recorder.Event(claim, corev1.EventTypeNormal, reasonWaitForFirstConsumer, "waiting for first consumer to be created before binding")
	case 1:
		c.recorder.Event(claim, corev1.EventTypeNormal, reasonWaitForPodScheduled, fmt.Sprintf("waiting for pod %s to be scheduled", names[0]))
	default:
		c.recorder.Event(claim, corev1.EventTypeNormal, reasonWaitForPodScheduled, fmt.Sprintf("waiting for pods %s to be scheduled", strings.Join(names, ",")))
	}
}

// assignDefaultClass gives a claim without a class the default one
// (upstream's retroactive default StorageClass assignment).
func (c *Controller) assignDefaultClass(ctx context.Context, claim *corev1.PersistentVolumeClaim) (bool, error) {
	if storageutil.ClaimHasClass(claim) {
		return false, nil
	}
	sc, err := storageutil.DefaultClass(c.classLister)
	if err != nil || sc == nil {
		return false, err
	}
	clone := claim.DeepCopy()
	clone.Spec.StorageClassName = &sc.Name
	updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return false, ignoreConflict(fmt.Errorf("assign default class %q to claim %s: %w", sc.Name, claimKey(claim), err))
	}
	c.claims.update(updated)
	klog.FromContext(ctx).V(2).Info("Assigned the default StorageClass to a claim", "pvc", klog.KObj(claim), "storageClass", sc.Name)
	return true, nil
}

// provision asks the class's provisioner for a volume: every provisioner
// is external to k1s, so this annotates the claim and waits, as upstream
// does for provisioners it has no plugin for.
func (c *Controller) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	className := volume.GetPersistentVolumeClaimClass(claim)
	sc, err := c.classLister.Get(className)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		c.recorder.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed, fmt.Sprintf("storageclass.storage.k8s.io %q not found", className))
		_, err := c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err
	}
	if sc.Provisioner == volume.NotSupportedProvisioner || strings.HasPrefix(sc.Provisioner, "kubernetes.io/") {
		// Upstream's in-tree plugins; k1s has none.
		c.recorder.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed, fmt.Sprintf("no volume plugin matched name: %s", sc.Provisioner))
		_, err := c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err
	}
	if claim.Annotations[volume.AnnStorageProvisioner] != sc.Provisioner || claim.Annotations[volume.AnnBetaStorageProvisioner] != sc.Provisioner {
		clone := claim.DeepCopy()
		metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volume.AnnStorageProvisioner, sc.Provisioner)
		metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volume.AnnBetaStorageProvisioner, sc.Provisioner)
		updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
		if err != nil {
			if !apierrors.IsConflict(err) {
				c.recorder.Event(claim, corev1.EventTypeWarning, reasonProvisioningFailed, fmt.Sprintf("Error saving claim: %v", err))
			}
			return ignoreConflict(fmt.Errorf("annotate claim %s for provisioning: %w", claimKey(claim), err))
		}
		c.claims.update(updated)
		claim = updated
		c.recorder.Event(claim, corev1.EventTypeNormal, reasonExternalProvisioning, fmt.Sprintf(
			"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. "+
				"If volume creation is delayed, please verify that the provisioner is running and correctly registered.", sc.Provisioner))
	}
	_, err = c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
	return err
}

// syncVolume keeps a volume's phase true to its claim and reclaims it
// once its claim is gone.
func (c *Controller) syncVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	logger := klog.FromContext(ctx)
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" {
		// Unbound, or pre-bound to a claim that has not bound it yet.
		_, err := c.updateVolumePhase(ctx, pv, corev1.VolumeAvailable, "")
		return err
	}
	claim, err := c.claimOf(ctx, pv)
	if err != nil {
		return err
	}
	switch {
	case claim == nil:
		// The claim is gone: the volume is released.
		if pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed {
			if pv, err = c.updateVolumePhase(ctx, pv, corev1.VolumeReleased, ""); err != nil {
				return err
			}
		}
		return c.reclaim(ctx, pv)
	case claim.Spec.VolumeName == "":
		if volume.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec) {
			c.recorder.Event(pv, corev1.EventTypeWarning, reasonVolumeMismatch, fmt.Sprintf("Cannot bind PersistentVolume to requested PersistentVolumeClaim %q due to incompatible volumeMode.", claim.Name))
			c.recorder.Event(claim, corev1.EventTypeWarning, reasonVolumeMismatch, fmt.Sprintf("Cannot bind PersistentVolume %q to requested PersistentVolumeClaim due to incompatible volumeMode.", pv.Name))
			return nil
		}
		// The binding is half done; the claim's sync finishes it.
		c.claimQueue.Add(claimKey(claim))
		return nil
	case claim.Spec.VolumeName == pv.Name:
		_, err := c.updateVolumePhase(ctx, pv, corev1.VolumeBound, "")
		return err
	default:
		// The claim is bound to another volume.
		if metav1.HasAnnotation(pv.ObjectMeta, volume.AnnDynamicallyProvisioned) && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
			// Provisioned for this claim, which bound elsewhere: not needed.
			if pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed {
				if pv, err = c.updateVolumePhase(ctx, pv, corev1.VolumeReleased, ""); err != nil {
					return err
				}
			}
			return c.reclaim(ctx, pv)
		}
		logger.V(4).Info("Volume's claim is bound to another volume, unbinding", "volume", pv.Name, "pvc", klog.KObj(claim))
		return c.unbindVolume(ctx, pv)
	}
}

// claimOf returns the claim the volume is bound to, nil when it no longer
// exists (or was replaced by one with another UID). A claim missing from
// the cache is looked up in the apiserver before the volume is released.
func (c *Controller) claimOf(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	ref := pv.Spec.ClaimRef
	claim, ok := c.claims.get(claimRefKey(ref))
	if ok && claim.UID == ref.UID {
		return claim, nil
	}
	if !ok && (pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed) {
		return nil, nil
	}
	live, err := c.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get claim %s of volume %s: %w", claimRefKey(ref), pv.Name, err)
	}
	if live.UID != ref.UID {
		return nil, nil
	}
	c.claims.update(live)
	return live, nil
}

// reclaim applies the volume's reclaim policy once it is released.
func (c *Controller) reclaim(ctx context.Context, pv *corev1.PersistentVolume) error {
	logger := klog.FromContext(ctx)
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimRetain:
		logger.V(4).Info("Released volume is retained", "volume", pv.Name)
		return nil
	case corev1.PersistentVolumeReclaimRecycle:
		// Recycling is deprecated upstream; k1s has no recycler.
		_, err := c.updateVolumePhaseWithEvent(ctx, pv, corev1.VolumeFailed, corev1.EventTypeNormal, reasonVolumeFailedRecycle, "No recycler plugin found for the volume!")
		return err
	case corev1.PersistentVolumeReclaimDelete:
		if p := pv.Annotations[volume.AnnDynamicallyProvisioned]; p != "" && !strings.HasPrefix(p, "kubernetes.io/") {
			// Its external provisioner deletes it.
			logger.V(3).Info("External deleter for volume requested, leaving it to the provisioner", "volume", pv.Name, "provisioner", p)
			return nil
		}
		if pv.Status.Phase == corev1.VolumeFailed {
			return nil
		}
		_, err := c.updateVolumePhaseWithEvent(ctx, pv, corev1.VolumeFailed, corev1.EventTypeWarning, reasonVolumeFailedDelete,
			fmt.Sprintf("error getting deleter volume plugin for volume %q: no deletable volume plugin matched", pv.Name))
		return err
	default:
		_, err := c.updateVolumePhaseWithEvent(ctx, pv, corev1.VolumeFailed, corev1.EventTypeWarning, reasonUnknownReclaim, "Volume has unrecognized PersistentVolumeReclaimPolicy")
		return err
	}
}

// findBestMatch returns the volume for the claim: one pre-bound to it,
// else the smallest available one that fits (by class, size, access and
// volume modes, selector), preferring volumes with the fewest access
// modes as upstream's index does. With delay set, only pre-bound volumes.
func (c *Controller) findBestMatch(claim *corev1.PersistentVolumeClaim, delay bool) (*corev1.PersistentVolume, error) {
	byModes := map[int][]*corev1.PersistentVolume{}
	for _, pv := range c.volumes.list() {
		if volume.CheckAccessModes(claim, pv) {
			byModes[len(pv.Spec.AccessModes)] = append(byModes[len(pv.Spec.AccessModes)], pv)
		}
	}
	counts := make([]int, 0, len(byModes))
	for n := range byModes {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	for _, n := range counts {
		vols := byModes[n]
		sort.Slice(vols, func(i, j int) bool { return vols[i].Name < vols[j].Name })
		pv, err := volume.FindMatchingVolume(claim, vols, nil, nil, delay, true)
		if err != nil || pv != nil {
			return pv, err
		}
	}
	return nil, nil
}

// checkVolumeSatisfiesClaim checks a volume a claim asked for by name.
func checkVolumeSatisfiesClaim(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	want := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	have := pv.Spec.Capacity[corev1.ResourceStorage]
	if have.Cmp(want) < 0 {
		return fmt.Errorf("requested PV is too small")
	}
	if volume.GetPersistentVolumeClass(pv) != volume.GetPersistentVolumeClaimClass(claim) {
		return fmt.Errorf("storageClassName does not match")
	}
	if volume.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec) {
		return fmt.Errorf("incompatible volumeMode")
	}
	if !volume.CheckAccessModes(claim, pv) {
		return fmt.Errorf("incompatible accessMode")
	}
	return nil
}

// bind binds volume and claim to each other in upstream's order: the
// volume's claimRef, its phase, the claim's volumeName and annotations,
// the claim's status. A failure part-way is finished by the next sync.
func (c *Controller) bind(ctx context.Context, pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	logger := klog.FromContext(ctx)
	pv, err := c.bindVolumeToClaim(ctx, pv, claim)
	if err != nil {
		return err
	}
	if pv, err = c.updateVolumePhase(ctx, pv, corev1.VolumeBound, ""); err != nil {
		return err
	}
	if claim, err = c.bindClaimToVolume(ctx, claim, pv); err != nil {
		return err
	}
	if _, err = c.updateClaimStatus(ctx, claim, corev1.ClaimBound, pv); err != nil {
		return err
	}
	logger.V(2).Info("Bound claim to volume", "pvc", klog.KObj(claim), "volume", pv.Name)
	return nil
}

func (c *Controller) bindVolumeToClaim(ctx context.Context, pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	clone, dirty, err := volume.GetBindVolumeToClaim(pv, claim)
	if err != nil || !dirty {
		return pv, err
	}
	updated, err := c.client.CoreV1().PersistentVolumes().Update(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, ignoreConflictErr(fmt.Errorf("bind volume %s to claim %s: %w", pv.Name, claimKey(claim), err))
	}
	c.volumes.update(updated)
	return updated, nil
}

func (c *Controller) bindClaimToVolume(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	clone := claim.DeepCopy()
	dirty := false
	if clone.Spec.VolumeName != pv.Name {
		clone.Spec.VolumeName = pv.Name
		metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volume.AnnBoundByController, "yes")
		dirty = true
	}
	if !metav1.HasAnnotation(clone.ObjectMeta, volume.AnnBindCompleted) {
		metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volume.AnnBindCompleted, "yes")
		dirty = true
	}
	if !dirty {
		return claim, nil
	}
	updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, ignoreConflictErr(fmt.Errorf("bind claim %s to volume %s: %w", claimKey(claim), pv.Name, err))
	}
	c.claims.update(updated)
	return updated, nil
}

// unbindVolume undoes a binding the controller made (or only its UID
// when the user pre-bound the volume) and makes the volume Available.
func (c *Controller) unbindVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	clone := pv.DeepCopy()
	if metav1.HasAnnotation(pv.ObjectMeta, volume.AnnBoundByController) {
		clone.Spec.ClaimRef = nil
		delete(clone.Annotations, volume.AnnBoundByController)
		if len(clone.Annotations) == 0 {
			clone.Annotations = nil
		}
	} else {
		clone.Spec.ClaimRef.UID = ""
	}
	updated, err := c.client.CoreV1().PersistentVolumes().Update(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return ignoreConflict(fmt.Errorf("unbind volume %s: %w", pv.Name, err))
	}
	c.volumes.update(updated)
	_, err = c.updateVolumePhase(ctx, updated, corev1.VolumeAvailable, "")
	return err
}

// updateClaimStatus sets the claim's phase and, from the volume, its
// access modes and (when it becomes bound) capacity; nil resets them.
func (c *Controller) updateClaimStatus(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	clone := claim.DeepCopy()
	clone.Status.Phase = phase
	if pv == nil {
		clone.Status.AccessModes = nil
		clone.Status.Capacity = nil
	} else {
		clone.Status.AccessModes = pv.Spec.AccessModes
		// Capacity is set when the claim becomes bound, never after: a
		// resize reports the claim's own size there.
		if claim.Status.Phase != phase {
			want := pv.Spec.Capacity[corev1.ResourceStorage]
			if got, ok := claim.Status.Capacity[corev1.ResourceStorage]; !ok || got.Cmp(want) != 0 {
				clone.Status.Capacity = pv.Spec.Capacity.DeepCopy()
			}
		}
	}
	if equality.Semantic.DeepEqual(claim.Status, clone.Status) {
		return claim, nil
	}
	updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, ignoreConflictErr(fmt.Errorf("update status of claim %s: %w", claimKey(claim), err))
	}
	c.claims.update(updated)
	return updated, nil
}

func (c *Controller) updateClaimStatusWithEvent(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume, eventType, reason, msg string) (*corev1.PersistentVolumeClaim, error) {
	if claim.Status.Phase == phase {
		return claim, nil
	}
	updated, err := c.updateClaimStatus(ctx, claim, phase, pv)
	if err != nil {
		return nil, err
	}
	c.recorder.Event(updated, eventType, reason, msg)
	return updated, nil
}

// updateVolumePhase sets the volume's phase and message, and
// lastPhaseTransitionTime when the phase changes.
func (c *Controller) updateVolumePhase(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, msg string) (*corev1.PersistentVolume, error) {
	if pv.Status.Phase == phase && pv.Status.Message == msg {
		return pv, nil
	}
	clone := pv.DeepCopy()
	if clone.Status.Phase != phase {
		now := metav1.NewTime(c.clock.Now())
		clone.Status.LastPhaseTransitionTime = &now
	}
	clone.Status.Phase = phase
	clone.Status.Message = msg
	updated, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, ignoreConflictErr(fmt.Errorf("set phase %s of volume %s: %w", phase, pv.Name, err))
	}
	c.volumes.update(updated)
	return updated, nil
}

func (c *Controller) updateVolumePhaseWithEvent(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, eventType, reason, msg string) (*corev1.PersistentVolume, error) {
	if pv.Status.Phase == phase {
		return pv, nil
	}
	updated, err := c.updateVolumePhase(ctx, pv, phase, msg)
	if err != nil {
		return nil, err
	}
	c.recorder.Event(updated, eventType, reason, msg)
	return updated, nil
}

// errStale is returned (and retried quietly) when a write lost a race.
type errStale struct{ error }

// ignoreConflictErr marks a conflict as stale: the caller must stop, and
// the sync is retried with the newer object.
func ignoreConflictErr(err error) error {
	if apierrors.IsConflict(err) {
		return errStale{err}
	}
	return err
}
