package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Aggregation labels: a ClusterRole carrying one of these (set to "true") has
// its rules folded into admin, edit or view respectively.
const (
	AggregateToAdminLabel = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEditLabel  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToViewLabel  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// NodeRoleName is the ClusterRole holding what a kubelet needs. Its default
// binding has no subjects: nodes are authorized by the node authorizer, which
// evaluates NodeRules itself after its graph checks.
const NodeRoleName = "system:node"

func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule(read...).groups(legacyGroup).resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps").rule(),
		newRule(read...).groups(legacyGroup).resources("limitranges", "resourcequotas", "bindings",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log").rule(),
		// Reading namespaces through a namespaced binding only reveals that namespace.
		newRule(read...).groups(legacyGroup).resources("namespaces").rule(),
		newRule(read...).groups(legacyGroup, eventsGroup).resources("events").rule(),
		newRule(read...).groups(discoveryGroup).resources("endpointslices").rule(),
		newRule(read...).groups(appsGroup).resources(
			"controllerrevisions",
			"statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status",
			"deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale").rule(),
		newRule(read...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").rule(),
		newRule(read...).groups(batchGroup).resources("jobs", "cronjobs", "cronjobs/status", "jobs/status").rule(),
		newRule(read...).groups(extensionsGroup).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
			"networkpolicies").rule(),
		newRule(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status").rule(),
		newRule(read...).groups(networkingGroup).resources("networkpolicies", "ingresses", "ingresses/status").rule(),
		newRule(read...).groups(resourceGroup).resources("resourceclaims", "resourceclaims/status", "resourceclaimtemplates").rule(),
	}
}

func editRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Reading these can reveal credentials or reach into running containers.
		newRule(read...).groups(legacyGroup).resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy").rule(),
		newRule("impersonate").groups(legacyGroup).resources("serviceaccounts").rule(),
		newRule(write...).groups(legacyGroup).resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward").rule(),
		newRule("create").groups(legacyGroup).resources("pods/eviction").rule(),
		newRule(write...).groups(legacyGroup).resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets").rule(),
		newRule("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
		newRule(write...).groups(legacyGroup, eventsGroup).resources("events").rule(),
		newRule(write...).groups(appsGroup).resources(
			"statefulsets", "statefulsets/scale",
			"daemonsets",
			"deployments", "deployments/scale", "deployments/rollback",
			"replicasets", "replicasets/scale").rule(),
		newRule(write...).groups(autoscalingGroup).resources("horizontalpodautoscalers").rule(),
		newRule(write...).groups(batchGroup).resources("jobs", "cronjobs").rule(),
		newRule(write...).groups(extensionsGroup).resources("daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "ingresses",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale",
			"networkpolicies").rule(),
		newRule(write...).groups(policyGroup).resources("poddisruptionbudgets").rule(),
		newRule(write...).groups(networkingGroup).resources("networkpolicies", "ingresses").rule(),
		newRule(readWrite...).groups(coordinationGroup).resources("leases").rule(),
		newRule(write...).groups(resourceGroup).resources("resourceclaims", "resourceclaimtemplates").rule(),
	}
}

func adminRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("create").groups(authorizationGroup).resources("localsubjectaccessreviews").rule(),
		newRule(readWrite...).groups(rbacGroup).resources("roles", "rolebindings").rule(),
	}
}

// NodeRules returns the rules of the system:node ClusterRole: what a kubelet
// may do. The node authorizer narrows the object-specific ones (secrets,
// configmaps, volumes, its Node, its Lease, pods) to objects related to the
// calling node and applies the rest as they are.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Checking API access; these creates change nothing.
		newRule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
		newRule("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews").rule(),
		// Service environment variables.
		newRule(read...).groups(legacyGroup).resources("services").rule(),
		// Registering and reporting the Node (NodeRestriction limits this to its own).
		newRule("create", "get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
		newRule("update", "patch").groups(legacyGroup).resources("nodes/status").rule(),
		newRule("update", "patch").groups(legacyGroup).resources("nodes").rule(),
		newRule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").rule(),
		// Pods: reads narrowed by the node authorizer, writes by NodeRestriction.
		newRule(read...).groups(legacyGroup).resources("pods").rule(),
		newRule("create", "delete").groups(legacyGroup).resources("pods").rule(),
		newRule("update", "patch").groups(legacyGroup).resources("pods/status").rule(),
		newRule("create").groups(legacyGroup).resources("pods/eviction").rule(),
		// Secrets, configmaps and volumes used by pods bound to the node.
		newRule("get", "list", "watch").groups(legacyGroup).resources("secrets", "configmaps").rule(),
		newRule("get").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").rule(),
		newRule("get").groups(legacyGroup).resources("endpoints").rule(),
		// Client certificate rotation.
		newRule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").rule(),
		// Node lease heartbeats.
		newRule("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases").rule(),
		newRule("get").groups(storageGroup).resources("volumeattachments").rule(),
		// Tokens for the service accounts of pods bound to the node.
		newRule("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
		newRule("get", "update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status").rule(),
		newRule("get", "watch", "list").groups(storageGroup).resources("csidrivers").rule(),
		newRule("get", "create", "update", "patch", "delete").groups(storageGroup).resources("csinodes").rule(),
		newRule("get", "list", "watch").groups(nodeGroup).resources("runtimeclasses").rule(),
		newRule("get").groups(resourceGroup).resources("resourceclaims").rule(),
		newRule("deletecollection").groups(resourceGroup).resources("resourceslices").rule(),
		newRule("get", "list", "watch").groups(certificatesGroup).resources("clustertrustbundles").rule(),
		newRule("get").groups(legacyGroup).resources("serviceaccounts").rule(),
		newRule("get", "list", "watch", "create").groups(certificatesGroup).resources("podcertificaterequests").rule(),
	}
}

func aggregationRule(label string) *rbacv1.AggregationRule {
	return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
}

// ClusterRoles returns the default ClusterRoles other than the controller
// roles (see ControllerRoles). admin, edit and view carry their upstream
// aggregationRules and, in addition, their fully aggregated rules, so they
// are usable before a clusterrole-aggregation controller runs.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		clusterRole("cluster-admin",
			newRule("*").groups("*").resources("*").rule(),
			newRule("*").urls("*").rule(),
		),
		clusterRole("system:discovery",
			newRule("get").urls(
				"/livez", "/readyz", "/healthz",
				"/version", "/version/",
				"/openapi", "/openapi/*",
				"/api", "/api/*",
				"/apis", "/apis/*",
			).rule(),
		),
		clusterRole("system:monitoring",
			newRule("get").urls(
				"/metrics", "/metrics/slis",
				"/livez", "/readyz", "/healthz",
				"/livez/*", "/readyz/*", "/healthz/*",
				"/flagz", "/statusz",
			).rule(),
			newRule("get").groups(legacyGroup).resources("nodes/metrics").rule(),
		),
		clusterRole("system:basic-user",
			newRule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").rule(),
			newRule("create").groups(authenticationGroup).resources("selfsubjectreviews").rule(),
		),
		clusterRole("system:public-info-viewer",
			newRule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/").rule(),
		),
		{
			// Namespace administrator: edit plus managing roles and bindings.
			ObjectMeta:      defaultMeta("", "admin", nil),
			AggregationRule: aggregationRule(AggregateToAdminLabel),
		},
		{
			// Namespace editor: every user-level action, but not status
			// subresources, quotas or limits, which govern the namespace.
			ObjectMeta:      defaultMeta("", "edit", map[string]string{AggregateToAdminLabel: "true"}),
			AggregationRule: aggregationRule(AggregateToEditLabel),
		},
		{
			// Namespace viewer: read-only, excluding secrets and anything
			// that could escalate.
			ObjectMeta:      defaultMeta("", "view", map[string]string{AggregateToEditLabel: "true"}),
			AggregationRule: aggregationRule(AggregateToViewLabel),
		},
		{
			ObjectMeta: defaultMeta("", "system:aggregate-to-admin", map[string]string{AggregateToAdminLabel: "true"}),
			Rules:      adminRules(),
		},
		{
			ObjectMeta: defaultMeta("", "system:aggregate-to-edit", map[string]string{AggregateToEditLabel: "true"}),
			Rules:      editRules(),
		},
		{
			ObjectMeta: defaultMeta("", "system:aggregate-to-view", map[string]string{AggregateToViewLabel: "true"}),
			Rules:      viewRules(),
		},
		clusterRole(NodeRoleName, NodeRules()...),
		clusterRole("system:node-problem-detector",
			newRule("get").groups(legacyGroup).resources("nodes").rule(),
			newRule("patch").groups(legacyGroup).resources("nodes/status").rule(),
			eventsRule(),
		),
		// k1s: a node opens its tunnel (internal/tunnel) to the server.
		clusterRole("k1s:node-tunnel",
			newRule("get").urls("/v1-k1s/connect").rule(),
		),
		clusterRole("system:node-bootstrapper",
			newRule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").rule(),
		),
		clusterRole("system:auth-delegator",
			newRule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
			newRule("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
		),
		clusterRole("system:kube-aggregator",
			newRule(read...).groups(legacyGroup).resources("services", "endpoints").rule(),
		),
		clusterRole("system:kube-controller-manager",
			eventsRule(),
			// Leader election.
			newRule("create").groups(coordinationGroup).resources("leases").rule(),
			newRule("get", "update").groups(coordinationGroup).resources("leases").names("kube-controller-manager").rule(),
			// Creating the per-controller service accounts and their credentials.
			newRule("create").groups(legacyGroup).resources("secrets", "serviceaccounts").rule(),
			newRule("delete").groups(legacyGroup).resources("secrets").rule(),
			newRule("get").groups(legacyGroup).resources("namespaces", "secrets", "serviceaccounts", "configmaps").rule(),
			newRule("update").groups(legacyGroup).resources("secrets", "serviceaccounts").rule(),
			newRule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
			newRule("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
			// Shared informers.
			newRule("list", "watch").groups("*").resources("*").rule(),
			newRule("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
		),
		clusterRole("system:kube-dns",
			newRule("list", "watch").groups(legacyGroup).resources("endpoints", "services").rule(),
		),
		clusterRole("system:persistent-volume-provisioner",
			newRule("get", "list", "watch", "create", "delete").groups(legacyGroup).resources("persistentvolumes").rule(),
			// update sets lock annotations on claims.
			newRule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims").rule(),
			newRule(read...).groups(storageGroup).resources("storageclasses").rule(),
			newRule("watch").groups(legacyGroup).resources("events").rule(),
			eventsRule(),
		),
		// k1s: every node runs the local-path provisioner (agent/localpath)
		// with its own identity, as k3s runs its provisioner with a
		// cluster-wide service account: it watches every claim, creates
		// and deletes volumes, and records a grown claim's size. A node
		// may thereby create any PersistentVolume.
		clusterRole(LocalPathProvisionerRoleName,
			newRule("get", "list", "watch", "create", "delete", "update").groups(legacyGroup).resources("persistentvolumes").rule(),
			newRule("get", "list", "watch").groups(legacyGroup).resources("persistentvolumeclaims").rule(),
			newRule("update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status").rule(),
			newRule("get", "list", "watch").groups(storageGroup).resources("storageclasses").rule(),
			eventsRule(),
		),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
			newRule("create").groups(certificatesGroup).resources("certificatesigningrequests/nodeclient").rule(),
		),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			newRule("create").groups(certificatesGroup).resources("certificatesigningrequests/selfnodeclient").rule(),
		),
		clusterRole("system:volume-scheduler",
			newRule(readUpdate...).groups(legacyGroup).resources("persistentvolumes").rule(),
			newRule(read...).groups(storageGroup).resources("storageclasses").rule(),
			newRule(readUpdate...).groups(legacyGroup).resources("persistentvolumeclaims").rule(),
		),
		clusterRole("system:certificates.k8s.io:legacy-unknown-approver",
			newRule("approve").groups(certificatesGroup).resources("signers").names("kubernetes.io/legacy-unknown").rule(),
		),
		clusterRole("system:certificates.k8s.io:kubelet-serving-approver",
			newRule("approve").groups(certificatesGroup).resources("signers").names("kubernetes.io/kubelet-serving").rule(),
		),
		clusterRole("system:certificates.k8s.io:kube-apiserver-client-approver",
			newRule("approve").groups(certificatesGroup).resources("signers").names("kubernetes.io/kube-apiserver-client").rule(),
		),
		clusterRole("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
			newRule("approve").groups(certificatesGroup).resources("signers").names("kubernetes.io/kube-apiserver-client-kubelet").rule(),
		),
		// Reading the service account issuer discovery documents; the
		// slash-terminated forms serve clients generated from older specs.
		clusterRole("system:service-account-issuer-discovery",
			newRule("get").urls(
				"/.well-known/openid-configuration",
				"/.well-known/openid-configuration/",
				"/openid/v1/jwks",
				"/openid/v1/jwks/",
			).rule(),
		),
		// Full access to the kubelet API, for the apiserver's kubelet client.
		clusterRole("system:kubelet-api-admin",
			newRule("get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
			newRule("proxy").groups(legacyGroup).resources("nodes").rule(),
			newRule("*").groups(legacyGroup).resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log").rule(),
			newRule("*").groups(legacyGroup).resources("nodes/pods", "nodes/healthz", "nodes/configz").rule(),
		),
		// The service proxy.
		clusterRole("system:node-proxier",
			newRule("list", "watch").groups(legacyGroup).resources("services", "endpoints").rule(),
			newRule("get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
			eventsRule(),
			newRule("list", "watch").groups(networkingGroup).resources("servicecidrs").rule(),
			newRule("list", "watch").groups(discoveryGroup).resources("endpointslices").rule(),
		),
		clusterRole("system:kube-scheduler", kubeSchedulerRules()...),
		clusterRole("system:cluster-trust-bundle-discovery",
			newRule(read...).groups(certificatesGroup).resources("clustertrustbundles").rule(),
		),
	}
	fillAggregatedRules(roles)
	return roles
}

func kubeSchedulerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		eventsRule(),
		// Leader election.
		newRule("create").groups(coordinationGroup).resources("leases").rule(),
		newRule("get", "update", "list", "watch").groups(coordinationGroup).resources("leases").names("kube-scheduler").rule(),
		newRule(readWrite...).groups(coordinationGroup).resources("leasecandidates").rule(),
		// What it schedules, and onto what.
		newRule(read...).groups(legacyGroup).resources("nodes").rule(),
		newRule("get", "list", "watch", "delete").groups(legacyGroup).resources("pods").rule(),
		newRule("create").groups(legacyGroup).resources("pods/binding", "bindings").rule(),
		newRule("patch", "update").groups(legacyGroup).resources("pods/status").rule(),
		// Owners whose pods are spread.
		newRule(read...).groups(legacyGroup).resources("services", "replicationcontrollers").rule(),
		newRule(read...).groups(appsGroup, extensionsGroup).resources("replicasets").rule(),
		newRule(read...).groups(appsGroup).resources("statefulsets").rule(),
		// What pods use or is applied to them.
		newRule(read...).groups(policyGroup).resources("poddisruptionbudgets").rule(),
		newRule(read...).groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").rule(),
		newRule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
		newRule("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
		newRule(read...).groups(storageGroup).resources("csinodes").rule(),
		newRule("get", "list", "watch").groups(storageGroup).resources("volumeattachments").rule(),
		// Namespace selectors in pod affinity.
		newRule(read...).groups(legacyGroup).resources("namespaces").rule(),
		newRule(read...).groups(storageGroup).resources("csidrivers").rule(),
		newRule(read...).groups(storageGroup).resources("csistoragecapacities").rule(),
		// Dynamic resource allocation.
		newRule(read...).groups(resourceGroup).resources("deviceclasses").rule(),
		newRule(readUpdate...).groups(resourceGroup).resources("resourceclaims").rule(),
		newRule(readUpdate...).groups(resourceGroup).resources("resourceclaims/status").rule(),
		newRule("update").groups(legacyGroup).resources("pods/finalizers").rule(),
		newRule(read...).groups(resourceGroup).resources("resourceslices").rule(),
		newRule("create", "delete").groups(resourceGroup).resources("resourceclaims").rule(),
		newRule(read...).groups(resourceGroup).resources("devicetaintrules").rule(),
		newRule("update", "patch").groups(resourceGroup).resources("resourceclaims/binding").rule(),
	}
}

// ClusterRoleBindings returns the default ClusterRoleBindings other than the
// controller bindings (see ControllerRoleBindings).
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", groupSubjects(user.SystemPrivilegedGroup)...),
		clusterBinding("system:monitoring", groupSubjects(user.MonitoringGroup)...),
		clusterBinding("system:discovery", groupSubjects(user.AllAuthenticated)...),
		clusterBinding("system:basic-user", groupSubjects(user.AllAuthenticated)...),
		clusterBinding("system:public-info-viewer", groupSubjects(user.AllAuthenticated, user.AllUnauthenticated)...),
		clusterBinding("system:node-proxier", userSubjects(user.KubeProxy)...),
		clusterBinding("system:kube-controller-manager", userSubjects(user.KubeControllerManager)...),
		clusterBinding("system:kube-dns", saSubject("kube-system", "kube-dns")),
		// k1s runs the scheduler in the controller manager, as the
		// kube-system/kube-scheduler service account when controllers use
		// their own credentials; it is bound alongside the upstream user.
		clusterBinding("system:kube-scheduler", append(userSubjects(user.KubeScheduler), saSubject("kube-system", "kube-scheduler"))...),
		clusterBinding("system:volume-scheduler", append(userSubjects(user.KubeScheduler), saSubject("kube-system", "kube-scheduler"))...),
		// Kept without subjects: the node authorizer grants node permissions.
		clusterBinding(NodeRoleName),
		clusterBinding("system:service-account-issuer-discovery", groupSubjects(serviceaccount.AllServiceAccountsGroup)...),
		clusterBinding("system:cluster-trust-bundle-discovery", groupSubjects(serviceaccount.AllServiceAccountsGroup)...),
		// Joining nodes (kubeadm's bindings, under k1s's names): a bootstrap
		// token may request a kubelet client certificate, which is approved
		// on its own, and a node may renew its own.
		namedBinding("k1s:kubelet-bootstrap", "system:node-bootstrapper", groupSubjects(BootstrappersGroup)...),
		namedBinding("k1s:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", groupSubjects(BootstrappersGroup)...),
		namedBinding("k1s:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", groupSubjects(user.NodesGroup)...),
		// Every node runs k1s's service proxy and DNS with its own identity.
		namedBinding("k1s:node-proxier", "system:node-proxier", groupSubjects(user.NodesGroup)...),
		clusterBinding("k1s:node-tunnel", groupSubjects(user.NodesGroup)...),
		// The helm controller installs charts, which may hold any object
		// (k3s binds its helm Jobs' account to cluster-admin too).
		namedBinding("k1s:helm-controller", "cluster-admin", saSubject("kube-system", "helm-controller")),
		clusterBinding(LocalPathProvisionerRoleName, groupSubjects(user.NodesGroup)...),
	}
}

// LocalPathProvisionerRoleName is the ClusterRole (and binding, to every
// node) of the nodes' built-in local-path provisioner.
const LocalPathProvisionerRoleName = "k1s:local-path-provisioner"

// BootstrappersGroup holds every bootstrap token's identity.
const BootstrappersGroup = "system:bootstrappers"

func namedBinding(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	b := clusterBinding(name, subjects...)
	b.RoleRef.Name = role
	return b
}
