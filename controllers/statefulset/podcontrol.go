package statefulset

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// podControl creates, updates and deletes the pods of StatefulSets and
// their claims, recording an event on the set for each. Reads go to the
// listers, writes to the client. Safe for concurrent use.
type podControl struct {
	client      kubernetes.Interface
	podLister   corelisters.PodLister
	claimLister corelisters.PersistentVolumeClaimLister
	recorder    record.EventRecorder
}

func title(verb string) string {
	if verb == "" {
		return verb
	}
	return strings.ToUpper(verb[:1]) + verb[1:]
}

// podEvent records verb on pod: SuccessfulCreate "Create Pod web-0 in
// StatefulSet web successful", or FailedCreate with the error.
func (pc *podControl) podEvent(verb string, set *appsv1.StatefulSet, pod *corev1.Pod, err error) {
	if err == nil {
		pc.recorder.Eventf(set, corev1.EventTypeNormal, "Successful"+title(verb),
			"%s Pod %s in StatefulSet %s successful", title(verb), pod.Name, set.Name)
		return
	}
	pc.recorder.Eventf(set, corev1.EventTypeWarning, "Failed"+title(verb),
		"%s Pod %s in StatefulSet %s failed error: %s", title(verb), pod.Name, set.Name, err)
}

func (pc *podControl) claimEvent(verb string, set *appsv1.StatefulSet, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, err error) {
	if err == nil {
		pc.recorder.Eventf(set, corev1.EventTypeNormal, "Successful"+title(verb),
			"%s Claim %s Pod %s in StatefulSet %s success", title(verb), claim.Name, pod.Name, set.Name)
		return
	}
	pc.recorder.Eventf(set, corev1.EventTypeWarning, "Failed"+title(verb),
		"%s Claim %s for Pod %s in StatefulSet %s failed error: %s", title(verb), claim.Name, pod.Name, set.Name, err)
}

// createClaims creates the claims pod needs that do not exist yet. A claim
// being deleted is an error: the pod must wait for a fresh one.
func (pc *podControl) createClaims(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	var errs []error
	claims := claimsFor(set, pod)
	for _, tmpl := range set.Spec.VolumeClaimTemplates {
		claim := claims[tmpl.Name]
		existing, err := pc.claimLister.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
		switch {
		case apierrors.IsNotFound(err):
			_, err := pc.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, &claim, metav1.CreateOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("failed to create PVC %s: %w", claim.Name, err))
			}
			if err == nil || !apierrors.IsAlreadyExists(err) {
				pc.claimEvent("create", set, pod, &claim, err)
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("failed to retrieve PVC %s: %w", claim.Name, err))
			pc.claimEvent("create", set, pod, &claim, err)
		case existing.DeletionTimestamp != nil:
			errs = append(errs, fmt.Errorf("pvc %s is being deleted", claim.Name))
		}
	}
	return errors.Join(errs...)
}

// createPod creates pod's claims, then pod, then aligns the claims' owner
// references with the retention policy.
func (pc *podControl) createPod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	if err := pc.createClaims(ctx, set, pod); err != nil {
		pc.podEvent("create", set, pod, err)
		return err
	}
	_, err := pc.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := pc.updateClaimsForRetention(ctx, set, pod); err != nil {
		pc.podEvent("update", set, pod, err)
		return err
	}
	pc.podEvent("create", set, pod, err)
	return err
}

// createMissingClaims creates the claims of an existing (pending) pod,
// e.g. after one was deleted, and aligns their owner references.
func (pc *podControl) createMissingClaims(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	if err := pc.createClaims(ctx, set, pod); err != nil {
		return err
	}
	if err := pc.updateClaimsForRetention(ctx, set, pod); err != nil {
		pc.podEvent("update", set, pod, err)
		return err
	}
	return nil
}

// updatePod restores pod's identity and storage and its claims' owner
// references, writing the pod only if it changed; conflicts are retried
// from the cache.
func (pc *podControl) updatePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	attempted := false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		dirty := false
		if !identityMatches(set, pod) {
			updateIdentity(set, pod)
			dirty = true
		}
		if !storageMatches(set, pod) {
			updateStorage(set, pod)
			dirty = true
			if err := pc.createClaims(ctx, set, pod); err != nil {
				pc.podEvent("update", set, pod, err)
				return err
			}
		}
		match, err := pc.claimsMatchRetention(ctx, set, pod)
		if err != nil {
			pc.podEvent("update", set, pod, err)
			return err
		}
		if !match {
			if err := pc.updateClaimsForRetention(ctx, set, pod); err != nil {
				pc.podEvent("update", set, pod, err)
				return err
			}
			dirty = true
		}
		if !dirty {
			return nil
		}
		attempted = true
		_, updateErr := pc.client.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
		if updateErr == nil {
			return nil
		}
		if fresh, err := pc.podLister.Pods(set.Namespace).Get(pod.Name); err == nil {
			pod = fresh.DeepCopy()
		} else {
			klog.FromContext(ctx).Error(err, "Failed to get the pod from the cache after a failed update", "pod", klog.KRef(set.Namespace, pod.Name))
		}
		return updateErr
	})
	if attempted {
		pc.podEvent("update", set, pod, err)
	}
	return err
}

// deletePod deletes pod; one already gone counts as deleted.
func (pc *podControl) deletePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	err := pc.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		pc.podEvent("delete", set, pod, err)
		return err
	}
	pc.podEvent("delete", set, pod, nil)
	return nil
}

// claimsMatchRetention reports whether the owner references of pod's
// existing claims follow set's retention policy.
func (pc *podControl) claimsMatchRetention(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) (bool, error) {
	logger := klog.FromContext(ctx)
	o := ordinalOf(pod)
	for i := range set.Spec.VolumeClaimTemplates {
		name := claimName(set, &set.Spec.VolumeClaimTemplates[i], o)
		claim, err := pc.claimLister.PersistentVolumeClaims(set.Namespace).Get(name)
		switch {
		case apierrors.IsNotFound(err):
			logger.V(4).Info("Expected claim missing, will pick it up later", "pvc", klog.KRef(set.Namespace, name))
		case err != nil:
			return false, fmt.Errorf("could not retrieve claim %s for %s when checking PVC deletion policy: %w", name, pod.Name, err)
		case !claimOwnerUpToDate(logger, claim, set, pod):
			return false, nil
		}
	}
	return true, nil
}

// updateClaimsForRetention rewrites the owner references of pod's claims
// to follow set's retention policy.
func (pc *podControl) updateClaimsForRetention(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	logger := klog.FromContext(ctx)
	o := ordinalOf(pod)
	for i := range set.Spec.VolumeClaimTemplates {
		name := claimName(set, &set.Spec.VolumeClaimTemplates[i], o)
		claim, err := pc.claimLister.PersistentVolumeClaims(set.Namespace).Get(name)
		switch {
		case apierrors.IsNotFound(err):
			logger.V(4).Info("Expected claim missing, will pick it up later", "pvc", klog.KRef(set.Namespace, name))
			continue
		case err != nil:
			return fmt.Errorf("could not retrieve claim %s for %s when checking PVC deletion policy: %w", name, pod.Name, err)
		}
		if hasUnexpectedController(claim, set, pod) {
			pc.recorder.Eventf(set, corev1.EventTypeWarning, "ConflictingController",
				"PersistentVolumeClaim %s has a conflicting OwnerReference that acts as a managing controller, the retention policy is ignored for this claim", name)
		}
		if claimOwnerUpToDate(logger, claim, set, pod) {
			continue
		}
		claim = claim.DeepCopy()
		setClaimOwnerRefs(logger, claim, set, pod)
		if _, err := pc.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("could not update claim %s for delete policy ownerRefs: %w", name, err)
		}
	}
	return nil
}

// claimIsStale reports whether, under a policy that deletes claims on
// scale-down, one of pod's claims still belongs to an earlier pod of the
// same name (its deletion is pending): the pod must not be created onto
// it.
func (pc *podControl) claimIsStale(set *appsv1.StatefulSet, pod *corev1.Pod) (bool, error) {
	if retentionPolicy(set).WhenScaled == retain {
		return false, nil
	}
	for _, claim := range claimsFor(set, pod) {
		existing, err := pc.claimLister.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, err
		case hasStaleOwnerRef(existing, pod, podKind):
			return true, nil
		}
	}
	return false, nil
}
