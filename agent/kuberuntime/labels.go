// Package kuberuntime runs pods through a CRI runtime: it reads the
// runtime's view of a pod (sandboxes and containers found by label),
// computes what must change to match the pod's spec, and does it — create
// the sandbox, run init containers in order, start, restart (with
// back-off) and kill containers — as upstream's kubelet runtime manager
// does. It talks to the runtime only through the CRI API.
package kuberuntime

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels and annotations k1s puts on sandboxes and containers; the names
// are upstream's, so CRI tools (crictl) show familiar metadata.
const (
	labelPodName          = "io.kubernetes.pod.name"
	labelPodNamespace     = "io.kubernetes.pod.namespace"
	labelPodUID           = "io.kubernetes.pod.uid"
	labelContainerName    = "io.kubernetes.container.name"
	labelContainerType    = "io.kubernetes.container.type"
	labelManagedBy        = "io.kubernetes.managed-by"
	annotationHash        = "io.kubernetes.container.hash"
	annotationRestarts    = "io.kubernetes.container.restartCount"
	annotationTermPath    = "io.kubernetes.container.terminationMessagePath"
	annotationTermPolicy  = "io.kubernetes.container.terminationMessagePolicy"
	annotationPreStop     = "io.kubernetes.container.preStopHandler"
	annotationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
	annotationInit        = "k1s.io/init-container"

	// ManagedBy marks what k1s's agent created.
	ManagedBy = "k1s-agent"
)

func sandboxLabels(pod *corev1.Pod) map[string]string {
	labels := map[string]string{}
	for k, v := range pod.Labels {
		labels[k] = v
	}
	labels[labelPodName] = pod.Name
	labels[labelPodNamespace] = pod.Namespace
	labels[labelPodUID] = string(pod.UID)
	labels[labelManagedBy] = ManagedBy
	return labels
}

func containerLabels(pod *corev1.Pod, name string) map[string]string {
	return map[string]string{
		labelPodName:       pod.Name,
		labelPodNamespace:  pod.Namespace,
		labelPodUID:        string(pod.UID),
		labelContainerName: name,
		labelManagedBy:     ManagedBy,
	}
}

// HashContainer fingerprints a container spec: a changed hash (e.g. a new
// image) means the running container must be replaced. Its resources and
// resize policy are left out, as kubelet's: a resize is applied in place
// (UpdateContainerResources), or restarts the container only when its
// resize policy says so.
func HashContainer(c *corev1.Container) uint64 {
	cp := *c
	cp.Resources, cp.ResizePolicy = corev1.ResourceRequirements{}, nil
	return hashOf(&cp)
}

// legacyHashContainer is the fingerprint of containers created before
// resources were left out; a container carrying it is not replaced.
func legacyHashContainer(c *corev1.Container) uint64 { return hashOf(c) }

func hashOf(c *corev1.Container) uint64 {
	data, _ := json.Marshal(c)
	h := fnv.New64a()
	_, _ = h.Write(data)
	return h.Sum64()
}

// specChanged reports whether a container instance was created from a
// different spec than c (resources aside).
func specChanged(c *corev1.Container, hash string) bool {
	return hash != "" && hash != fmt.Sprintf("%x", HashContainer(c)) && hash != fmt.Sprintf("%x", legacyHashContainer(c))
}

func containerAnnotations(pod *corev1.Pod, c *corev1.Container, restartCount int, init bool) map[string]string {
	a := map[string]string{
		annotationHash:       strconv.FormatUint(HashContainer(c), 16),
		annotationRestarts:   strconv.Itoa(restartCount),
		annotationTermPath:   c.TerminationMessagePath,
		annotationTermPolicy: string(c.TerminationMessagePolicy),
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[annotationGracePeriod] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if data, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			a[annotationPreStop] = string(data)
		}
	}
	if init {
		a[annotationInit] = "true"
	}
	return a
}

func podUIDOf(labels map[string]string) types.UID { return types.UID(labels[labelPodUID]) }
