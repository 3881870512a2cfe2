package controllerutil

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Event reasons of PodControl, as upstream's controllers use them (also as
// ReplicaFailure condition reasons).
const (
	// FailedCreatePodReason: a pod could not be created.
	FailedCreatePodReason = "FailedCreate"
	// SuccessfulCreatePodReason: a pod was created.
	SuccessfulCreatePodReason = "SuccessfulCreate"
	// FailedDeletePodReason: a pod could not be deleted.
	FailedDeletePodReason = "FailedDelete"
	// SuccessfulDeletePodReason: a pod was deleted.
	SuccessfulDeletePodReason = "SuccessfulDelete"
)

// PodControl creates, deletes and patches the pods of an owner, recording
// events on the owner. Implementations are safe for concurrent use.
type PodControl interface {
	// CreatePods creates one pod from template in namespace, controlled
	// by ref, named "<owner name>-<random>".
	CreatePods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, ref *metav1.OwnerReference) error
	// CreatePodsWithGenerateName is CreatePods with another generateName
	// (none given: as CreatePods).
	CreatePodsWithGenerateName(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, ref *metav1.OwnerReference, generateName string) error
	// DeletePod deletes the pod name in namespace. A pod that is already
	// gone gives a NotFound error and no event.
	DeletePod(ctx context.Context, namespace, name string, owner runtime.Object) error
	// PatchPod applies a strategic merge patch to the pod.
	PatchPod(ctx context.Context, namespace, name string, data []byte) error
}

// NewPodControl returns the PodControl that acts through client and
// records events with recorder.
func NewPodControl(client kubernetes.Interface, recorder record.EventRecorder) PodControl {
	return &podControl{client: client, recorder: recorder}
}

type podControl struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
}

// ValidateControllerRef checks that ref is a complete controller
// reference: apiVersion, kind, controller and blockOwnerDeletion set.
func ValidateControllerRef(ref *metav1.OwnerReference) error {
	switch {
	case ref == nil:
		return errors.New("controllerRef is nil")
	case ref.APIVersion == "":
		return errors.New("controllerRef has empty APIVersion")
	case ref.Kind == "":
		return errors.New("controllerRef has empty Kind")
	case ref.Controller == nil || !*ref.Controller:
		return errors.New("controllerRef.Controller is not set to true")
	case ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion:
		return errors.New("controllerRef.BlockOwnerDeletion is not set")
	}
	return nil
}

// PodNamePrefix is the generateName of an owner's pods: "<name>-", or the
// bare name when the dash would make it an invalid prefix.
func PodNamePrefix(ownerName string) string {
	prefix := ownerName + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		return ownerName
	}
	return prefix
}

// GetPodFromTemplate builds the pod an owner creates from template: the
// template's labels, annotations, finalizers and spec (copied), the
// owner's name prefix as generateName, and ref (if any) as owner reference.
func GetPodFromTemplate(template *corev1.PodTemplateSpec, owner runtime.Object, ref *metav1.OwnerReference) (*corev1.Pod, error) {
	acc, err := meta.Accessor(owner)
	if err != nil {
		return nil, fmt.Errorf("owner has no object metadata: %w", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Labels:       maps.Clone(template.Labels),
			Annotations:  maps.Clone(template.Annotations),
			GenerateName: PodNamePrefix(acc.GetName()),
			Finalizers:   append([]string(nil), template.Finalizers...),
		},
		Spec: *template.Spec.DeepCopy(),
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if ref != nil {
		pod.OwnerReferences = append(pod.OwnerReferences, *ref)
	}
	return pod, nil
}

func (c *podControl) CreatePods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, ref *metav1.OwnerReference) error {
	return c.CreatePodsWithGenerateName(ctx, namespace, template, owner, ref, "")
}

func (c *podControl) CreatePodsWithGenerateName(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, ref *metav1.OwnerReference, generateName string) error {
	if err := ValidateControllerRef(ref); err != nil {
		return err
	}
	pod, err := GetPodFromTemplate(template, owner, ref)
	if err != nil {
		return err
	}
	if generateName != "" {
		pod.GenerateName = generateName
	}
	if len(pod.Labels) == 0 {
		return errors.New("unable to create pods, no labels")
	}
	created, err := c.client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// A terminating namespace refuses every create; no event then.
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.recorder.Eventf(owner, corev1.EventTypeWarning, FailedCreatePodReason, "Error creating: %v", err)
		}
		return err
	}
	klog.FromContext(ctx).V(4).Info("Controller created pod", "pod", klog.KObj(created))
	c.recorder.Eventf(owner, corev1.EventTypeNormal, SuccessfulCreatePodReason, "Created pod: %v", created.Name)
	return nil
}

func (c *podControl) DeletePod(ctx context.Context, namespace, name string, owner runtime.Object) error {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Deleting pod", "pod", klog.KRef(namespace, name))
	if err := c.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			logger.V(4).Info("Pod already deleted", "pod", klog.KRef(namespace, name))
			return err
		}
		c.recorder.Eventf(owner, corev1.EventTypeWarning, FailedDeletePodReason, "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %w", err)
	}
	c.recorder.Eventf(owner, corev1.EventTypeNormal, SuccessfulDeletePodReason, "Deleted pod: %v", name)
	return nil
}

func (c *podControl) PatchPod(ctx context.Context, namespace, name string, data []byte) error {
	_, err := c.client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	return err
}
