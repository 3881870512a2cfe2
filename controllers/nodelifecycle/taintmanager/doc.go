// Package taintmanager evicts pods from nodes with NoExecute taints, as
// upstream's taint eviction controller does: a pod that does not tolerate
// every NoExecute taint of its node is deleted at once; a pod that tolerates
// them all for a limited time (tolerationSeconds) is deleted when the
// shortest of those times has passed since the taint was first seen; a pod
// that tolerates them all forever is left alone. A scheduled deletion is
// cancelled when the taints go away or the pod comes to tolerate them
// forever. Before deleting, the pod gets a DisruptionTarget condition
// (reason DeletionByTaintManager), and each deletion and cancellation is
// reported as a TaintManagerEviction event on the pod.
//
// The node lifecycle controller runs it; the timers use an injected clock.
package taintmanager
