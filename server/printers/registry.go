package printers

import "k8s.io/apimachinery/pkg/runtime/schema"

// printersByResource maps each resource with an upstream-compatible printer
// to it. Resources upstream prints with the default convertor (roles,
// clusterroles, limitranges) are deliberately absent.
var printersByResource = map[schema.GroupResource]printer{
	{Resource: "pods"}:                   podPrinter,
	{Resource: "podtemplates"}:           podTemplatePrinter,
	{Resource: "replicationcontrollers"}: replicationControllerPrinter,
	{Resource: "nodes"}:                  nodePrinter,
	{Resource: "namespaces"}:             namespacePrinter,
	{Resource: "services"}:               servicePrinter,
	{Resource: "endpoints"}:              endpointsPrinter,
	{Resource: "configmaps"}:             configMapPrinter,
	{Resource: "secrets"}:                secretPrinter,
	{Resource: "serviceaccounts"}:        serviceAccountPrinter,
	{Resource: "events"}:                 eventPrinter,
	{Resource: "persistentvolumes"}:      persistentVolumePrinter,
	{Resource: "persistentvolumeclaims"}: persistentVolumeClaimPrinter,
	{Resource: "resourcequotas"}:         resourceQuotaPrinter,

	{Group: "events.k8s.io", Resource: "events"}:                           eventPrinter,
	{Group: "discovery.k8s.io", Resource: "endpointslices"}:                endpointSlicePrinter,
	{Group: "coordination.k8s.io", Resource: "leases"}:                     leasePrinter,
	{Group: "policy", Resource: "poddisruptionbudgets"}:                    podDisruptionBudgetPrinter,
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"}:              priorityClassPrinter,
	{Group: "storage.k8s.io", Resource: "storageclasses"}:                  storageClassPrinter,
	{Group: "networking.k8s.io", Resource: "ingresses"}:                    ingressPrinter,
	{Group: "networking.k8s.io", Resource: "ingressclasses"}:               ingressClassPrinter,
	{Group: "networking.k8s.io", Resource: "networkpolicies"}:              networkPolicyPrinter,
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}:         roleBindingPrinter,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}:  clusterRoleBindingPrinter,
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: certificateSigningRequestPrinter,

	{Group: "node.k8s.io", Resource: "runtimeclasses"}:                       runtimeClassPrinter,
	{Group: "storage.k8s.io", Resource: "csidrivers"}:                        csiDriverPrinter,
	{Group: "storage.k8s.io", Resource: "csinodes"}:                          csiNodePrinter,
	{Group: "storage.k8s.io", Resource: "csistoragecapacities"}:              csiStorageCapacityPrinter,
	{Group: "storage.k8s.io", Resource: "volumeattachments"}:                 volumeAttachmentPrinter,
	{Group: "storage.k8s.io", Resource: "volumeattributesclasses"}:           volumeAttributesClassPrinter,
	{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}:          clusterTrustBundlePrinter,
	{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}:       podCertificateRequestPrinter,
	{Group: "resource.k8s.io", Resource: "deviceclasses"}:                    deviceClassPrinter,
	{Group: "resource.k8s.io", Resource: "resourceclaims"}:                   resourceClaimPrinter,
	{Group: "resource.k8s.io", Resource: "resourceclaimtemplates"}:           resourceClaimTemplatePrinter,
	{Group: "resource.k8s.io", Resource: "resourceslices"}:                   resourceSlicePrinter,
	{Group: "resource.k8s.io", Resource: "devicetaintrules"}:                 deviceTaintRulePrinter,
	{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations"}: storageVersionMigrationPrinter,
	{Group: "autoscaling", Resource: "horizontalpodautoscalers"}:             horizontalPodAutoscalerPrinter,

	{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}:                 flowSchemaPrinter,
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"}: priorityLevelConfigurationPrinter,

	{Group: "apps", Resource: "deployments"}:         deploymentPrinter,
	{Group: "apps", Resource: "replicasets"}:         replicaSetPrinter,
	{Group: "apps", Resource: "statefulsets"}:        statefulSetPrinter,
	{Group: "apps", Resource: "daemonsets"}:          daemonSetPrinter,
	{Group: "apps", Resource: "controllerrevisions"}: controllerRevisionPrinter,
	{Group: "batch", Resource: "jobs"}:               jobPrinter,
	{Group: "batch", Resource: "cronjobs"}:           cronJobPrinter,
}
