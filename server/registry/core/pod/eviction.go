package pod

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	policyclient "k8s.io/client-go/kubernetes/typed/policy/v1"
	"k8s.io/client-go/util/retry"

	"github.com/k1s/k1s/internal/apis/policy"
)

// EvictionREST serves pods/eviction: delete a pod unless that would break a
// PodDisruptionBudget.
type EvictionREST struct {
	store  *genericregistry.Store
	status *genericregistry.Store
	pdbs   policyclient.PodDisruptionBudgetsGetter
}

// NewEvictionREST evicts pods of store, marking them through status (the
// pods/status store) first, and reading budgets through pdbs.
func NewEvictionREST(store, status *genericregistry.Store, pdbs policyclient.PodDisruptionBudgetsGetter) *EvictionREST {
	return &EvictionREST{store: store, status: status, pdbs: pdbs}
}

var _ rest.NamedCreater = &EvictionREST{}

// NamespaceScoped is true.
func (r *EvictionREST) NamespaceScoped() bool { return true }

// New returns an empty Eviction.
func (r *EvictionREST) New() runtime.Object { return &policyv1.Eviction{} }

// Destroy does nothing.
func (r *EvictionREST) Destroy() {}

// GroupVersionKind is policy/v1 Eviction, served under the core group.
func (r *EvictionREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return policyv1.SchemeGroupVersion.WithKind("Eviction")
}

// maxDisruptedPodSize bounds the budget's record of pods being evicted.
const maxDisruptedPodSize = 2000

// Create evicts the named pod.
func (r *EvictionREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	ev, ok := obj.(*policyv1.Eviction)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an Eviction object: %T", obj))
	}
	if name != ev.Name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if errs := policy.ValidateEviction(ev); len(errs) > 0 {
		return nil, apierrors.NewInvalid(policyv1.SchemeGroupVersion.WithKind("Eviction").GroupKind(), ev.Name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, ev.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	deleteOptions := ev.DeleteOptions
	if deleteOptions == nil {
		deleteOptions = &metav1.DeleteOptions{}
	}
	if len(options.DryRun) > 0 {
		deleteOptions = deleteOptions.DeepCopy()
		deleteOptions.DryRun = options.DryRun
	}

	obj, err := r.store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	// Pods that are not running, or already going, do not count against a budget.
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
		pod.Status.Phase == corev1.PodPending || pod.DeletionTimestamp != nil {
		return r.delete(ctx, pod, deleteOptions)
	}

	list, err := r.pdbs.PodDisruptionBudgets(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var matching []policyv1.PodDisruptionBudget
	for _, pdb := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			matching = append(matching, pdb)
		}
	}
	switch len(matching) {
	case 0:
		return r.delete(ctx, pod, deleteOptions)
	case 1:
	default:
		return nil, apierrors.NewInternalError(fmt.Errorf("this pod has more than one PodDisruptionBudget, which the eviction subresource does not support"))
	}

	pdbName := matching[0].Name
	if isReady(pod) || matching[0].Spec.UnhealthyPodEvictionPolicy == nil || *matching[0].Spec.UnhealthyPodEvictionPolicy != policyv1.AlwaysAllow {
		err := retry.RetryOnConflict(wait.Backoff{Steps: 5, Duration: 20 * time.Millisecond, Factor: 2}, func() error {
			pdb, err := r.pdbs.PodDisruptionBudgets(pod.Namespace).Get(ctx, pdbName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			return r.takeDisruption(ctx, pdb, pod.Name, len(deleteOptions.DryRun) > 0)
		})
		if err != nil {
			return nil, err
		}
	}
	return r.delete(ctx, pod, deleteOptions)
}

func (r *EvictionREST) takeDisruption(ctx context.Context, pdb *policyv1.PodDisruptionBudget, podName string, dryRun bool) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return tooManyRequests(fmt.Sprintf("Cannot evict pod as it would violate the pod's disruption budget. The disruption budget %s is still being processed by the server.", pdb.Name))
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, fmt.Errorf("pdb disruptions allowed is negative"))
	}
	if len(pdb.Status.DisruptedPods) > maxDisruptedPodSize {
		return apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, fmt.Errorf("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		return tooManyRequests(fmt.Sprintf("Cannot evict pod as it would violate the pod's disruption budget. The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy))
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[podName] = metav1.Now()
	if dryRun {
		return nil
	}
	_, err := r.pdbs.PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	return err
}

func tooManyRequests(msg string) error {
	err := apierrors.NewTooManyRequests(msg, 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: msg})
	return err
}

// delete gives the pod the DisruptionTarget condition, as kube-apiserver's
// eviction does (a Job's pod failure policy and the disruption controller
// read it), then deletes it. A dry run changes nothing.
func (r *EvictionREST) delete(ctx context.Context, pod *corev1.Pod, options *metav1.DeleteOptions) (runtime.Object, error) {
	if len(options.DryRun) == 0 {
		updated, err := r.markDisrupted(ctx, pod.Name, options.Preconditions)
		switch {
		case apierrors.IsNotFound(err):
			return &metav1.Status{Status: metav1.StatusSuccess}, nil
		case err != nil:
			return nil, err
		}
		if p := options.Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != "" {
			// The condition moved the version on: the delete checks ours.
			options = options.DeepCopy()
			rv := updated.ResourceVersion
			options.Preconditions.ResourceVersion = &rv
		}
	}
	if _, _, err := r.store.Delete(ctx, pod.Name, rest.ValidateAllObjectFunc, options); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess}, nil
}

// Reason and message of the condition an eviction sets, as upstream's.
const (
	evictionReason  = "EvictionByEvictionAPI"
	evictionMessage = "Eviction API: evicting"
)

// markDisrupted sets DisruptionTarget=True on the stored pod's status,
// honouring the delete's UID and resourceVersion preconditions.
func (r *EvictionREST) markDisrupted(ctx context.Context, name string, pre *metav1.Preconditions) (*corev1.Pod, error) {
	latest := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		p := old.(*corev1.Pod).DeepCopy()
		if pre != nil {
			if pre.UID != nil && *pre.UID != "" && *pre.UID != p.UID {
				return nil, apierrors.NewConflict(corev1.Resource("pods"), p.Name,
					fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *pre.UID, p.UID))
			}
			if pre.ResourceVersion != nil && *pre.ResourceVersion != "" && *pre.ResourceVersion != p.ResourceVersion {
				return nil, apierrors.NewConflict(corev1.Resource("pods"), p.Name,
					fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *pre.ResourceVersion, p.ResourceVersion))
			}
		}
		return p, nil
	}
	mark := func(_ context.Context, obj, _ runtime.Object) (runtime.Object, error) {
		p := obj.(*corev1.Pod)
		setCondition(&p.Status, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: evictionReason, Message: evictionMessage})
		return p, nil
	}
	obj, _, err := r.status.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, latest, mark),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// setCondition replaces or adds c, moving its transition time only when
// its status changes.
func setCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	now := metav1.Now()
	c.LastTransitionTime = now
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return
	}
	st.Conditions = append(st.Conditions, c)
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
