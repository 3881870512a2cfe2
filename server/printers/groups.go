package printers

import (
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	certificatesv1 "k8s.io/api/certificates/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Printers of node.k8s.io, the CSI kinds of storage.k8s.io, the
// certificates.k8s.io trust bundles and pod certificate requests,
// resource.k8s.io, storagemigration.k8s.io and the HorizontalPodAutoscaler:
// upstream's columns and cells.

var runtimeClassPrinter = printer{
	columns: []metav1.TableColumnDefinition{nameColumn(), col("Handler", "string", metav1.ObjectMeta{}.SwaggerDoc()["handler"]), ageColumn()},
	rows: eachObject(func(now time.Time, rc *nodev1.RuntimeClass) []interface{} {
		return []interface{}{rc.Name, rc.Handler, since(now, rc.CreationTimestamp)}
	}),
}

var csiDriverPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("AttachRequired", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["attachRequired"]),
		col("PodInfoOnMount", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["podInfoOnMount"]),
		col("StorageCapacity", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["storageCapacity"]),
		col("TokenRequests", "string", storagev1.CSIDriverSpec{}.SwaggerDoc()["tokenRequests"]),
		col("RequiresRepublish", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["requiresRepublish"]),
		col("Modes", "string", storagev1.CSIDriverSpec{}.SwaggerDoc()["volumeLifecycleModes"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, d *storagev1.CSIDriver) []interface{} {
		boolOr := func(b *bool, def bool) bool {
			if b == nil {
				return def
			}
			return *b
		}
		var modes []string
		for _, m := range d.Spec.VolumeLifecycleModes {
			modes = append(modes, string(m))
		}
		modeList := strings.Join(modes, ",")
		if modeList == "" {
			modeList = none
		}
		tokens := unset
		if d.Spec.TokenRequests != nil {
			var audiences []string
			for _, t := range d.Spec.TokenRequests {
				audiences = append(audiences, t.Audience)
			}
			tokens = strings.Join(audiences, ",")
		}
		return []interface{}{
			d.Name, boolOr(d.Spec.AttachRequired, true), boolOr(d.Spec.PodInfoOnMount, false), boolOr(d.Spec.StorageCapacity, false),
			tokens, boolOr(d.Spec.RequiresRepublish, false), modeList, since(now, d.CreationTimestamp),
		}
	}),
}

var csiNodePrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, n *storagev1.CSINode) []interface{} {
		return []interface{}{n.Name, int64(len(n.Spec.Drivers)), since(now, n.CreationTimestamp)}
	}),
}

var csiStorageCapacityPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("StorageClassName", "string", storagev1.CSIStorageCapacity{}.SwaggerDoc()["storageClassName"]),
		col("Capacity", "string", storagev1.CSIStorageCapacity{}.SwaggerDoc()["capacity"]),
	},
	rows: eachObject(func(_ time.Time, c *storagev1.CSIStorageCapacity) []interface{} {
		capacity := unset
		if c.Capacity != nil {
			capacity = c.Capacity.String()
		}
		return []interface{}{c.Name, c.StorageClassName, capacity}
	}),
}

var volumeAttachmentPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
		col("PV", "string", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]),
		col("Node", "string", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]),
		col("Attached", "boolean", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, va *storagev1.VolumeAttachment) []interface{} {
		pv := ""
		if va.Spec.Source.PersistentVolumeName != nil {
			pv = *va.Spec.Source.PersistentVolumeName
		}
		return []interface{}{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, since(now, va.CreationTimestamp)}
	}),
}

var volumeAttributesClassPrinter = printer{
	columns: []metav1.TableColumnDefinition{nameColumn(), col("DriverName", "string", storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]), ageColumn()},
	rows: eachObject(func(now time.Time, c *storagev1.VolumeAttributesClass) []interface{} {
		return []interface{}{c.Name, c.DriverName, since(now, c.CreationTimestamp)}
	}),
}

var clusterTrustBundlePrinter = printer{
	columns: []metav1.TableColumnDefinition{nameColumn(), col("SignerName", "string", certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"])},
	rows: eachObject(func(_ time.Time, b *certificatesv1.ClusterTrustBundle) []interface{} {
		signer := none
		if b.Spec.SignerName != "" {
			signer = b.Spec.SignerName
		}
		return []interface{}{b.Name, signer}
	}),
}

var podCertificateRequestPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("PodName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["podName"]),
		col("ServiceAccountName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["serviceAccountName"]),
		col("NodeName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["nodeName"]),
		col("SignerName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["signerName"]),
		col("State", "string", "Is the request Pending, Issued, Denied, or Failed?"),
		col("UnverifiedUserAnnotations", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["unverifiedUserAnnotations"]),
	},
	rows: eachObject(func(_ time.Time, r *certificatesv1.PodCertificateRequest) []interface{} {
		state := "Pending"
		for _, c := range r.Status.Conditions {
			switch c.Type {
			case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
				state = c.Type
			}
		}
		return []interface{}{r.Name, r.Spec.PodName, r.Spec.ServiceAccountName, string(r.Spec.NodeName), r.Spec.SignerName, state,
			labels.FormatLabels(r.Spec.UnverifiedUserAnnotations)}
	}),
}

var deviceClassPrinter = printer{
	columns: []metav1.TableColumnDefinition{nameColumn(), ageColumn()},
	rows: eachObject(func(now time.Time, c *resourcev1.DeviceClass) []interface{} {
		return []interface{}{c.Name, since(now, c.CreationTimestamp)}
	}),
}

var resourceClaimPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("State", "string", "A summary of the current state (allocated, pending, reserved, etc.)."),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, c *resourcev1.ResourceClaim) []interface{} {
		var states []string
		if c.DeletionTimestamp != nil {
			states = append(states, "deleted")
		}
		switch {
		case c.Status.Allocation == nil && c.DeletionTimestamp == nil:
			states = append(states, "pending")
		case c.Status.Allocation != nil:
			states = append(states, "allocated")
			if len(c.Status.ReservedFor) > 0 {
				states = append(states, "reserved")
			}
		}
		return []interface{}{c.Name, strings.Join(states, ","), since(now, c.CreationTimestamp)}
	}),
}

var resourceClaimTemplatePrinter = printer{
	columns: []metav1.TableColumnDefinition{nameColumn(), ageColumn()},
	rows: eachObject(func(now time.Time, t *resourcev1.ResourceClaimTemplate) []interface{} {
		return []interface{}{t.Name, since(now, t.CreationTimestamp)}
	}),
}

var resourceSlicePrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Node", "string", resourcev1.ResourceSliceSpec{}.SwaggerDoc()["nodeName"]),
		col("Driver", "string", resourcev1.ResourceSliceSpec{}.SwaggerDoc()["driver"]),
		col("Pool", "string", resourcev1.ResourcePool{}.SwaggerDoc()["name"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, s *resourcev1.ResourceSlice) []interface{} {
		node := ""
		if s.Spec.NodeName != nil {
			node = *s.Spec.NodeName
		}
		return []interface{}{s.Name, node, s.Spec.Driver, s.Spec.Pool.Name, since(now, s.CreationTimestamp)}
	}),
}

var deviceTaintRulePrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Key", "string", resourcev1.DeviceTaint{}.SwaggerDoc()["key"]),
		col("Value", "string", resourcev1.DeviceTaint{}.SwaggerDoc()["value"]),
		col("Effect", "string", resourcev1.DeviceTaint{}.SwaggerDoc()["effect"]),
		col("TimeAdded", "string", resourcev1.DeviceTaint{}.SwaggerDoc()["timeAdded"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, r *resourcev1.DeviceTaintRule) []interface{} {
		added := ""
		if r.Spec.Taint.TimeAdded != nil {
			added = since(now, *r.Spec.Taint.TimeAdded)
		}
		t := r.Spec.Taint
		return []interface{}{r.Name, t.Key, t.Value, string(t.Effect), added, since(now, r.CreationTimestamp)}
	}),
}

var storageVersionMigrationPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Resource", "string", "GroupResource to migrate"),
		col("Status", "string", "Status of the migration"),
	},
	rows: eachObject(func(_ time.Time, m *svmv1.StorageVersionMigration) []interface{} {
		status := "Unknown"
		for _, c := range m.Status.Conditions {
			if c.Status != metav1.ConditionTrue {
				continue
			}
			switch svmv1.MigrationConditionType(c.Type) {
			case svmv1.MigrationRunning, svmv1.MigrationFailed, svmv1.MigrationSucceeded:
				status = c.Type
			}
		}
		gr := m.Spec.Resource.Resource
		if m.Spec.Resource.Group != "" {
			gr += "." + m.Spec.Resource.Group
		}
		return []interface{}{m.Name, gr, status}
	}),
}

var horizontalPodAutoscalerPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Reference", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]),
		col("Targets", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]),
		col("MinPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]),
		col("MaxPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]),
		col("Replicas", "string", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, h *autoscalingv2.HorizontalPodAutoscaler) []interface{} {
		minPods := "<unset>"
		if h.Spec.MinReplicas != nil {
			minPods = fmt.Sprintf("%d", *h.Spec.MinReplicas)
		}
		ref := h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name
		return []interface{}{h.Name, ref, hpaMetrics(h.Spec.Metrics, h.Status.CurrentMetrics), minPods,
			int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), since(now, h.CreationTimestamp)}
	}),
}

// hpaMetrics renders up to two metrics as "current/target", as upstream.
func hpaMetrics(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return none
	}
	status := func(i int) *autoscalingv2.MetricStatus {
		if i < len(statuses) {
			return &statuses[i]
		}
		return nil
	}
	var list []string
	for i, s := range specs {
		st, current := status(i), unknown
		switch s.Type {
		case autoscalingv2.ExternalMetricSourceType:
			if s.External.Target.AverageValue != nil {
				if st != nil && st.External != nil && st.External.Current.AverageValue != nil {
					current = st.External.Current.AverageValue.String()
				}
				list = append(list, fmt.Sprintf("%s/%s (avg)", current, s.External.Target.AverageValue.String()))
			} else {
				if st != nil && st.External != nil {
					current = st.External.Current.Value.String()
				}
				list = append(list, fmt.Sprintf("%s/%s", current, s.External.Target.Value.String()))
			}
		case autoscalingv2.PodsMetricSourceType:
			if st != nil && st.Pods != nil {
				current = st.Pods.Current.AverageValue.String()
			}
			list = append(list, fmt.Sprintf("%s/%s", current, s.Pods.Target.AverageValue.String()))
		case autoscalingv2.ObjectMetricSourceType:
			if s.Object.Target.AverageValue != nil {
				if st != nil && st.Object != nil && st.Object.Current.AverageValue != nil {
					current = st.Object.Current.AverageValue.String()
				}
				list = append(list, fmt.Sprintf("%s/%s (avg)", current, s.Object.Target.AverageValue.String()))
			} else {
				if st != nil && st.Object != nil {
					current = st.Object.Current.Value.String()
				}
				list = append(list, fmt.Sprintf("%s/%s", current, s.Object.Target.Value.String()))
			}
		case autoscalingv2.ResourceMetricSourceType:
			list = append(list, resourceMetric(string(s.Resource.Name), s.Resource.Target, func() *autoscalingv2.MetricValueStatus {
				if st != nil && st.Resource != nil {
					return &st.Resource.Current
				}
				return nil
			}()))
		case autoscalingv2.ContainerResourceMetricSourceType:
			list = append(list, resourceMetric(string(s.ContainerResource.Name), s.ContainerResource.Target, func() *autoscalingv2.MetricValueStatus {
				if st != nil && st.ContainerResource != nil {
					return &st.ContainerResource.Current
				}
				return nil
			}()))
		default:
			list = append(list, "<unknown type>")
		}
	}
	const max = 2
	if len(list) > max {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:max], ", "), len(list)-max)
	}
	return strings.Join(list, ", ")
}

func resourceMetric(name string, target autoscalingv2.MetricTarget, current *autoscalingv2.MetricValueStatus) string {
	cur := unknown
	if target.AverageValue != nil {
		if current != nil {
			cur = current.AverageValue.String()
		}
		return fmt.Sprintf("%s: %s/%s", name, cur, target.AverageValue.String())
	}
	if current != nil && current.AverageUtilization != nil {
		cur = fmt.Sprintf("%d%%", *current.AverageUtilization)
	}
	t := "<auto>"
	if target.AverageUtilization != nil {
		t = fmt.Sprintf("%d%%", *target.AverageUtilization)
	}
	return fmt.Sprintf("%s: %s/%s", name, cur, t)
}
