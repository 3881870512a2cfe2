package eviction

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/util/qos"
)

// systemCriticalPriority is upstream's scheduling.SystemCriticalPriority.
const systemCriticalPriority = 2 * 1000000000

// Annotations that mark static and mirror pods (upstream's).
const (
	configSourceAnnotation = "kubernetes.io/config.source"
	mirrorAnnotation       = corev1.MirrorPodAnnotationKey
)

// IsCriticalPod reports whether pod is never evicted nor refused, as
// upstream's kubelet: static pods, mirror pods, and pods of system
// critical priority.
func IsCriticalPod(pod *corev1.Pod) bool {
	if src, ok := pod.Annotations[configSourceAnnotation]; ok && src != "api" {
		return true
	}
	if _, ok := pod.Annotations[mirrorAnnotation]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}

// QOSClass is the pod's QoS class: its status's, else computed as
// upstream's.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return qos.GetPodQOS(pod)
}

var nowTime = func() metav1.Time { return metav1.NewTime(time.Now()) }
