package apiserver

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/k1s/k1s/internal/apis/admissionregistration"
	"github.com/k1s/k1s/internal/apis/apps"
	"github.com/k1s/k1s/internal/apis/batch"
	"github.com/k1s/k1s/internal/apis/certificates"
	"github.com/k1s/k1s/internal/apis/coordination"
	"github.com/k1s/k1s/internal/apis/core"
	"github.com/k1s/k1s/internal/apis/discovery"
	"github.com/k1s/k1s/internal/apis/events"
	"github.com/k1s/k1s/internal/apis/flowcontrol"
	"github.com/k1s/k1s/internal/apis/networking"
	"github.com/k1s/k1s/internal/apis/policy"
	"github.com/k1s/k1s/internal/apis/rbac"
	"github.com/k1s/k1s/internal/apis/scheduling"
	"github.com/k1s/k1s/internal/apis/storage"
	"github.com/k1s/k1s/server/registry"
)

// validators holds the typed validation functions of one resource.
type validators struct {
	create func(context.Context, runtime.Object) field.ErrorList
	update func(context.Context, runtime.Object, runtime.Object) field.ErrorList
	status func(context.Context, runtime.Object, runtime.Object) field.ErrorList
}

// v adapts typed validation functions; update and status may be nil.
func v[T runtime.Object](create func(T) field.ErrorList, update, status func(T, T) field.ErrorList) validators {
	out := validators{create: func(_ context.Context, obj runtime.Object) field.ErrorList { return create(obj.(T)) }}
	if update != nil {
		out.update = func(_ context.Context, obj, old runtime.Object) field.ErrorList { return update(obj.(T), old.(T)) }
	}
	if status != nil {
		out.status = func(_ context.Context, obj, old runtime.Object) field.ErrorList { return status(obj.(T), old.(T)) }
	}
	return out
}

func gr(group, resource string) schema.GroupResource {
	return schema.GroupResource{Group: group, Resource: resource}
}

// validation maps each resource to the validators in internal/apis.
var validation = map[schema.GroupResource]validators{
	gr("", "namespaces"):             v(core.ValidateNamespace, core.ValidateNamespaceUpdate, core.ValidateNamespaceStatusUpdate),
	gr("", "pods"):                   v(core.ValidatePod, core.ValidatePodUpdate, core.ValidatePodStatusUpdate),
	gr("", "nodes"):                  v(core.ValidateNode, core.ValidateNodeUpdate, core.ValidateNodeUpdate),
	gr("", "services"):               v(core.ValidateService, core.ValidateServiceUpdate, core.ValidateServiceStatusUpdate),
	gr("", "endpoints"):              v(core.ValidateEndpoints, core.ValidateEndpointsUpdate, nil),
	gr("", "configmaps"):             v(core.ValidateConfigMap, core.ValidateConfigMapUpdate, nil),
	gr("", "secrets"):                v(core.ValidateSecret, core.ValidateSecretUpdate, nil),
	gr("", "serviceaccounts"):        v(core.ValidateServiceAccount, core.ValidateServiceAccountUpdate, nil),
	gr("", "events"):                 v(core.ValidateEvent, core.ValidateEventUpdate, nil),
	gr("", "persistentvolumes"):      v(core.ValidatePersistentVolume, core.ValidatePersistentVolumeUpdate, core.ValidatePersistentVolumeStatusUpdate),
	gr("", "persistentvolumeclaims"): v(core.ValidatePersistentVolumeClaim, core.ValidatePersistentVolumeClaimUpdate, core.ValidatePersistentVolumeClaimStatusUpdate),
	gr("", "resourcequotas"):         v(core.ValidateResourceQuota, core.ValidateResourceQuotaUpdate, core.ValidateResourceQuotaStatusUpdate),
	gr("", "limitranges"):            v(core.ValidateLimitRange, core.ValidateLimitRangeUpdate, nil),
	gr("", "podtemplates"):           v(core.ValidatePodTemplate, core.ValidatePodTemplateUpdate, nil),
	gr("", "replicationcontrollers"): v(core.ValidateReplicationController, core.ValidateReplicationControllerUpdate, core.ValidateReplicationControllerStatusUpdate),

	gr("apps", "deployments"):         v(apps.ValidateDeployment, apps.ValidateDeploymentUpdate, apps.ValidateDeploymentStatusUpdate),
	gr("apps", "replicasets"):         v(apps.ValidateReplicaSet, apps.ValidateReplicaSetUpdate, apps.ValidateReplicaSetStatusUpdate),
	gr("apps", "statefulsets"):        v(apps.ValidateStatefulSet, apps.ValidateStatefulSetUpdate, apps.ValidateStatefulSetStatusUpdate),
	gr("apps", "daemonsets"):          v(apps.ValidateDaemonSet, apps.ValidateDaemonSetUpdate, apps.ValidateDaemonSetStatusUpdate),
	gr("apps", "controllerrevisions"): v(apps.ValidateControllerRevision, apps.ValidateControllerRevisionUpdate, nil),

	gr("batch", "jobs"):     v(batch.ValidateJob, batch.ValidateJobUpdate, batch.ValidateJobStatusUpdate),
	gr("batch", "cronjobs"): v(batch.ValidateCronJob, batch.ValidateCronJobUpdate, batch.ValidateCronJobStatusUpdate),

	gr("coordination.k8s.io", "leases"):      v(coordination.ValidateLease, coordination.ValidateLeaseUpdate, nil),
	gr("discovery.k8s.io", "endpointslices"): v(discovery.ValidateEndpointSlice, discovery.ValidateEndpointSliceUpdate, nil),
	gr("events.k8s.io", "events"):            v(events.ValidateEvent, events.ValidateEventUpdate, nil),

	gr("rbac.authorization.k8s.io", "roles"):               v(rbac.ValidateRole, rbac.ValidateRoleUpdate, nil),
	gr("rbac.authorization.k8s.io", "clusterroles"):        v(rbac.ValidateClusterRole, rbac.ValidateClusterRoleUpdate, nil),
	gr("rbac.authorization.k8s.io", "rolebindings"):        v(rbac.ValidateRoleBinding, rbac.ValidateRoleBindingUpdate, nil),
	gr("rbac.authorization.k8s.io", "clusterrolebindings"): v(rbac.ValidateClusterRoleBinding, rbac.ValidateClusterRoleBindingUpdate, nil),

	gr("admissionregistration.k8s.io", "validatingwebhookconfigurations"):   v(admissionregistration.ValidateValidatingWebhookConfiguration, admissionregistration.ValidateValidatingWebhookConfigurationUpdate, nil),
	gr("admissionregistration.k8s.io", "mutatingwebhookconfigurations"):     v(admissionregistration.ValidateMutatingWebhookConfiguration, admissionregistration.ValidateMutatingWebhookConfigurationUpdate, nil),
	gr("admissionregistration.k8s.io", "validatingadmissionpolicies"):       v(admissionregistration.ValidateValidatingAdmissionPolicy, admissionregistration.ValidateValidatingAdmissionPolicyUpdate, admissionregistration.ValidateValidatingAdmissionPolicyStatusUpdate),
	gr("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): v(admissionregistration.ValidateValidatingAdmissionPolicyBinding, admissionregistration.ValidateValidatingAdmissionPolicyBindingUpdate, nil),
	gr("admissionregistration.k8s.io", "mutatingadmissionpolicies"):         v(admissionregistration.ValidateMutatingAdmissionPolicy, admissionregistration.ValidateMutatingAdmissionPolicyUpdate, nil),
	gr("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"):   v(admissionregistration.ValidateMutatingAdmissionPolicyBinding, admissionregistration.ValidateMutatingAdmissionPolicyBindingUpdate, nil),

	gr("storage.k8s.io", "storageclasses"):                  v(storage.ValidateStorageClass, storage.ValidateStorageClassUpdate, nil),
	gr("networking.k8s.io", "ingresses"):                    v(networking.ValidateIngress, networking.ValidateIngressUpdate, networking.ValidateIngressStatusUpdate),
	gr("networking.k8s.io", "ingressclasses"):               v(networking.ValidateIngressClass, networking.ValidateIngressClassUpdate, nil),
	gr("networking.k8s.io", "networkpolicies"):              v(networking.ValidateNetworkPolicy, networking.ValidateNetworkPolicyUpdate, nil),
	gr("networking.k8s.io", "servicecidrs"):                 v(networking.ValidateServiceCIDR, networking.ValidateServiceCIDRUpdate, networking.ValidateServiceCIDRStatusUpdate),
	gr("networking.k8s.io", "ipaddresses"):                  v(networking.ValidateIPAddress, networking.ValidateIPAddressUpdate, nil),
	gr("policy", "poddisruptionbudgets"):                    v(policy.ValidatePodDisruptionBudget, policy.ValidatePodDisruptionBudgetUpdate, policy.ValidatePodDisruptionBudgetStatusUpdate),
	gr("scheduling.k8s.io", "priorityclasses"):              v(scheduling.ValidatePriorityClass, scheduling.ValidatePriorityClassUpdate, nil),
	gr("certificates.k8s.io", "certificatesigningrequests"): v(certificates.ValidateCertificateSigningRequest, certificates.ValidateCertificateSigningRequestUpdate, certificates.ValidateCertificateSigningRequestStatusUpdate),

	gr("flowcontrol.apiserver.k8s.io", "flowschemas"):                 v(flowcontrol.ValidateFlowSchema, flowcontrol.ValidateFlowSchemaUpdate, flowcontrol.ValidateFlowSchemaStatusUpdate),
	gr("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): v(flowcontrol.ValidatePriorityLevelConfiguration, flowcontrol.ValidatePriorityLevelConfigurationUpdate, flowcontrol.ValidatePriorityLevelConfigurationStatusUpdate),
}

// attachValidation sets the validation hooks of r from the internal/apis packages.
func (d *dependencies) attachValidation(r *registry.Resource) {
	val, ok := validation[r.GroupResource()]
	if !ok {
		val, ok = d.groupValidation()[r.GroupResource()]
	}
	if !ok {
		return
	}
	r.Validate = val.create
	r.ValidateUpdate = val.update
	r.ValidateStatusUpdate = val.status
}
