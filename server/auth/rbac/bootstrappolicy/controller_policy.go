package bootstrappolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
)

// ControllerRolePrefix prefixes the ClusterRole of each controller.
const ControllerRolePrefix = "system:controller:"

// ControllerNamespace holds the service accounts the controllers run as.
const ControllerNamespace = "kube-system"

// controllerRules maps a controller name (which is also its service account
// name in kube-system) to its rules, for the controllers k1s runs.
func controllerRules() map[string][]rbacv1.PolicyRule {
	return map[string][]rbacv1.PolicyRule{
		"certificate-controller": {
			newRule("get", "list", "watch", "delete").groups(certificatesGroup).resources("certificatesigningrequests").rule(),
			newRule("update").groups(certificatesGroup).resources("certificatesigningrequests/status", "certificatesigningrequests/approval").rule(),
			newRule("approve").groups(certificatesGroup).resources("signers").names(
				"kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving").rule(),
			newRule("sign").groups(certificatesGroup).resources("signers").names(
				"kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving").rule(),
			newRule("create").groups("authorization.k8s.io").resources("subjectaccessreviews").rule(),
			newRule("list", "watch").groups(legacyGroup).resources("nodes").rule(),
			eventsRule(),
		},
		"clusterrole-aggregation-controller": {
			// escalate: it writes rules it does not itself hold.
			newRule("escalate", "get", "list", "watch", "update", "patch").groups(rbacGroup).resources("clusterroles").rule(),
		},
		"cronjob-controller": {
			newRule("get", "list", "watch", "update").groups(batchGroup).resources("cronjobs").rule(),
			newRule("get", "list", "watch", "create", "update", "delete", "patch").groups(batchGroup).resources("jobs").rule(),
			newRule("update").groups(batchGroup).resources("cronjobs/status").rule(),
			newRule("update").groups(batchGroup).resources("cronjobs/finalizers").rule(),
			newRule("list", "watch", "delete").groups(legacyGroup).resources("pods").rule(),
			eventsRule(),
		},
		"daemon-set-controller": {
			newRule("get", "list", "watch").groups(extensionsGroup, appsGroup).resources("daemonsets").rule(),
			newRule("update").groups(extensionsGroup, appsGroup).resources("daemonsets/status").rule(),
			newRule("update").groups(extensionsGroup, appsGroup).resources("daemonsets/finalizers").rule(),
			newRule("list", "watch").groups(legacyGroup).resources("nodes").rule(),
			newRule("list", "watch", "create", "delete", "patch").groups(legacyGroup).resources("pods").rule(),
			newRule("create").groups(legacyGroup).resources("pods/binding").rule(),
			newRule("get", "list", "watch", "create", "delete", "update", "patch").groups(appsGroup).resources("controllerrevisions").rule(),
			eventsRule(),
		},
		"deployment-controller": {
			newRule("get", "list", "watch", "update").groups(extensionsGroup, appsGroup).resources("deployments").rule(),
			newRule("update").groups(extensionsGroup, appsGroup).resources("deployments/status").rule(),
			newRule("update").groups(extensionsGroup, appsGroup).resources("deployments/finalizers").rule(),
			newRule("get", "list", "watch", "create", "update", "patch", "delete").groups(appsGroup, extensionsGroup).resources("replicasets").rule(),
			newRule("get", "list", "watch", "update").groups(legacyGroup).resources("pods").rule(),
			eventsRule(),
		},
		"disruption-controller": {
			newRule("get", "list", "watch").groups(extensionsGroup, appsGroup).resources("deployments").rule(),
			newRule("get", "list", "watch").groups(appsGroup, extensionsGroup).resources("replicasets").rule(),
			newRule("get", "list", "watch").groups(legacyGroup).resources("replicationcontrollers").rule(),
			newRule("get", "list", "watch").groups(policyGroup).resources("poddisruptionbudgets").rule(),
			newRule("get", "list", "watch").groups(appsGroup).resources("statefulsets").rule(),
			newRule("update").groups(policyGroup).resources("poddisruptionbudgets/status").rule(),
			newRule("patch", "update").groups(legacyGroup).resources("pods/status").rule(),
			newRule("get").groups("*").resources("*/scale").rule(),
			eventsRule(),
		},
		"ephemeral-volume-controller": {
			newRule("get", "list", "watch").groups(legacyGroup).resources("pods").rule(),
			newRule("update").groups(legacyGroup).resources("pods/finalizers").rule(),
			newRule("get", "list", "watch", "create").groups(legacyGroup).resources("persistentvolumeclaims").rule(),
			eventsRule(),
		},
		"endpoint-controller": {
			newRule("get", "list", "watch").groups(legacyGroup).resources("services", "pods").rule(),
			newRule("get", "list", "create", "update", "delete", "watch").groups(legacyGroup).resources("endpoints").rule(),
			newRule("create").groups(legacyGroup).resources("endpoints/restricted").rule(),
			eventsRule(),
		},
		"endpointslice-controller": {
			newRule("get", "list", "watch").groups(legacyGroup).resources("services", "pods", "nodes").rule(),
			// Sets the owner reference of slices, which needs the services' finalizers.
			newRule("update").groups(legacyGroup).resources("services/finalizers").rule(),
			newRule("get", "list", "create", "update", "delete", "watch").groups(discoveryGroup).resources("endpointslices").rule(),
			eventsRule(),
		},
		"generic-garbage-collector": {
			// It deletes and patches owner references of anything.
			newRule("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*").rule(),
			eventsRule(),
		},
		"horizontal-pod-autoscaler": {
			newRule("get", "list", "watch").groups(autoscalingGroup).resources("horizontalpodautoscalers").rule(),
			newRule("update").groups(autoscalingGroup).resources("horizontalpodautoscalers/status").rule(),
			newRule("get", "update").groups("*").resources("*/scale").rule(),
			newRule("list", "watch").groups(legacyGroup).resources("pods").rule(),
			// The resource, custom and external metrics APIs, when served.
			newRule("list", "watch").groups("metrics.k8s.io").resources("pods").rule(),
			newRule("get", "list", "watch").groups("custom.metrics.k8s.io").resources("*").rule(),
			newRule("get", "list", "watch").groups("external.metrics.k8s.io").resources("*").rule(),
			eventsRule(),
		},
		"job-controller": {
			newRule("get", "list", "watch", "update", "patch").groups(batchGroup).resources("jobs").rule(),
			newRule("update").groups(batchGroup).resources("jobs/status").rule(),
			newRule("update").groups(batchGroup).resources("jobs/finalizers").rule(),
			newRule("list", "watch", "create", "delete", "patch").groups(legacyGroup).resources("pods").rule(),
			eventsRule(),
		},
		"namespace-controller": {
			newRule("get", "list", "watch", "delete").groups(legacyGroup).resources("namespaces").rule(),
			newRule("update").groups(legacyGroup).resources("namespaces/finalize", "namespaces/status").rule(),
			newRule("get", "list", "watch", "delete", "deletecollection").groups("*").resources("*").rule(),
		},
		"node-controller": {
			newRule("get", "list", "update", "delete", "patch", "watch").groups(legacyGroup).resources("nodes").rule(),
			newRule("patch", "update").groups(legacyGroup).resources("nodes/status").rule(),
			// Marks pods not ready when their node stops reporting.
			newRule("patch", "update").groups(legacyGroup).resources("pods/status").rule(),
			newRule("list", "watch", "delete", "get").groups(legacyGroup).resources("pods").rule(),
			newRule("get", "list", "watch").groups(coordinationGroup).resources("leases").rule(),
			eventsRule(),
		},
		"persistent-volume-binder": {
			newRule("get", "list", "watch", "update", "create", "delete").groups(legacyGroup).resources("persistentvolumes").rule(),
			newRule("update").groups(legacyGroup).resources("persistentvolumes/status").rule(),
			newRule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims").rule(),
			newRule("update").groups(legacyGroup).resources("persistentvolumeclaims/status").rule(),
			newRule("list", "watch", "get", "create", "delete").groups(legacyGroup).resources("pods").rule(),
			newRule("get", "list", "watch").groups(storageGroup).resources("storageclasses").rule(),
			newRule("get", "list").groups(legacyGroup).resources("nodes").rule(),
			eventsRule(),
		},
		"pod-garbage-collector": {
			newRule("list", "watch", "delete").groups(legacyGroup).resources("pods").rule(),
			newRule("get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
			newRule("patch").groups(legacyGroup).resources("pods/status").rule(),
		},
		"pv-protection-controller": {
			newRule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumes").rule(),
			eventsRule(),
		},
		"pvc-protection-controller": {
			newRule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims").rule(),
			newRule("list", "watch", "get").groups(legacyGroup).resources("pods").rule(),
			eventsRule(),
		},
		"replicaset-controller": {
			newRule("get", "list", "watch", "update").groups(appsGroup, extensionsGroup).resources("replicasets").rule(),
			newRule("update").groups(appsGroup, extensionsGroup).resources("replicasets/status").rule(),
			newRule("update").groups(appsGroup, extensionsGroup).resources("replicasets/finalizers").rule(),
			newRule("list", "watch", "patch", "create", "delete").groups(legacyGroup).resources("pods").rule(),
			eventsRule(),
		},
		"replication-controller": {
			// 1.0 controllers needed get and update: old controllers break without them.
			newRule("get", "list", "watch", "update").groups(legacyGroup).resources("replicationcontrollers").rule(),
			newRule("update").groups(legacyGroup).resources("replicationcontrollers/status").rule(),
			newRule("update").groups(legacyGroup).resources("replicationcontrollers/finalizers").rule(),
			newRule("list", "watch", "patch", "create", "delete").groups(legacyGroup).resources("pods").rule(),
			eventsRule(),
		},
		"resourcequota-controller": {
			// It counts every kind of object.
			newRule("list", "watch").groups("*").resources("*").rule(),
			newRule("update").groups(legacyGroup).resources("resourcequotas/status").rule(),
			eventsRule(),
		},
		"root-ca-cert-publisher": {
			newRule("create", "update").groups(legacyGroup).resources("configmaps").rule(),
			eventsRule(),
		},
		"service-account-controller": {
			newRule("create").groups(legacyGroup).resources("serviceaccounts").rule(),
			eventsRule(),
		},
		"statefulset-controller": {
			newRule("list", "watch").groups(legacyGroup).resources("pods").rule(),
			newRule("get", "list", "watch").groups(appsGroup).resources("statefulsets").rule(),
			newRule("update").groups(appsGroup).resources("statefulsets/status").rule(),
			newRule("update").groups(appsGroup).resources("statefulsets/finalizers").rule(),
			newRule("get", "create", "delete", "update", "patch").groups(legacyGroup).resources("pods").rule(),
			newRule("get", "create", "delete", "update", "patch", "list", "watch").groups(appsGroup).resources("controllerrevisions").rule(),
			newRule("get", "list", "watch", "create").groups(legacyGroup).resources("persistentvolumeclaims").rule(),
			newRule("update", "delete").groups(legacyGroup).resources("persistentvolumeclaims").rule(),
			newRule("update").groups(legacyGroup).resources("pods/finalizers").rule(),
			eventsRule(),
		},
		"endpointslicemirroring-controller": {
			newRule("get", "list", "watch").groups(legacyGroup).resources("services", "endpoints").rule(),
			// Sets the owner reference of slices, which needs the endpoints' finalizers.
			newRule("update").groups(legacyGroup).resources("endpoints/finalizers").rule(),
			newRule("get", "list", "create", "update", "delete", "watch").groups(discoveryGroup).resources("endpointslices").rule(),
			eventsRule(),
		},
		"service-lb-controller": {
			newRule("get", "list", "watch").groups(legacyGroup).resources("services").rule(),
			newRule("patch", "update").groups(legacyGroup).resources("services/status").rule(),
			newRule("list", "watch").groups(legacyGroup).resources("nodes").rule(),
			eventsRule(),
		},
		"ttl-after-finished-controller": {
			newRule("get", "list", "watch", "delete").groups(batchGroup).resources("jobs").rule(),
			eventsRule(),
		},
	}
}

// ControllerNames returns the names of the controllers that get a role, in
// sorted order. Each runs as the service account kube-system/<name>.
func ControllerNames() []string {
	var names []string
	for n := range controllerRules() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ControllerRoles returns the ClusterRole system:controller:<name> of every
// controller k1s runs, sorted by name.
func ControllerRoles() []rbacv1.ClusterRole {
	all := controllerRules()
	var out []rbacv1.ClusterRole
	for _, n := range ControllerNames() {
		out = append(out, clusterRole(ControllerRolePrefix+n, all[n]...))
	}
	return out
}

// ControllerRoleBindings binds each controller role to the controller's
// service account in kube-system, sorted by name.
func ControllerRoleBindings() []rbacv1.ClusterRoleBinding {
	var out []rbacv1.ClusterRoleBinding
	for _, n := range ControllerNames() {
		out = append(out, clusterBinding(ControllerRolePrefix+n, saSubject(ControllerNamespace, n)))
	}
	return out
}
