// Package priority owns the Priority admission plugin of the k1s apiserver
// and the built-in system PriorityClasses.
//
// On pod create the plugin resolves spec.priorityClassName to
// spec.priority and spec.preemptionPolicy from the PriorityClass of that
// name; a pod naming no class gets the class marked globalDefault (the one
// with the lowest value if a race made several), or priority 0 when there is
// none. A pod naming an unknown class, or setting spec.priority or
// spec.preemptionPolicy to something other than its class gives, is
// rejected. On pod update the resolved values are carried over from the
// stored pod when the update omits them.
//
// On PriorityClass create and update it rejects a second globalDefault
// class.
//
// SystemPriorityClasses lists system-node-critical and
// system-cluster-critical, which the server creates at start.
package priority
