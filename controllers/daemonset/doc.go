// Package daemonset owns the DaemonSet controller: one pod of each
// DaemonSet on every node it is eligible for, as upstream's controller
// decides it.
//
// A node is eligible when the pod template's nodeName (if any),
// nodeSelector and required node affinity match it and every NoSchedule
// and NoExecute taint of the node is tolerated, counting the tolerations
// every daemon pod gets: node.kubernetes.io/not-ready and unreachable
// (NoExecute, no tolerationSeconds), disk-pressure, memory-pressure,
// pid-pressure and unschedulable (NoSchedule), and network-unavailable
// (NoSchedule) for host-network pods. A pod already on a node that became
// ineligible stays unless a NoExecute taint it does not tolerate appeared.
//
// The controller does not bind pods: each pod it creates requires its
// node through a node affinity term on metadata.name, and the scheduler
// places it. Pods that failed are deleted (with a per-node back-off) and
// replaced; succeeded pods are replaced too.
//
// Every template is recorded as a ControllerRevision named
// "<daemonset>-<hash>" whose hash is the pods' controller-revision-hash
// label; revisions beyond revisionHistoryLimit that no pod uses are
// deleted. Updates roll out with RollingUpdate (maxUnavailable: delete old
// pods and let new ones be created; maxSurge: start new pods beside old
// ones and delete the old once the new are available) or only when a pod
// is deleted (OnDelete). Status reports desired, current, misscheduled,
// ready, available, unavailable and updated pod counts and the observed
// generation.
package daemonset
