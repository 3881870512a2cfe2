package apiserver

import (
	"context"
	k1squota "github.com/k1s/k1s/internal/quota"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"

	batchapi "github.com/k1s/k1s/internal/apis/batch"
	apicore "github.com/k1s/k1s/internal/apis/core"
	"github.com/k1s/k1s/server/printers"
	"github.com/k1s/k1s/server/registry"
	csrregistry "github.com/k1s/k1s/server/registry/certificates"
	"github.com/k1s/k1s/server/registry/core/namespace"
	"github.com/k1s/k1s/server/registry/core/pod"
)

// res is shorthand for a Resource of group version gv.
func res(gv schema.GroupVersion, resource, kind string, namespaced bool, newObj, newList func() runtime.Object) *registry.Resource {
	return &registry.Resource{
		GVR:            gv.WithResource(resource),
		Kind:           kind,
		Namespaced:     namespaced,
		New:            newObj,
		NewList:        newList,
		TableConvertor: printers.TableConvertorFor(gv.WithResource(resource).GroupResource()),
	}
}

// resources returns the description of every etcd-backed resource k1s
// serves. Validation and defaulting are attached in validation.go; special
// subresources (binding, scale, token ...) are added by storage.go.
func resources() []*registry.Resource {
	core := corev1.SchemeGroupVersion
	var out []*registry.Resource
	add := func(r *registry.Resource, mutate func(r *registry.Resource)) {
		if mutate != nil {
			mutate(r)
		}
		out = append(out, r)
	}

	// core/v1
	add(res(core, "namespaces", "Namespace", false, func() runtime.Object { return &corev1.Namespace{} }, func() runtime.Object { return &corev1.NamespaceList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"ns"}
		r.Status = true
		r.PrepareForCreate = namespace.PrepareForCreate
		r.PrepareForUpdate = namespace.PrepareForUpdate
		r.KeepDuringUpdate = namespace.KeepDuringUpdate
		r.Fields = func(obj runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
		}
	})
	add(res(core, "pods", "Pod", true, func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"po"}
		r.Categories = []string{"all"}
		r.Status = true
		r.PrepareForCreate = pod.PrepareForCreate
		r.GracefulDelete = pod.GracefulDelete
		r.Fields = podFields
		r.TriggerFuncs = storage.IndexerFuncs{"spec.nodeName": func(obj runtime.Object) string {
			return obj.(*corev1.Pod).Spec.NodeName
		}}
	})
	add(res(core, "nodes", "Node", false, func() runtime.Object { return &corev1.Node{} }, func() runtime.Object { return &corev1.NodeList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"no"}
		r.Status = true
		r.KeepStatusOnCreate = true
		r.Fields = func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
		}
	})
	add(res(core, "services", "Service", true, func() runtime.Object { return &corev1.Service{} }, func() runtime.Object { return &corev1.ServiceList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"svc"}
		r.Categories = []string{"all"}
		r.Status = true
		r.Fields = func(obj runtime.Object) fields.Set {
			s := obj.(*corev1.Service)
			return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
		}
		r.PrepareForUpdate = func(_ context.Context, obj, old runtime.Object) {
			apicore.DropServiceTypeDependentFields(obj.(*corev1.Service), old.(*corev1.Service))
		}
	})
	add(res(core, "endpoints", "Endpoints", true, func() runtime.Object { return &corev1.Endpoints{} }, func() runtime.Object { return &corev1.EndpointsList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"ep"}
		r.AllowCreateOnUpdate = true
	})
	add(res(core, "configmaps", "ConfigMap", true, func() runtime.Object { return &corev1.ConfigMap{} }, func() runtime.Object { return &corev1.ConfigMapList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"cm"}
	})
	add(res(core, "secrets", "Secret", true, func() runtime.Object { return &corev1.Secret{} }, func() runtime.Object { return &corev1.SecretList{} }), func(r *registry.Resource) {
		r.Fields = func(obj runtime.Object) fields.Set {
			return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
		}
	})
	add(res(core, "serviceaccounts", "ServiceAccount", true, func() runtime.Object { return &corev1.ServiceAccount{} }, func() runtime.Object { return &corev1.ServiceAccountList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"sa"}
	})
	add(res(core, "events", "Event", true, func() runtime.Object { return &corev1.Event{} }, func() runtime.Object { return &corev1.EventList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"ev"}
		r.Fields = coreEventFields
		r.AllowCreateOnUpdate = true
	})
	add(res(core, "persistentvolumes", "PersistentVolume", false, func() runtime.Object { return &corev1.PersistentVolume{} }, func() runtime.Object { return &corev1.PersistentVolumeList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"pv"}
		r.Status = true
		r.PrepareForCreate = func(_ context.Context, obj runtime.Object) {
			obj.(*corev1.PersistentVolume).Status.Phase = corev1.VolumePending
		}
	})
	add(res(core, "persistentvolumeclaims", "PersistentVolumeClaim", true, func() runtime.Object { return &corev1.PersistentVolumeClaim{} }, func() runtime.Object { return &corev1.PersistentVolumeClaimList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"pvc"}
		r.Status = true
		r.PrepareForCreate = func(_ context.Context, obj runtime.Object) {
			obj.(*corev1.PersistentVolumeClaim).Status.Phase = corev1.ClaimPending
		}
	})
	add(res(core, "resourcequotas", "ResourceQuota", true, func() runtime.Object { return &corev1.ResourceQuota{} }, func() runtime.Object { return &corev1.ResourceQuotaList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"quota"}
		r.Status = true
		// Until the resourcequota controller keeps status.used, the registry
		// publishes status.hard so admission enforces the quota.
		r.PrepareForCreate = func(_ context.Context, obj runtime.Object) {
			q := obj.(*corev1.ResourceQuota)
			q.Status = k1squota.StatusFromSpec(q, nil)
		}
		r.PrepareForUpdate = func(_ context.Context, obj, old runtime.Object) {
			q := obj.(*corev1.ResourceQuota)
			q.Status = k1squota.StatusFromSpec(q, old.(*corev1.ResourceQuota).Status.Used)
		}
	})
	add(res(core, "limitranges", "LimitRange", true, func() runtime.Object { return &corev1.LimitRange{} }, func() runtime.Object { return &corev1.LimitRangeList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"limits"}
	})
	add(res(core, "podtemplates", "PodTemplate", true, func() runtime.Object { return &corev1.PodTemplate{} }, func() runtime.Object { return &corev1.PodTemplateList{} }), nil)
	add(res(core, "replicationcontrollers", "ReplicationController", true, func() runtime.Object { return &corev1.ReplicationController{} }, func() runtime.Object { return &corev1.ReplicationControllerList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"rc"}
		r.Categories = []string{"all"}
		r.Status = true
		r.Fields = func(obj runtime.Object) fields.Set {
			return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*corev1.ReplicationController).Status.Replicas))}
		}
	})

	// apps/v1
	apps := appsv1.SchemeGroupVersion
	add(res(apps, "deployments", "Deployment", true, func() runtime.Object { return &appsv1.Deployment{} }, func() runtime.Object { return &appsv1.DeploymentList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"deploy"}
		r.Categories = []string{"all"}
		r.Status = true
	})
	add(res(apps, "replicasets", "ReplicaSet", true, func() runtime.Object { return &appsv1.ReplicaSet{} }, func() runtime.Object { return &appsv1.ReplicaSetList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"rs"}
		r.Categories = []string{"all"}
		r.Status = true
		r.Fields = func(obj runtime.Object) fields.Set {
			return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))}
		}
	})
	add(res(apps, "statefulsets", "StatefulSet", true, func() runtime.Object { return &appsv1.StatefulSet{} }, func() runtime.Object { return &appsv1.StatefulSetList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"sts"}
		r.Categories = []string{"all"}
		r.Status = true
	})
	add(res(apps, "daemonsets", "DaemonSet", true, func() runtime.Object { return &appsv1.DaemonSet{} }, func() runtime.Object { return &appsv1.DaemonSetList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"ds"}
		r.Categories = []string{"all"}
		r.Status = true
	})
	add(res(apps, "controllerrevisions", "ControllerRevision", true, func() runtime.Object { return &appsv1.ControllerRevision{} }, func() runtime.Object { return &appsv1.ControllerRevisionList{} }), nil)

	// batch/v1
	batch := batchv1.SchemeGroupVersion
	add(res(batch, "jobs", "Job", true, func() runtime.Object { return &batchv1.Job{} }, func() runtime.Object { return &batchv1.JobList{} }), func(r *registry.Resource) {
		r.Categories = []string{"all"}
		r.Status = true
		r.PrepareForCreate = func(_ context.Context, obj runtime.Object) {
			job := obj.(*batchv1.Job)
			batchapi.GenerateJobSelector(job)
			batchapi.DropDisabledJobFields(&job.Spec, nil)
		}
		r.PrepareForUpdate = func(_ context.Context, obj, old runtime.Object) {
			batchapi.DropDisabledJobFields(&obj.(*batchv1.Job).Spec, &old.(*batchv1.Job).Spec)
		}
		r.Fields = func(obj runtime.Object) fields.Set {
			return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
		}
	})
	add(res(batch, "cronjobs", "CronJob", true, func() runtime.Object { return &batchv1.CronJob{} }, func() runtime.Object { return &batchv1.CronJobList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"cj"}
		r.Categories = []string{"all"}
		r.Status = true
	})

	add(res(coordinationv1.SchemeGroupVersion, "leases", "Lease", true, func() runtime.Object { return &coordinationv1.Lease{} }, func() runtime.Object { return &coordinationv1.LeaseList{} }), func(r *registry.Resource) {
		r.AllowCreateOnUpdate = true
	})
	add(res(discoveryv1.SchemeGroupVersion, "endpointslices", "EndpointSlice", true, func() runtime.Object { return &discoveryv1.EndpointSlice{} }, func() runtime.Object { return &discoveryv1.EndpointSliceList{} }), nil)
	add(res(eventsv1.SchemeGroupVersion, "events", "Event", true, func() runtime.Object { return &eventsv1.Event{} }, func() runtime.Object { return &eventsv1.EventList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"ev"}
		r.Fields = eventsV1Fields
	})

	rbac := rbacv1.SchemeGroupVersion
	add(res(rbac, "roles", "Role", true, func() runtime.Object { return &rbacv1.Role{} }, func() runtime.Object { return &rbacv1.RoleList{} }), nil)
	add(res(rbac, "rolebindings", "RoleBinding", true, func() runtime.Object { return &rbacv1.RoleBinding{} }, func() runtime.Object { return &rbacv1.RoleBindingList{} }), nil)
	add(res(rbac, "clusterroles", "ClusterRole", false, func() runtime.Object { return &rbacv1.ClusterRole{} }, func() runtime.Object { return &rbacv1.ClusterRoleList{} }), nil)
	add(res(rbac, "clusterrolebindings", "ClusterRoleBinding", false, func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }), nil)

	add(res(storagev1.SchemeGroupVersion, "storageclasses", "StorageClass", false, func() runtime.Object { return &storagev1.StorageClass{} }, func() runtime.Object { return &storagev1.StorageClassList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"sc"}
	})

	nw := networkingv1.SchemeGroupVersion
	add(res(nw, "ingresses", "Ingress", true, func() runtime.Object { return &networkingv1.Ingress{} }, func() runtime.Object { return &networkingv1.IngressList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"ing"}
		r.Status = true
	})
	add(res(nw, "ingressclasses", "IngressClass", false, func() runtime.Object { return &networkingv1.IngressClass{} }, func() runtime.Object { return &networkingv1.IngressClassList{} }), nil)
	add(res(nw, "servicecidrs", "ServiceCIDR", false, func() runtime.Object { return &networkingv1.ServiceCIDR{} }, func() runtime.Object { return &networkingv1.ServiceCIDRList{} }), func(r *registry.Resource) {
		r.Status = true
	})
	add(res(nw, "ipaddresses", "IPAddress", false, func() runtime.Object { return &networkingv1.IPAddress{} }, func() runtime.Object { return &networkingv1.IPAddressList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"ip"}
	})
	add(res(nw, "networkpolicies", "NetworkPolicy", true, func() runtime.Object { return &networkingv1.NetworkPolicy{} }, func() runtime.Object { return &networkingv1.NetworkPolicyList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"netpol"}
	})

	add(res(policyv1.SchemeGroupVersion, "poddisruptionbudgets", "PodDisruptionBudget", true, func() runtime.Object { return &policyv1.PodDisruptionBudget{} }, func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"pdb"}
		r.Status = true
	})
	add(res(schedulingv1.SchemeGroupVersion, "priorityclasses", "PriorityClass", false, func() runtime.Object { return &schedulingv1.PriorityClass{} }, func() runtime.Object { return &schedulingv1.PriorityClassList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"pc"}
	})
	add(res(certificatesv1.SchemeGroupVersion, "certificatesigningrequests", "CertificateSigningRequest", false, func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} }, func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"csr"}
		r.Status = true
		r.PrepareForCreate = csrregistry.PrepareForCreate
		r.PrepareForStatusUpdate = csrregistry.PrepareForStatusUpdate
		r.Fields = func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
		}
	})

	ar := admissionregistrationv1.SchemeGroupVersion
	add(res(ar, "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} }, func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} }), func(r *registry.Resource) {
		r.Categories = []string{"api-extensions"}
	})
	add(res(ar, "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false, func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} }, func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} }), func(r *registry.Resource) {
		r.Categories = []string{"api-extensions"}
	})
	add(res(ar, "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} }, func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} }), func(r *registry.Resource) {
		r.Categories = []string{"api-extensions"}
		r.Status = true
	})
	add(res(ar, "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} }, func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} }), func(r *registry.Resource) {
		r.Categories = []string{"api-extensions"}
	})
	add(res(ar, "mutatingadmissionpolicies", "MutatingAdmissionPolicy", false, func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicy{} }, func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} }), func(r *registry.Resource) {
		r.Categories = []string{"api-extensions"}
	})
	add(res(ar, "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", false, func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBinding{} }, func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} }), func(r *registry.Resource) {
		r.Categories = []string{"api-extensions"}
	})
	out = append(out, flowcontrolResources()...)
	out = append(out, groupResources()...)
	return out
}

func podFields(obj runtime.Object) fields.Set {
	pod := obj.(*corev1.Pod)
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	podIPs := ""
	for i, ip := range pod.Status.PodIPs {
		if i > 0 {
			podIPs += ","
		}
		podIPs += ip.IP
	}
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.podIPs":            podIPs,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}

func coreEventFields(obj runtime.Object) fields.Set {
	e := obj.(*corev1.Event)
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
	}
}

func eventsV1Fields(obj runtime.Object) fields.Set {
	e := obj.(*eventsv1.Event)
	return fields.Set{
		"regarding.kind":            e.Regarding.Kind,
		"regarding.namespace":       e.Regarding.Namespace,
		"regarding.name":            e.Regarding.Name,
		"regarding.uid":             string(e.Regarding.UID),
		"regarding.apiVersion":      e.Regarding.APIVersion,
		"regarding.resourceVersion": e.Regarding.ResourceVersion,
		"regarding.fieldPath":       e.Regarding.FieldPath,
		"reason":                    e.Reason,
		"reportingController":       e.ReportingController,
		"type":                      e.Type,
	}
}
