package printers

import (
	"reflect"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestGroupCells(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "x", CreationTimestamp: ago(5 * time.Second)}
	deleting := meta
	deleting.DeletionTimestamp = ptr.To(ago(0))
	tests := []struct {
		gr   schema.GroupResource
		obj  runtime.Object
		want []interface{}
	}{
		{schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}, &nodev1.RuntimeClass{ObjectMeta: meta, Handler: "runc"},
			[]interface{}{"x", "runc", "5s"}},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "csidrivers"}, &storagev1.CSIDriver{ObjectMeta: meta, Spec: storagev1.CSIDriverSpec{
			TokenRequests: []storagev1.TokenRequest{{Audience: "a"}, {Audience: "b"}}, VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Persistent", "Ephemeral"}}},
			[]interface{}{"x", true, false, false, "a,b", false, "Persistent,Ephemeral", "5s"}},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}, &storagev1.VolumeAttachment{ObjectMeta: meta, Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "csi.example.com", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv1")}}, Status: storagev1.VolumeAttachmentStatus{Attached: true}},
			[]interface{}{"x", "csi.example.com", "pv1", "n1", true, "5s"}},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "csistoragecapacities"}, &storagev1.CSIStorageCapacity{ObjectMeta: meta, StorageClassName: "fast"},
			[]interface{}{"x", "fast", "<unset>"}},
		{schema.GroupResource{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}, &certificatesv1.ClusterTrustBundle{ObjectMeta: meta},
			[]interface{}{"x", "<none>"}},
		{schema.GroupResource{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}, &certificatesv1.PodCertificateRequest{ObjectMeta: meta,
			Spec:   certificatesv1.PodCertificateRequestSpec{PodName: "p", ServiceAccountName: "sa", NodeName: "n", SignerName: "example.com/s", UnverifiedUserAnnotations: map[string]string{"example.com/a": "b"}},
			Status: certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{{Type: "Denied", Status: metav1.ConditionTrue}}}},
			[]interface{}{"x", "p", "sa", "n", "example.com/s", "Denied", "example.com/a=b"}},
		{schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, &resourcev1.ResourceClaim{ObjectMeta: meta},
			[]interface{}{"x", "pending", "5s"}},
		{schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, &resourcev1.ResourceClaim{ObjectMeta: deleting, Status: resourcev1.ResourceClaimStatus{
			Allocation: &resourcev1.AllocationResult{}, ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Name: "p"}}}},
			[]interface{}{"x", "deleted,allocated,reserved", "5s"}},
		{schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceslices"}, &resourcev1.ResourceSlice{ObjectMeta: meta, Spec: resourcev1.ResourceSliceSpec{
			Driver: "d.example.com", NodeName: ptr.To("n1"), Pool: resourcev1.ResourcePool{Name: "p"}}},
			[]interface{}{"x", "n1", "d.example.com", "p", "5s"}},
		{schema.GroupResource{Group: "resource.k8s.io", Resource: "devicetaintrules"}, &resourcev1.DeviceTaintRule{ObjectMeta: meta, Spec: resourcev1.DeviceTaintRuleSpec{
			Taint: resourcev1.DeviceTaint{Key: "k", Value: "v", Effect: "NoExecute", TimeAdded: ptr.To(ago(time.Minute))}}},
			[]interface{}{"x", "k", "v", "NoExecute", "60s", "5s"}},
		{schema.GroupResource{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations"}, &svmv1.StorageVersionMigration{ObjectMeta: meta,
			Spec:   svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "apps", Resource: "deployments"}},
			Status: svmv1.StorageVersionMigrationStatus{Conditions: []metav1.Condition{{Type: "Running", Status: metav1.ConditionTrue}}}},
			[]interface{}{"x", "deployments.apps", "Running"}},
	}
	for _, tc := range tests {
		t.Run(tc.gr.String(), func(t *testing.T) {
			if got := cells(t, tc.gr, tc.obj); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("cells = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestHPACells(t *testing.T) {
	gr := schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}
	cpu := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{AverageValue: ptr.To(resource.MustParse("10"))}}}
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(time.Hour)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
			MinReplicas: ptr.To[int32](2), MaxReplicas: 5, Metrics: []autoscalingv2.MetricSpec{cpu, pods, cpu}},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, CurrentMetrics: []autoscalingv2.MetricStatus{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](45)}}},
		}}}
	want := []interface{}{"web", "Deployment/web", "cpu: 45%/80%, <unknown>/10 + 1 more...", "2", int64(5), int64(3), "60m"}
	if got := cells(t, gr, h); !reflect.DeepEqual(got, want) {
		t.Errorf("cells = %#v, want %#v", got, want)
	}
	h.Spec.Metrics, h.Spec.MinReplicas = nil, nil
	if got := cells(t, gr, h); got[2] != "<none>" || got[3] != "<unset>" {
		t.Errorf("bare HPA cells = %#v", got)
	}
}
