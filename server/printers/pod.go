package printers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// nodeLostReason is the pod status reason the node lifecycle controller
// sets on pods of an unreachable node.
const nodeLostReason = "NodeLost"

var podPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Ready", "string", "Ready containers out of all containers that count towards readiness."),
		col("Status", "string", "Summary of the pod phase and its containers' states."),
		col("Restarts", "string", "Container restarts in the pod, and how long ago the latest one happened."),
		ageColumn(),
		wideCol("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"]),
		wideCol("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"]),
		wideCol("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]),
		wideCol("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"]),
	},
	rows: podRows,
}

// Row conditions kubectl uses to hide finished pods unless --show-all.
var (
	podSucceededConditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	podFailedConditions    = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
)

func podRows(now time.Time, objs []runtime.Object, fromList bool) ([]metav1.TableRow, error) {
	rows, err := eachObject(podCells)(now, objs, fromList)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		switch rows[i].Object.Object.(*corev1.Pod).Status.Phase {
		case corev1.PodSucceeded:
			rows[i].Conditions = podSucceededConditions
		case corev1.PodFailed:
			rows[i].Conditions = podFailedConditions
		}
	}
	return rows, nil
}

func podCells(now time.Time, pod *corev1.Pod) []interface{} {
	s := summarizePod(pod)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, since(now, s.lastRestart))
	}

	podIP := none
	if len(pod.Status.PodIPs) > 0 && pod.Status.PodIPs[0].IP != "" {
		podIP = pod.Status.PodIPs[0].IP
	}
	nodeName := pod.Spec.NodeName
	if nodeName == "" {
		nodeName = none
	}
	nominated := pod.Status.NominatedNodeName
	if nominated == "" {
		nominated = none
	}

	return []interface{}{
		pod.Name,
		fmt.Sprintf("%d/%d", s.ready, s.total),
		s.status,
		restarts,
		since(now, pod.CreationTimestamp),
		podIP, nodeName, nominated, readinessGates(pod),
	}
}

// podSummary is what the READY, STATUS and RESTARTS columns show.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	lastRestart  metav1.Time
}

func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// lastTerminated returns when a container last terminated, if it ever did.
func lastTerminated(st *corev1.ContainerStatus) (metav1.Time, bool) {
	if t := st.LastTerminationState.Terminated; t != nil {
		return t.FinishedAt, true
	}
	return metav1.Time{}, false
}

func later(a, b metav1.Time) metav1.Time {
	if a.Before(&b) {
		return b
	}
	return a
}

// summarizePod computes the kubectl STATUS string the way upstream does:
// the phase (or status reason) refined by the first init container that has
// not finished, else by the regular containers' states, then overridden by
// deletion.
func summarizePod(pod *corev1.Pod) podSummary {
	s := podSummary{total: len(pod.Spec.Containers), status: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.status = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.status = corev1.PodReasonSchedulingGated
		}
	}

	initSpecs := make(map[string]*corev1.Container, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		initSpecs[c.Name] = c
		if isSidecar(c) {
			s.total++
		}
	}

	// Init containers: all restarts count while the pod initializes; only
	// sidecar restarts count once it has.
	var initRestarts, sidecarRestarts int
	var initLast, sidecarLast metav1.Time
	initializing := false
	for i := range pod.Status.InitContainerStatuses {
		st := &pod.Status.InitContainerStatuses[i]
		sidecar := isSidecar(initSpecs[st.Name])
		initRestarts += int(st.RestartCount)
		if t, ok := lastTerminated(st); ok {
			initLast = later(initLast, t)
			if sidecar {
				sidecarLast = later(sidecarLast, t)
			}
		}
		if sidecar {
			sidecarRestarts += int(st.RestartCount)
		}

		if term := st.State.Terminated; term != nil && term.ExitCode == 0 {
			continue
		}
		if sidecar && st.Started != nil && *st.Started {
			if st.Ready {
				s.ready++
			}
			continue
		}
		initializing = true
		switch {
		case st.State.Terminated != nil:
			term := st.State.Terminated
			switch {
			case term.Reason != "":
				s.status = "Init:" + term.Reason
			case term.Signal != 0:
				s.status = fmt.Sprintf("Init:Signal:%d", term.Signal)
			default:
				s.status = fmt.Sprintf("Init:ExitCode:%d", term.ExitCode)
			}
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			s.status = "Init:" + st.State.Waiting.Reason
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		break
	}
	s.restarts, s.lastRestart = initRestarts, initLast

	if !initializing || podInitialized(pod) {
		s.restarts, s.lastRestart = sidecarRestarts, sidecarLast
		running := false
		failedReason := ""
		// Walk backwards so the first container's state wins.
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := &pod.Status.ContainerStatuses[i]
			s.restarts += int(st.RestartCount)
			if t, ok := lastTerminated(st); ok {
				s.lastRestart = later(s.lastRestart, t)
			}
			switch {
			case st.State.Waiting != nil && st.State.Waiting.Reason != "":
				s.status = st.State.Waiting.Reason
			case st.State.Terminated != nil:
				term := st.State.Terminated
				switch {
				case term.Reason != "":
					s.status = term.Reason
				case term.Signal != 0:
					s.status = fmt.Sprintf("Signal:%d", term.Signal)
				default:
					s.status = fmt.Sprintf("ExitCode:%d", term.ExitCode)
				}
				if term.ExitCode != 0 {
					failedReason = s.status
				}
			case st.Ready && st.State.Running != nil:
				running = true
				s.ready++
			}
		}
		// A "Completed" container next to running or failed ones does not
		// describe the pod.
		if s.status == "Completed" {
			switch {
			case running && podReady(pod):
				s.status = "Running"
			case failedReason != "":
				s.status = failedReason
			case running:
				s.status = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == nodeLostReason:
			s.status = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			s.status = "Terminating"
		}
	}
	return s
}

func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podInitialized(pod *corev1.Pod) bool { return podConditionTrue(pod, corev1.PodInitialized) }

// podReady reports whether any Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// readinessGates renders "true/total" over the pod's readiness gates.
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return none
	}
	met := 0
	for _, g := range pod.Spec.ReadinessGates {
		if podConditionTrue(pod, g.ConditionType) {
			met++
		}
	}
	return fmt.Sprintf("%d/%d", met, len(pod.Spec.ReadinessGates))
}
