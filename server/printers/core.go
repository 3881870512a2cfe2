package printers

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	// nodeRoleLabelPrefix marks a node role: node-role.kubernetes.io/<role>.
	nodeRoleLabelPrefix = "node-role.kubernetes.io/"
	// legacyNodeRoleLabel carries a node role as its value.
	legacyNodeRoleLabel = "kubernetes.io/role"
)

var podTemplatePrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Containers", "string", "Container names in the template."),
		col("Images", "string", "Container images in the template."),
		col("Pod Labels", "string", "Labels of the templated pods."),
	},
	rows: eachObject(func(_ time.Time, t *corev1.PodTemplate) []interface{} {
		names, images := containerCells(t.Template.Spec.Containers)
		return []interface{}{t.Name, names, images, labels.FormatLabels(t.Template.Labels)}
	}),
}

var replicationControllerPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Desired", "integer", corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
		col("Current", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
		col("Ready", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
		ageColumn(),
		containersColumn(),
		imagesColumn(),
		wideCol("Selector", "string", corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"]),
	},
	rows: eachObject(func(now time.Time, rc *corev1.ReplicationController) []interface{} {
		var containers []corev1.Container
		if rc.Spec.Template != nil {
			containers = rc.Spec.Template.Spec.Containers
		}
		names, images := containerCells(containers)
		return []interface{}{
			rc.Name, int64(deref32(rc.Spec.Replicas)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
			since(now, rc.CreationTimestamp), names, images, labels.FormatLabels(rc.Spec.Selector),
		}
	}),
}

var nodePrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Status", "string", "Node readiness, and whether scheduling is disabled."),
		col("Roles", "string", "Roles from the node's node-role.kubernetes.io/ labels."),
		ageColumn(),
		col("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
		wideCol("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
		wideCol("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
		wideCol("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]),
		wideCol("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]),
		wideCol("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]),
	},
	rows: eachObject(nodeCells),
}

func nodeCells(now time.Time, node *corev1.Node) []interface{} {
	roles := strings.Join(nodeRoles(node), ",")
	if roles == "" {
		roles = none
	}
	info := node.Status.NodeInfo
	orUnknown := func(s string) string {
		if s == "" {
			return unknown
		}
		return s
	}
	kernel := orUnknown(info.KernelVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	return []interface{}{
		node.Name, nodeStatus(node), roles, since(now, node.CreationTimestamp), info.KubeletVersion,
		nodeAddress(node, corev1.NodeInternalIP), nodeAddress(node, corev1.NodeExternalIP),
		orUnknown(info.OSImage), kernel, orUnknown(info.ContainerRuntimeVersion),
	}
}

// nodeStatus is Ready, NotReady or Unknown (no Ready condition), followed
// by SchedulingDisabled when the node is cordoned.
func nodeStatus(node *corev1.Node) string {
	var parts []string
	var ready *corev1.NodeCondition
	for i := range node.Status.Conditions {
		// The last Ready condition wins, as in upstream's condition map.
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			ready = &node.Status.Conditions[i]
		}
	}
	switch {
	case ready == nil:
		parts = append(parts, "Unknown")
	case ready.Status == corev1.ConditionTrue:
		parts = append(parts, "Ready")
	default:
		parts = append(parts, "NotReady")
	}
	if node.Spec.Unschedulable {
		parts = append(parts, "SchedulingDisabled")
	}
	return strings.Join(parts, ",")
}

// nodeRoles returns the sorted distinct roles from node-role.kubernetes.io/
// label keys and the kubernetes.io/role label value.
func nodeRoles(node *corev1.Node) []string {
	var roles []string
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, nodeRoleLabelPrefix):
			roles = append(roles, strings.TrimPrefix(k, nodeRoleLabelPrefix))
		case k == legacyNodeRoleLabel:
			roles = append(roles, v)
		}
	}
	return sortedUnique(roles)
}

func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return none
}

var namespacePrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Status", "string", "The namespace's phase."),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, ns *corev1.Namespace) []interface{} {
		return []interface{}{ns.Name, string(ns.Status.Phase), since(now, ns.CreationTimestamp)}
	}),
}

var servicePrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
		col("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
		col("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
		col("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
		ageColumn(),
		wideCol("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"]),
	},
	rows: eachObject(func(now time.Time, svc *corev1.Service) []interface{} {
		clusterIP := none
		if len(svc.Spec.ClusterIPs) > 0 {
			clusterIP = svc.Spec.ClusterIPs[0]
		}
		ports := servicePorts(svc.Spec.Ports)
		if ports == "" {
			ports = none
		}
		return []interface{}{
			svc.Name, string(svc.Spec.Type), clusterIP, serviceExternalIP(svc), ports,
			since(now, svc.CreationTimestamp), labels.FormatLabels(svc.Spec.Selector),
		}
	}),
}

// servicePorts renders ports as port/protocol, or port:nodePort/protocol.
func servicePorts(ports []corev1.ServicePort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		if p.NodePort > 0 {
			parts[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			parts[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	return strings.Join(parts, ",")
}

// loadBalancerAddresses lists the IP (else hostname) of each ingress point,
// sorted and distinct. Server-side printing is always wide, so the list is
// never clipped.
func loadBalancerAddresses(ips, hostnames []string) []string {
	var out []string
	for i := range ips {
		if ips[i] != "" {
			out = append(out, ips[i])
		} else if hostnames[i] != "" {
			out = append(out, hostnames[i])
		}
	}
	return sortedUnique(out)
}

func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return none
	case corev1.ServiceTypeLoadBalancer:
		ing := svc.Status.LoadBalancer.Ingress
		ips, hosts := make([]string, len(ing)), make([]string, len(ing))
		for i := range ing {
			ips[i], hosts[i] = ing[i].IP, ing[i].Hostname
		}
		all := append(loadBalancerAddresses(ips, hosts), svc.Spec.ExternalIPs...)
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return unknown
}

var endpointsPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]), //nolint:staticcheck // Endpoints is still served.
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, ep *corev1.Endpoints) []interface{} { //nolint:staticcheck // Endpoints is still served.
		return []interface{}{ep.Name, formatEndpoints(ep), since(now, ep.CreationTimestamp)}
	}),
}

// formatEndpoints lists up to three ip:port pairs (bare IPs for subsets
// without ports) and counts the rest.
func formatEndpoints(ep *corev1.Endpoints) string { //nolint:staticcheck // Endpoints is still served.
	if len(ep.Subsets) == 0 {
		return none
	}
	const limit = 3
	var list []string
	total := 0
	add := func(s string) {
		total++
		if len(list) < limit {
			list = append(list, s)
		}
	}
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	joined := strings.Join(list, ",")
	if total > limit {
		return fmt.Sprintf("%s + %d more...", joined, total-limit)
	}
	return joined
}

var configMapPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, cm *corev1.ConfigMap) []interface{} {
		return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), since(now, cm.CreationTimestamp)}
	}),
}

var secretPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
		col("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, s *corev1.Secret) []interface{} {
		return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), since(now, s.CreationTimestamp)}
	}),
}

// serviceAccountPrinter follows upstream 1.37: no SECRETS column any more.
var serviceAccountPrinter = printer{
	columns: []metav1.TableColumnDefinition{nameColumn(), ageColumn()},
	rows: eachObject(func(now time.Time, sa *corev1.ServiceAccount) []interface{} {
		return []interface{}{sa.Name, since(now, sa.CreationTimestamp)}
	}),
}

func eventColumns() []metav1.TableColumnDefinition {
	doc := corev1.Event{}.SwaggerDoc()
	name := nameColumn()
	name.Priority = 1
	return []metav1.TableColumnDefinition{
		col("Last Seen", "string", doc["lastTimestamp"]),
		col("Type", "string", doc["type"]),
		col("Reason", "string", doc["reason"]),
		col("Object", "string", doc["involvedObject"]),
		wideCol("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
		wideCol("Source", "string", doc["source"]),
		col("Message", "string", doc["message"]),
		wideCol("First Seen", "string", doc["firstTimestamp"]),
		wideCol("Count", "string", doc["count"]),
		name,
	}
}

// eventView is the part of an event the table shows, common to core/v1 and
// events.k8s.io/v1 events (upstream prints both through the internal type).
type eventView struct {
	name, eventType, reason, message string
	regarding                        corev1.ObjectReference
	source                           corev1.EventSource
	reportingController              string
	reportingInstance                string
	firstTimestamp, lastTimestamp    metav1.Time
	eventTime                        metav1.MicroTime
	count                            int32
	seriesCount                      int32
	seriesLastObserved               *metav1.MicroTime
}

func eventCells(now time.Time, e eventView) []interface{} {
	first := since(now, e.firstTimestamp)
	if e.firstTimestamp.IsZero() {
		first = sinceMicro(now, e.eventTime)
	}
	last := since(now, e.lastTimestamp)
	if e.lastTimestamp.IsZero() {
		last = first
	}
	count := e.count
	if e.seriesLastObserved != nil {
		last = sinceMicro(now, *e.seriesLastObserved)
		count = e.seriesCount
	} else if count == 0 {
		count = 1 // events.k8s.io singletons carry no count
	}
	target := strings.ToLower(e.regarding.Kind)
	if e.regarding.Name != "" {
		target += "/" + e.regarding.Name
	}
	component := e.source.Component
	if component == "" {
		component = e.reportingController
	}
	instance := e.source.Host
	if instance == "" {
		instance = e.reportingInstance
	}
	source := component
	if instance != "" {
		source += ", " + instance
	}
	return []interface{}{
		last, e.eventType, e.reason, target, e.regarding.FieldPath, source,
		strings.TrimSpace(e.message), first, int64(count), e.name,
	}
}

// eventPrinter serves both core/v1 and events.k8s.io/v1 events, whichever
// type the storage behind either resource holds.
var eventPrinter = printer{
	columns: eventColumns(),
	rows: func(now time.Time, objs []runtime.Object, _ bool) ([]metav1.TableRow, error) {
		rows := make([]metav1.TableRow, 0, len(objs))
		for _, o := range objs {
			var v eventView
			switch e := o.(type) {
			case *corev1.Event:
				v = coreEventView(e)
			case *eventsv1.Event:
				v = eventsV1EventView(e)
			default:
				return nil, fmt.Errorf("no table printer for %T, want *v1.Event", o)
			}
			rows = append(rows, metav1.TableRow{Cells: eventCells(now, v), Object: runtime.RawExtension{Object: o}})
		}
		return rows, nil
	},
}

func coreEventView(e *corev1.Event) eventView {
	v := eventView{
		name: e.Name, eventType: e.Type, reason: e.Reason, message: e.Message,
		regarding: e.InvolvedObject, source: e.Source,
		reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
		firstTimestamp: e.FirstTimestamp, lastTimestamp: e.LastTimestamp, eventTime: e.EventTime,
		count: e.Count,
	}
	if e.Series != nil {
		v.seriesCount = e.Series.Count
		v.seriesLastObserved = &e.Series.LastObservedTime
	}
	return v
}

// eventsV1EventView maps fields the way upstream's events.k8s.io/v1 to
// core conversion does (note to message, deprecated* to their old names).
func eventsV1EventView(e *eventsv1.Event) eventView {
	v := eventView{
		name: e.Name, eventType: e.Type, reason: e.Reason, message: e.Note,
		regarding: e.Regarding, source: e.DeprecatedSource,
		reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
		firstTimestamp: e.DeprecatedFirstTimestamp, lastTimestamp: e.DeprecatedLastTimestamp, eventTime: e.EventTime,
		count: e.DeprecatedCount,
	}
	if e.Series != nil {
		v.seriesCount = e.Series.Count
		v.seriesLastObserved = &e.Series.LastObservedTime
	}
	return v
}

var persistentVolumePrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Capacity", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]),
		col("Access Modes", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]),
		col("Reclaim Policy", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]),
		col("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
		col("Claim", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]),
		col("StorageClass", "string", "Storage class of the volume."),
		col("VolumeAttributesClass", "string", "Volume attributes class of the volume."),
		col("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
		ageColumn(),
		wideCol("VolumeMode", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"]),
	},
	rows: eachObject(func(now time.Time, pv *corev1.PersistentVolume) []interface{} {
		claim := ""
		if pv.Spec.ClaimRef != nil {
			claim = pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name
		}
		capacity := pv.Spec.Capacity[corev1.ResourceStorage]
		phase := string(pv.Status.Phase)
		if pv.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		class, ok := pv.Annotations[corev1.BetaStorageClassAnnotation]
		if !ok {
			class = pv.Spec.StorageClassName
		}
		return []interface{}{
			pv.Name, capacity.String(), accessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
			phase, claim, class, stringPtrOr(pv.Spec.VolumeAttributesClassName, unset),
			pv.Status.Reason, since(now, pv.CreationTimestamp), volumeModeString(pv.Spec.VolumeMode),
		}
	}),
}

var persistentVolumeClaimPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
		col("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]),
		col("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
		col("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
		col("StorageClass", "string", "Storage class of the claim."),
		col("VolumeAttributesClass", "string", "Volume attributes class of the claim."),
		ageColumn(),
		wideCol("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]),
	},
	rows: eachObject(func(now time.Time, pvc *corev1.PersistentVolumeClaim) []interface{} {
		phase := string(pvc.Status.Phase)
		if pvc.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		// Capacity and modes describe the bound volume, so only once bound.
		capacity, modes := "", ""
		if pvc.Spec.VolumeName != "" {
			q := pvc.Status.Capacity[corev1.ResourceStorage]
			capacity, modes = q.String(), accessModes(pvc.Status.AccessModes)
		}
		class, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]
		if !ok {
			class = stringPtrOr(pvc.Spec.StorageClassName, "")
		}
		return []interface{}{
			pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class,
			stringPtrOr(pvc.Spec.VolumeAttributesClassName, unset), since(now, pvc.CreationTimestamp),
			volumeModeString(pvc.Spec.VolumeMode),
		}
	}),
}

func stringPtrOr(p *string, fallback string) string {
	if p == nil {
		return fallback
	}
	return *p
}

func volumeModeString(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return unset
	}
	return string(*m)
}

var resourceQuotaPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Request", "string", "Used and hard amounts of each quota resource other than limits.*."),
		col("Limit", "string", "Used and hard amounts of each limits.* quota resource."),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, q *corev1.ResourceQuota) []interface{} {
		names := make([]string, 0, len(q.Status.Hard))
		for n := range q.Status.Hard {
			names = append(names, string(n))
		}
		sort.Strings(names)
		var requests, limits []string
		for _, n := range names {
			used := q.Status.Used[corev1.ResourceName(n)]
			hard := q.Status.Hard[corev1.ResourceName(n)]
			entry := fmt.Sprintf("%s: %s/%s", n, used.String(), hard.String())
			if strings.HasPrefix(n, "limits.") {
				limits = append(limits, entry)
			} else {
				requests = append(requests, entry)
			}
		}
		return []interface{}{q.Name, strings.Join(requests, ", "), strings.Join(limits, ", "), since(now, q.CreationTimestamp)}
	}),
}
