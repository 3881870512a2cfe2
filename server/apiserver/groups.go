package apiserver

import (
	"context"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/k1s/k1s/internal/apis/autoscaling"
	"github.com/k1s/k1s/internal/apis/certificates"
	"github.com/k1s/k1s/internal/apis/node"
	apiresource "github.com/k1s/k1s/internal/apis/resource"
	"github.com/k1s/k1s/internal/apis/storage"
	"github.com/k1s/k1s/internal/apis/storagemigration"
	"github.com/k1s/k1s/server/registry"
	csrregistry "github.com/k1s/k1s/server/registry/certificates"
	"github.com/k1s/k1s/server/registry/core/pod"
	draregistry "github.com/k1s/k1s/server/registry/resource"
)

// groupResources are the resources of node.k8s.io, the CSI kinds of
// storage.k8s.io, certificates.k8s.io's trust bundles and pod certificate
// requests, resource.k8s.io (dynamic resource allocation),
// storagemigration.k8s.io and autoscaling (HorizontalPodAutoscalers, served
// as autoscaling/v2 and autoscaling/v1). Their validation is in
// groupValidation; the hooks below are upstream's strategies.
func groupResources() []*registry.Resource {
	var out []*registry.Resource
	add := func(r *registry.Resource, mutate func(r *registry.Resource)) {
		if mutate != nil {
			mutate(r)
		}
		out = append(out, r)
	}

	add(res(nodev1.SchemeGroupVersion, "runtimeclasses", "RuntimeClass", false, func() runtime.Object { return &nodev1.RuntimeClass{} }, func() runtime.Object { return &nodev1.RuntimeClassList{} }), func(r *registry.Resource) {
		r.DisallowUnconditionalUpd = true
	})

	st := storagev1.SchemeGroupVersion
	add(res(st, "csidrivers", "CSIDriver", false, func() runtime.Object { return &storagev1.CSIDriver{} }, func() runtime.Object { return &storagev1.CSIDriverList{} }), func(r *registry.Resource) {
		r.DisallowUnconditionalUpd = true
	})
	add(res(st, "csinodes", "CSINode", false, func() runtime.Object { return &storagev1.CSINode{} }, func() runtime.Object { return &storagev1.CSINodeList{} }), func(r *registry.Resource) {
		r.Status = true
		r.DisallowUnconditionalUpd = true
		// CSIVolumeHealth is alpha: storage health stays out unless
		// already reported.
		r.PrepareForStatusUpdate = func(_ context.Context, obj, old runtime.Object) {
			if len(old.(*storagev1.CSINode).Status.StorageHealth) == 0 {
				obj.(*storagev1.CSINode).Status.StorageHealth = nil
			}
		}
	})
	add(res(st, "csistoragecapacities", "CSIStorageCapacity", true, func() runtime.Object { return &storagev1.CSIStorageCapacity{} }, func() runtime.Object { return &storagev1.CSIStorageCapacityList{} }), func(r *registry.Resource) {
		r.DisallowUnconditionalUpd = true
	})
	add(res(st, "volumeattachments", "VolumeAttachment", false, func() runtime.Object { return &storagev1.VolumeAttachment{} }, func() runtime.Object { return &storagev1.VolumeAttachmentList{} }), func(r *registry.Resource) {
		r.Status = true
		r.DisallowUnconditionalUpd = true
	})
	add(res(st, "volumeattributesclasses", "VolumeAttributesClass", false, func() runtime.Object { return &storagev1.VolumeAttributesClass{} }, func() runtime.Object { return &storagev1.VolumeAttributesClassList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"vac"}
	})

	certs := certificatesv1.SchemeGroupVersion
	add(res(certs, "clustertrustbundles", "ClusterTrustBundle", false, func() runtime.Object { return &certificatesv1.ClusterTrustBundle{} }, func() runtime.Object { return &certificatesv1.ClusterTrustBundleList{} }), func(r *registry.Resource) {
		r.DisallowUnconditionalUpd = true
		r.Fields = func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.signerName": obj.(*certificatesv1.ClusterTrustBundle).Spec.SignerName}
		}
	})
	add(res(certs, "podcertificaterequests", "PodCertificateRequest", true, func() runtime.Object { return &certificatesv1.PodCertificateRequest{} }, func() runtime.Object { return &certificatesv1.PodCertificateRequestList{} }), func(r *registry.Resource) {
		r.Status = true
		r.DisallowUnconditionalUpd = true
		r.Fields = func(obj runtime.Object) fields.Set {
			s := obj.(*certificatesv1.PodCertificateRequest).Spec
			return fields.Set{"spec.signerName": s.SignerName, "spec.podName": s.PodName, "spec.nodeName": string(s.NodeName)}
		}
	})

	dra := resourcev1.SchemeGroupVersion
	add(res(dra, "deviceclasses", "DeviceClass", false, func() runtime.Object { return &resourcev1.DeviceClass{} }, func() runtime.Object { return &resourcev1.DeviceClassList{} }), nil)
	add(res(dra, "resourceclaims", "ResourceClaim", true, func() runtime.Object { return &resourcev1.ResourceClaim{} }, func() runtime.Object { return &resourcev1.ResourceClaimList{} }), func(r *registry.Resource) {
		r.Status = true
		r.PrepareForCreate = draregistry.PrepareClaim
		r.PrepareForUpdate = draregistry.PrepareClaimUpdate
		r.PrepareForStatusUpdate = draregistry.PrepareClaimStatus
	})
	add(res(dra, "resourceclaimtemplates", "ResourceClaimTemplate", true, func() runtime.Object { return &resourcev1.ResourceClaimTemplate{} }, func() runtime.Object { return &resourcev1.ResourceClaimTemplateList{} }), func(r *registry.Resource) {
		r.PrepareForCreate = draregistry.PrepareTemplate
		r.PrepareForUpdate = draregistry.PrepareTemplateUpdate
	})
	add(res(dra, "resourceslices", "ResourceSlice", false, func() runtime.Object { return &resourcev1.ResourceSlice{} }, func() runtime.Object { return &resourcev1.ResourceSliceList{} }), func(r *registry.Resource) {
		r.PrepareForCreate = draregistry.PrepareSlice
		r.PrepareForUpdate = draregistry.PrepareSliceUpdate
		r.Fields = func(obj runtime.Object) fields.Set {
			s := obj.(*resourcev1.ResourceSlice).Spec
			nodeName := ""
			if s.NodeName != nil {
				nodeName = *s.NodeName
			}
			return fields.Set{resourcev1.ResourceSliceSelectorNodeName: nodeName, resourcev1.ResourceSliceSelectorDriver: s.Driver, resourcev1.ResourceSliceSelectorPoolName: s.Pool.Name}
		}
	})
	add(res(dra, "devicetaintrules", "DeviceTaintRule", false, func() runtime.Object { return &resourcev1.DeviceTaintRule{} }, func() runtime.Object { return &resourcev1.DeviceTaintRuleList{} }), func(r *registry.Resource) {
		r.Status = true
		r.DisallowUnconditionalUpd = true
		r.PrepareForUpdate = draregistry.PrepareTaintRuleUpdate(time.Now)
	})

	add(res(svmv1.SchemeGroupVersion, "storageversionmigrations", "StorageVersionMigration", false, func() runtime.Object { return &svmv1.StorageVersionMigration{} }, func() runtime.Object { return &svmv1.StorageVersionMigrationList{} }), func(r *registry.Resource) {
		r.Status = true
		r.DisallowUnconditionalUpd = true
	})

	add(res(autoscalingv2.SchemeGroupVersion, "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} }, func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} }), func(r *registry.Resource) {
		r.ShortNames = []string{"hpa"}
		r.Categories = []string{"all"}
		r.Status = true
		r.AlsoServedAs = []schema.GroupVersion{autoscalingv1.SchemeGroupVersion}
	})
	return out
}

// groupValidation maps the resources of groupResources to their validation
// (internal/apis), with the checks that need the server: signer
// permissions of PodCertificateRequest status writes, admin access to
// devices, and who may write a ResourceClaim's status.
func (d *dependencies) groupValidation() map[schema.GroupResource]validators {
	namespaces := func(ctx context.Context, name string) (*corev1.Namespace, error) {
		return d.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}
	admin := draregistry.AdminAccessAllowed(namespaces)
	claimStatus := draregistry.ClaimStatusAllowed(d.authorizer, namespaces)
	return map[schema.GroupResource]validators{
		gr("node.k8s.io", "runtimeclasses"): v(node.ValidateRuntimeClass, node.ValidateRuntimeClassUpdate, nil),

		gr("storage.k8s.io", "csidrivers"):              v(storage.ValidateCSIDriver, storage.ValidateCSIDriverUpdate, nil),
		gr("storage.k8s.io", "csinodes"):                v(storage.ValidateCSINode, storage.ValidateCSINodeUpdate, storage.ValidateCSINodeStatusUpdate),
		gr("storage.k8s.io", "csistoragecapacities"):    v(storage.ValidateCSIStorageCapacity, storage.ValidateCSIStorageCapacityUpdate, nil),
		gr("storage.k8s.io", "volumeattachments"):       v(storage.ValidateVolumeAttachment, storage.ValidateVolumeAttachmentUpdate, storage.ValidateVolumeAttachmentStatusUpdate),
		gr("storage.k8s.io", "volumeattributesclasses"): v(storage.ValidateVolumeAttributesClass, storage.ValidateVolumeAttributesClassUpdate, nil),

		gr("certificates.k8s.io", "clustertrustbundles"): v(certificates.ValidateClusterTrustBundle, certificates.ValidateClusterTrustBundleUpdate, nil),
		gr("certificates.k8s.io", "podcertificaterequests"): withStatus(
			v(certificates.ValidatePodCertificateRequest, certificates.ValidatePodCertificateRequestUpdate, nil),
			csrregistry.ValidatePodCertificateRequestStatus(d.authorizer, time.Now)),

		gr("resource.k8s.io", "deviceclasses"): v(apiresource.ValidateDeviceClass, apiresource.ValidateDeviceClassUpdate, nil),
		gr("resource.k8s.io", "resourceclaims"): {
			create: func(ctx context.Context, obj runtime.Object) field.ErrorList {
				c := obj.(*resourcev1.ResourceClaim)
				return append(admin(ctx, c.Spec.Devices.Requests, c.Namespace), apiresource.ValidateResourceClaim(c)...)
			},
			update: func(_ context.Context, obj, old runtime.Object) field.ErrorList {
				return apiresource.ValidateResourceClaimUpdate(obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim))
			},
			status: func(ctx context.Context, obj, old runtime.Object) field.ErrorList {
				errs := claimStatus(ctx, obj, old)
				return append(errs, apiresource.ValidateResourceClaimStatusUpdate(obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim))...)
			},
		},
		gr("resource.k8s.io", "resourceclaimtemplates"): {
			create: func(ctx context.Context, obj runtime.Object) field.ErrorList {
				t := obj.(*resourcev1.ResourceClaimTemplate)
				return append(admin(ctx, t.Spec.Spec.Devices.Requests, t.Namespace), apiresource.ValidateResourceClaimTemplate(t)...)
			},
			update: func(_ context.Context, obj, old runtime.Object) field.ErrorList {
				t, o := obj.(*resourcev1.ResourceClaimTemplate), old.(*resourcev1.ResourceClaimTemplate)
				return append(apiresource.ValidateResourceClaimTemplate(t), apiresource.ValidateResourceClaimTemplateUpdate(t, o)...)
			},
		},
		gr("resource.k8s.io", "resourceslices"):   v(apiresource.ValidateResourceSlice, apiresource.ValidateResourceSliceUpdate, nil),
		gr("resource.k8s.io", "devicetaintrules"): v(apiresource.ValidateDeviceTaintRule, apiresource.ValidateDeviceTaintRuleUpdate, apiresource.ValidateDeviceTaintRuleStatusUpdate),

		gr("storagemigration.k8s.io", "storageversionmigrations"): v(storagemigration.ValidateStorageVersionMigration,
			storagemigration.ValidateStorageVersionMigrationUpdate, storagemigration.ValidateStorageVersionMigrationStatusUpdate),

		gr("autoscaling", "horizontalpodautoscalers"): v(autoscaling.ValidateHorizontalPodAutoscaler,
			autoscaling.ValidateHorizontalPodAutoscalerUpdate, autoscaling.ValidateHorizontalPodAutoscalerStatusUpdate),
	}
}

// addGroupSubresources adds pods/ephemeralcontainers and pods/resize
// (updates of only the pod's ephemeral containers, or of its containers'
// resources) and the legacy bindings resource (a
// Binding POSTed to the namespace, named after its pod: pods/binding's
// storage, as upstream serves both).
func (d *dependencies) addGroupSubresources(set *storageSet) {
	pods := set.stores[corev1.Resource("pods")]
	set.add(corev1.SchemeGroupVersion, "pods/ephemeralcontainers",
		registry.NewUpdateSubresource(pods.Store, pod.PrepareEphemeralContainersUpdate, pod.ValidateEphemeralContainersUpdate))
	set.add(corev1.SchemeGroupVersion, "pods/resize",
		registry.NewUpdateSubresource(pods.Store, pod.PrepareResizeUpdate, pod.ValidateResizeUpdate))
	set.add(corev1.SchemeGroupVersion, "bindings", bindingsREST{pod.NewBindingREST(pods.Store)})
}

// bindingsREST is pods/binding's storage served as a top-level resource:
// POSTed to the collection, so the pod is named by the Binding itself.
type bindingsREST struct{ *pod.BindingREST }

// Create binds the pod the Binding names.
func (r bindingsREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return r.BindingREST.Create(ctx, accessor.GetName(), obj, createValidation, options)
}

// GetSingularName implements rest.SingularNameProvider.
func (bindingsREST) GetSingularName() string { return "binding" }

// withStatus replaces val's status validation with status.
func withStatus(val validators, status func(ctx context.Context, obj, old runtime.Object) field.ErrorList) validators {
	val.status = status
	return val
}
