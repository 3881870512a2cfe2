// Package pod serves what pods have beyond a stored object: their status on
// create, graceful deletion, pods/binding (the scheduler's write),
// pods/eviction (a delete that honours PodDisruptionBudgets),
// pods/ephemeralcontainers (an update of only the ephemeral containers),
// and the streaming subresources proxied to the node agent.
package pod

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/kubectl/pkg/util/qos"

	"github.com/k1s/k1s/internal/apis/core"
)

// PrepareForCreate gives a new pod its initial status: Pending, its QoS
// class, and PodScheduled=False/SchedulingGated when it has gates.
func PrepareForCreate(_ context.Context, obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = []corev1.PodCondition{{
			Type:    corev1.PodScheduled,
			Status:  corev1.ConditionFalse,
			Reason:  corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}
	}
	pod.Status.QOSClass = qos.GetPodQOS(pod)
}

// GracefulDelete decides the grace period of a delete as upstream does: the
// request's, else the pod's terminationGracePeriodSeconds; zero for pods
// never scheduled or already finished. It always answers true, so deletes
// go through the graceful path and the agent sees deletionTimestamp.
func GracefulDelete(_ context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool {
	if options == nil {
		return false
	}
	pod := obj.(*corev1.Pod)
	var period int64
	switch {
	case options.GracePeriodSeconds != nil:
		period = *options.GracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		period = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	options.GracePeriodSeconds = &period
	return true
}

// BindingREST serves pods/binding.
type BindingREST struct {
	store *genericregistry.Store
}

// NewBindingREST binds pods stored in store.
func NewBindingREST(store *genericregistry.Store) *BindingREST { return &BindingREST{store: store} }

var (
	_ rest.NamedCreater = &BindingREST{}
	_ rest.Scoper       = &BindingREST{}
)

// NamespaceScoped is true: bindings live in the pod's namespace.
func (r *BindingREST) NamespaceScoped() bool { return true }

// New returns an empty Binding.
func (r *BindingREST) New() runtime.Object { return &corev1.Binding{} }

// Destroy does nothing.
func (r *BindingREST) Destroy() {}

// Create binds the pod to the node named by the Binding's target.
func (r *BindingREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	binding, ok := obj.(*corev1.Binding)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Binding object: %T", obj))
	}
	if name != binding.Name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	if errs := core.ValidatePodBinding(binding); len(errs) != 0 {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), binding.Name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, binding.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	if err := r.assign(ctx, binding, len(options.DryRun) > 0); err != nil {
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess}, nil
}

func (r *BindingREST) assign(ctx context.Context, b *corev1.Binding, dryRun bool) error {
	key, err := r.store.KeyFunc(ctx, b.Name)
	if err != nil {
		return err
	}
	var pre *storage.Preconditions
	if b.UID != "" || b.ResourceVersion != "" {
		pre = &storage.Preconditions{}
		if b.UID != "" {
			uid := types.UID(b.UID)
			pre.UID = &uid
		}
		if b.ResourceVersion != "" {
			rv := b.ResourceVersion
			pre.ResourceVersion = &rv
		}
	}
	err = r.store.Storage.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false, pre, storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
		pod := obj.(*corev1.Pod)
		switch {
		case pod.DeletionTimestamp != nil:
			return nil, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name)
		case pod.Spec.NodeName != "":
			return nil, fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName)
		case len(pod.Spec.SchedulingGates) != 0:
			return nil, fmt.Errorf("pod %v has non-empty .spec.schedulingGates", pod.Name)
		}
		pod.Spec.NodeName = b.Target.Name
		pod.Status.NominatedNodeName = ""
		if len(b.Annotations) > 0 && pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		for k, v := range b.Annotations {
			pod.Annotations[k] = v
		}
		SetCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		return pod, nil
	}), dryRun, nil)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return err
		}
		if storage.IsNotFound(err) {
			return apierrors.NewNotFound(corev1.Resource("pods"), b.Name)
		}
		if storage.IsConflict(err) {
			return apierrors.NewConflict(corev1.Resource("pods/binding"), b.Name, err)
		}
		return apierrors.NewConflict(corev1.Resource("pods/binding"), b.Name, err)
	}
	return nil
}

// SetCondition adds or replaces a pod condition, moving the transition
// time only when the status changes.
func SetCondition(status *corev1.PodStatus, c corev1.PodCondition) {
	now := metav1.Now()
	for i := range status.Conditions {
		cur := &status.Conditions[i]
		if cur.Type != c.Type {
			continue
		}
		if cur.Status != c.Status {
			cur.LastTransitionTime = now
		}
		cur.Status, cur.Reason, cur.Message = c.Status, c.Reason, c.Message
		cur.LastProbeTime = c.LastProbeTime
		return
	}
	c.LastTransitionTime = now
	status.Conditions = append(status.Conditions, c)
}
