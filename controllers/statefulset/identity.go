package statefulset

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// podNamePattern splits a StatefulSet pod name into set name and ordinal.
var podNamePattern = regexp.MustCompile(`^(.*)-([0-9]+)$`)

// parentAndOrdinal returns the set name and ordinal encoded in pod's name,
// or "" and -1 if it has none.
func parentAndOrdinal(pod *corev1.Pod) (string, int) {
	m := podNamePattern.FindStringSubmatch(pod.Name)
	if m == nil {
		return "", -1
	}
	i, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return m[1], -1
	}
	return m[1], int(i)
}

func ordinalOf(pod *corev1.Pod) int {
	_, o := parentAndOrdinal(pod)
	return o
}

// startOrdinal is the first ordinal of set (spec.ordinals.start, else 0).
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func replicasOf(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// endOrdinal is the last ordinal of set (inclusive).
func endOrdinal(set *appsv1.StatefulSet) int {
	return startOrdinal(set) + replicasOf(set) - 1
}

func inOrdinalRange(pod *corev1.Pod, set *appsv1.StatefulSet) bool {
	o := ordinalOf(pod)
	return o >= startOrdinal(set) && o <= endOrdinal(set)
}

func podName(set *appsv1.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

// claimName is the name of the claim from template for ordinal:
// "<template>-<set>-<ordinal>".
func claimName(set *appsv1.StatefulSet, template *corev1.PersistentVolumeClaim, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template.Name, set.Name, ordinal)
}

// isMemberOf reports whether pod's name makes it one of set's.
func isMemberOf(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, _ := parentAndOrdinal(pod)
	return parent == set.Name
}

// identityMatches reports whether pod has the name, namespace and pod-name
// label of a member of set.
func identityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, o := parentAndOrdinal(pod)
	return o >= 0 && parent == set.Name && pod.Name == podName(set, o) &&
		pod.Namespace == set.Namespace && pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name
}

// storageMatches reports whether pod mounts the claim of every volume
// claim template under the template's name.
func storageMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	o := ordinalOf(pod)
	if o < 0 {
		return false
	}
	vols := make(map[string]corev1.Volume, len(pod.Spec.Volumes))
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	for i := range set.Spec.VolumeClaimTemplates {
		tmpl := &set.Spec.VolumeClaimTemplates[i]
		v, ok := vols[tmpl.Name]
		if !ok || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claimName(set, tmpl, o) {
			return false
		}
	}
	return true
}

// claimsFor returns the claims pod needs, keyed by template name: each
// template renamed for pod's ordinal, in set's namespace, with the set's
// selector labels added.
func claimsFor(set *appsv1.StatefulSet, pod *corev1.Pod) map[string]corev1.PersistentVolumeClaim {
	o := ordinalOf(pod)
	out := make(map[string]corev1.PersistentVolumeClaim, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		tmpl := &set.Spec.VolumeClaimTemplates[i]
		claim := tmpl.DeepCopy()
		claim.Name = claimName(set, tmpl, o)
		claim.Namespace = set.Namespace
		if claim.Labels == nil {
			claim.Labels = map[string]string{}
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				claim.Labels[k] = v
			}
		}
		out[tmpl.Name] = *claim
	}
	return out
}

// updateStorage makes pod mount its claims, replacing any volume of the
// same name as a claim template; other volumes are kept.
func updateStorage(set *appsv1.StatefulSet, pod *corev1.Pod) {
	claims := claimsFor(set, pod)
	vols := make([]corev1.Volume, 0, len(claims)+len(pod.Spec.Volumes))
	for i := range set.Spec.VolumeClaimTemplates {
		name := set.Spec.VolumeClaimTemplates[i].Name
		vols = append(vols, corev1.Volume{
			Name: name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: claims[name].Name,
			}},
		})
	}
	for _, v := range pod.Spec.Volumes {
		if _, ok := claims[v.Name]; !ok {
			vols = append(vols, v)
		}
	}
	pod.Spec.Volumes = vols
}

// updateIdentity gives pod the name, namespace, pod-name and pod-index
// labels of its ordinal in set.
func updateIdentity(set *appsv1.StatefulSet, pod *corev1.Pod) {
	o := ordinalOf(pod)
	pod.Name = podName(set, o)
	pod.Namespace = set.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(o)
}

// initIdentity is updateIdentity plus the fields only set at creation:
// hostname (the pod name) and subdomain (the governing service).
func initIdentity(set *appsv1.StatefulSet, pod *corev1.Pod) {
	updateIdentity(set, pod)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
}

func isRunningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && controllerutil.IsPodReady(pod)
}

func isRunningAndAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return controllerutil.IsPodAvailable(pod, minReadySeconds, metav1.NewTime(now))
}

// isCreated reports whether the pod exists in the apiserver (which always
// gives it a phase); pods the controller has only planned have none.
func isCreated(pod *corev1.Pod) bool { return pod.Status.Phase != "" }

func isPending(pod *corev1.Pod) bool { return pod.Status.Phase == corev1.PodPending }

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

func isTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

func isUnavailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return !controllerutil.IsPodAvailable(pod, minReadySeconds, metav1.NewTime(now)) || isTerminating(pod)
}

func allowsBurst(set *appsv1.StatefulSet) bool {
	return set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
}

func setPodRevision(pod *corev1.Pod, revision string) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetRevisionLabel] = revision
}

func podRevision(pod *corev1.Pod) string {
	return pod.Labels[appsv1.StatefulSetRevisionLabel]
}

// newPod is the pod of set at ordinal, not yet created.
func newPod(set *appsv1.StatefulSet, ordinal int) *corev1.Pod {
	// GetPodFromTemplate only fails for owners without metadata.
	pod, _ := controllerutil.GetPodFromTemplate(&set.Spec.Template, set, metav1.NewControllerRef(set, controllerKind))
	pod.Name = podName(set, ordinal)
	initIdentity(set, pod)
	updateStorage(set, pod)
	return pod
}

// newVersionedPod is the pod to create at ordinal: of the current
// revision (currentSet) below the rolling update's partition (or, without
// rollingUpdate, below the count of current replicas), of the update
// revision otherwise.
func newVersionedPod(currentSet, updateSet *appsv1.StatefulSet, currentRevision, updateRevision string, ordinal int) *corev1.Pod {
	ru := currentSet.Spec.UpdateStrategy.RollingUpdate
	start := startOrdinal(currentSet)
	current := (currentSet.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru == nil &&
		ordinal < start+int(currentSet.Status.CurrentReplicas)) ||
		(ru != nil && ru.Partition != nil && ordinal < start+int(*ru.Partition))
	if current {
		pod := newPod(currentSet, ordinal)
		setPodRevision(pod, currentRevision)
		return pod
	}
	pod := newPod(updateSet, ordinal)
	setPodRevision(pod, updateRevision)
	return pod
}
