package printers

import (
	"reflect"
	"testing"
	"time"

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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestJobCells(t *testing.T) {
	cond := func(tp batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: tp, Status: corev1.ConditionTrue}
	}
	tests := []struct {
		name            string
		job             batchv1.Job
		wantStatus      string
		wantCompletions string
		wantDuration    string
	}{
		{
			name:       "running with completions",
			job:        batchv1.Job{Spec: batchv1.JobSpec{Completions: ptr.To[int32](5)}, Status: batchv1.JobStatus{Succeeded: 2, StartTime: ptr.To(ago(3 * time.Minute))}},
			wantStatus: "Running", wantCompletions: "2/5", wantDuration: "3m",
		},
		{
			name:       "work queue with parallelism",
			job:        batchv1.Job{Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](3)}},
			wantStatus: "Running", wantCompletions: "0/1 of 3", wantDuration: "",
		},
		{
			name: "complete",
			job: batchv1.Job{Spec: batchv1.JobSpec{Completions: ptr.To[int32](1), Parallelism: ptr.To[int32](1)}, Status: batchv1.JobStatus{
				Succeeded: 1, StartTime: ptr.To(ago(time.Hour)), CompletionTime: ptr.To(ago(time.Hour - 45*time.Second)),
				Conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)},
			}},
			wantStatus: "Complete", wantCompletions: "1/1", wantDuration: "45s",
		},
		{
			name:       "failed outranks deletion",
			job:        batchv1.Job{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(ago(0))}, Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobFailed)}}},
			wantStatus: "Failed", wantCompletions: "0/1",
		},
		{
			name:       "deletion outranks suspension",
			job:        batchv1.Job{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(ago(0))}, Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended)}}},
			wantStatus: "Terminating", wantCompletions: "0/1",
		},
		{
			name:       "suspended",
			job:        batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended)}}},
			wantStatus: "Suspended", wantCompletions: "0/1",
		},
		{
			name:       "failure target",
			job:        batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget)}}},
			wantStatus: "FailureTarget", wantCompletions: "0/1",
		},
		{
			name: "false condition is ignored",
			job: batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobComplete, Status: corev1.ConditionFalse}, cond(batchv1.JobSuccessCriteriaMet),
			}}},
			wantStatus: "SuccessCriteriaMet", wantCompletions: "0/1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := tt.job.DeepCopy()
			job.Name = "j"
			job.CreationTimestamp = ago(2 * time.Hour)
			job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u1"}}
			job.Spec.Template.Spec.Containers = []corev1.Container{{Name: "pi", Image: "perl"}}
			got := cells(t, schema.GroupResource{Group: "batch", Resource: "jobs"}, job)
			want := []interface{}{"j", tt.wantStatus, tt.wantCompletions, tt.wantDuration, "120m", "pi", "perl", "batch.kubernetes.io/controller-uid=u1"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("cells = %#v, want %#v", got, want)
			}
		})
	}
}

func TestCronJobCells(t *testing.T) {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", CreationTimestamp: ago(72 * time.Hour)},
		Spec:       batchv1.CronJobSpec{Schedule: "0 3 * * *", Suspend: ptr.To(false)},
		Status:     batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "a"}}, LastScheduleTime: ptr.To(ago(9 * time.Hour))},
	}
	want := []interface{}{"nightly", "0 3 * * *", "<none>", "False", int64(1), "9h", "3d", "", "", "<none>"}
	if got := cells(t, schema.GroupResource{Group: "batch", Resource: "cronjobs"}, cj); !reflect.DeepEqual(got, want) {
		t.Errorf("cells = %#v, want %#v", got, want)
	}
	cj.Spec.TimeZone, cj.Spec.Suspend, cj.Status = ptr.To("Europe/Berlin"), nil, batchv1.CronJobStatus{}
	got := cells(t, schema.GroupResource{Group: "batch", Resource: "cronjobs"}, cj)
	if got[2] != "Europe/Berlin" || got[3] != "<unset>" || got[5] != "<none>" {
		t.Errorf("TIMEZONE SUSPEND LAST SCHEDULE = %v %v %v, want Europe/Berlin <unset> <none>", got[2], got[3], got[5])
	}
}

func TestCoreEventCells(t *testing.T) {
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.17a"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", FieldPath: "spec.containers{nginx}"},
		Type:           corev1.EventTypeWarning, Reason: "BackOff", Message: "  Back-off restarting failed container\n",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: ago(10 * time.Minute), LastTimestamp: ago(30 * time.Second), Count: 12,
	}
	want := []interface{}{"30s", "Warning", "BackOff", "pod/web", "spec.containers{nginx}", "kubelet, node-1",
		"Back-off restarting failed container", "10m", int64(12), "web.17a"}
	table := convert(t, schema.GroupResource{Resource: "events"}, ev, nil)
	if got := table.Rows[0].Cells; !reflect.DeepEqual(got, want) {
		t.Errorf("cells = %#v, want %#v", got, want)
	}
	wantCols := []columnSpec{{"Last Seen", 0}, {"Type", 0}, {"Reason", 0}, {"Object", 0}, {"Subobject", 1}, {"Source", 1},
		{"Message", 0}, {"First Seen", 1}, {"Count", 1}, {"Name", 1}}
	if got := columnsOf(table); !reflect.DeepEqual(got, wantCols) {
		t.Errorf("columns = %v, want %v", got, wantCols)
	}
}

func TestEventsV1EventCells(t *testing.T) {
	tests := []struct {
		name string
		ev   eventsv1.Event
		want []interface{}
	}{
		{
			name: "singleton from the new API",
			ev: eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "e1"}, EventTime: metav1.NewMicroTime(now.Add(-2 * time.Minute)),
				Regarding: corev1.ObjectReference{Kind: "Node"}, Type: "Normal", Reason: "Starting", Note: "Starting k1s",
				ReportingController: "k1s.io/agent", ReportingInstance: "node-1",
			},
			want: []interface{}{"2m", "Normal", "Starting", "node", "", "k1s.io/agent, node-1", "Starting k1s", "2m", int64(1), "e1"},
		},
		{
			name: "series",
			ev: eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "e2"}, EventTime: metav1.NewMicroTime(now.Add(-time.Hour)),
				Regarding: corev1.ObjectReference{Kind: "Pod", Name: "db"}, Type: "Warning", Reason: "Unhealthy", Note: "probe failed",
				ReportingController: "kubelet",
				Series:              &eventsv1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(now.Add(-5 * time.Second))},
			},
			want: []interface{}{"5s", "Warning", "Unhealthy", "pod/db", "", "kubelet", "probe failed", "60m", int64(7), "e2"},
		},
		{
			name: "deprecated fields take precedence",
			ev: eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "e3"}, Regarding: corev1.ObjectReference{Kind: "Pod", Name: "x"},
				DeprecatedSource:         corev1.EventSource{Component: "old"},
				DeprecatedFirstTimestamp: ago(4 * time.Minute), DeprecatedCount: 3,
				ReportingController: "new", ReportingInstance: "inst",
			},
			want: []interface{}{"4m", "", "", "pod/x", "", "old, inst", "", "4m", int64(3), "e3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cells(t, schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, &tt.ev)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells = %#v, want %#v", got, tt.want)
			}
			// The core resource prints the same for an events.k8s.io object.
			if got := cells(t, schema.GroupResource{Resource: "events"}, &tt.ev); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("core events resource cells = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestStorageClassDefaultMarker(t *testing.T) {
	defaultAnn := map[string]string{defaultStorageClassAnnotation: "true"}
	list := &storagev1.StorageClassList{Items: []storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "old-default", Annotations: defaultAnn, CreationTimestamp: ago(48 * time.Hour)}, Provisioner: "p"},
		{ObjectMeta: metav1.ObjectMeta{Name: "local-path", Annotations: map[string]string{betaDefaultStorageClassAnnotation: "true"}, CreationTimestamp: ago(time.Hour)},
			Provisioner: "rancher.io/local-path", ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain),
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer), AllowVolumeExpansion: ptr.To(true)},
		{ObjectMeta: metav1.ObjectMeta{Name: "plain", CreationTimestamp: ago(time.Minute)}, Provisioner: "p"},
	}}
	gr := schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}
	table := convert(t, gr, list, nil)
	want := [][]interface{}{
		{"old-default", "p", "Delete", "Immediate", false, "2d"},
		{"local-path (default)", "rancher.io/local-path", "Retain", "WaitForFirstConsumer", true, "60m"},
		{"plain", "p", "Delete", "Immediate", false, "60s"},
	}
	for i, row := range table.Rows {
		if !reflect.DeepEqual(row.Cells, want[i]) {
			t.Errorf("row %d = %#v, want %#v", i, row.Cells, want[i])
		}
	}
	// A single object is printed without deciding the effective default.
	if got := cells(t, gr, &list.Items[1])[0]; got != "local-path" {
		t.Errorf("single object name cell = %q, want local-path", got)
	}
}

func TestCSRCells(t *testing.T) {
	tests := []struct {
		name          string
		status        certificatesv1.CertificateSigningRequestStatus
		wantCondition string
	}{
		{"pending", certificatesv1.CertificateSigningRequestStatus{}, "Pending"},
		{"approved and issued", certificatesv1.CertificateSigningRequestStatus{
			Conditions:  []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved}},
			Certificate: []byte("cert"),
		}, "Approved,Issued"},
		{"denied wins over approved", certificatesv1.CertificateSigningRequestStatus{
			Conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved}, {Type: certificatesv1.CertificateDenied}},
		}, "Denied"},
		{"approved then failed", certificatesv1.CertificateSigningRequestStatus{
			Conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved}, {Type: certificatesv1.CertificateFailed}},
		}, "Approved,Failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "node-csr-1", CreationTimestamp: ago(time.Minute)},
				Spec: certificatesv1.CertificateSigningRequestSpec{
					SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Username: "system:bootstrap:abcdef",
					ExpirationSeconds: ptr.To[int32](86400),
				},
				Status: tt.status,
			}
			want := []interface{}{"node-csr-1", "60s", "kubernetes.io/kube-apiserver-client-kubelet", "system:bootstrap:abcdef", "24h", tt.wantCondition}
			if got := cells(t, schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, csr); !reflect.DeepEqual(got, want) {
				t.Errorf("cells = %#v, want %#v", got, want)
			}
		})
	}
}

func TestControllerRevisionController(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "fluentd-5d4f", CreationTimestamp: ago(time.Hour), OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Pod", Name: "not-controller"},
			{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "fluentd", Controller: ptr.To(true)},
		}},
		Revision: 3,
	}
	if got, want := cells(t, gr, cr), []interface{}{"fluentd-5d4f", "daemonset.apps/fluentd", int64(3), "60m"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cells = %#v, want %#v", got, want)
	}
	cr.OwnerReferences = nil
	if got := cells(t, gr, cr)[1]; got != "<none>" {
		t.Errorf("controller without owner = %q, want <none>", got)
	}
	cr.OwnerReferences = []metav1.OwnerReference{{APIVersion: "a/b/c", Kind: "X", Name: "y", Controller: ptr.To(true)}}
	c := TableConvertorFor(gr)
	if _, err := c.ConvertToTable(t.Context(), cr, nil); err == nil {
		t.Error("malformed controller apiVersion: want an error")
	}
}

func TestIngressCells(t *testing.T) {
	rules := func(hosts ...string) []networkingv1.IngressRule {
		var r []networkingv1.IngressRule
		for _, h := range hosts {
			r = append(r, networkingv1.IngressRule{Host: h})
		}
		return r
	}
	tests := []struct {
		name      string
		spec      networkingv1.IngressSpec
		wantClass string
		wantHosts string
		wantPorts string
	}{
		{"no rules", networkingv1.IngressSpec{}, "<none>", "*", "80"},
		{"only empty hosts", networkingv1.IngressSpec{Rules: rules("", "")}, "<none>", "*", "80"},
		{"three hosts", networkingv1.IngressSpec{IngressClassName: ptr.To("traefik"), Rules: rules("a", "b", "c")}, "traefik", "a,b,c", "80"},
		{"more than three", networkingv1.IngressSpec{Rules: rules("a", "b", "c", "d", "e"), TLS: []networkingv1.IngressTLS{{}}}, "<none>", "a,b,c + 2 more...", "80, 443"},
		{"empty hosts skipped before the limit", networkingv1.IngressSpec{Rules: rules("", "a", "b", "c")}, "<none>", "a,b,c", "80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "i", CreationTimestamp: ago(time.Minute)}, Spec: tt.spec,
				Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{
					{IP: "192.0.2.5"}, {Hostname: "lb.example"},
				}}}}
			want := []interface{}{"i", tt.wantClass, tt.wantHosts, "192.0.2.5,lb.example", tt.wantPorts, "60s"}
			if got := cells(t, schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, ing); !reflect.DeepEqual(got, want) {
				t.Errorf("cells = %#v, want %#v", got, want)
			}
		})
	}
}

func TestIngressClassCells(t *testing.T) {
	ic := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "traefik", Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
		Spec: networkingv1.IngressClassSpec{Controller: "traefik.io/ingress-controller", Parameters: &networkingv1.IngressClassParametersReference{
			APIGroup: ptr.To("k8s.example.com"), Kind: "IngressParameters", Name: "external-lb",
		}},
	}
	want := []interface{}{"traefik (default)", "traefik.io/ingress-controller", "IngressParameters.k8s.example.com/external-lb", "<unknown>"}
	if got := cells(t, schema.GroupResource{Group: "networking.k8s.io", Resource: "ingressclasses"}, ic); !reflect.DeepEqual(got, want) {
		t.Errorf("cells = %#v, want %#v", got, want)
	}
}

func TestEndpointsAndSlices(t *testing.T) {
	ep := &corev1.Endpoints{ //nolint:staticcheck // Endpoints is still served.
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Subsets: []corev1.EndpointSubset{ //nolint:staticcheck // Endpoints is still served.
			{Addresses: []corev1.EndpointAddress{{IP: "10.42.0.1"}, {IP: "10.42.0.2"}}, Ports: []corev1.EndpointPort{{Port: 80}, {Port: 443}}}, //nolint:staticcheck // Endpoints is still served.
			{Addresses: []corev1.EndpointAddress{{IP: "fd00::3"}}},                                                                             //nolint:staticcheck // Endpoints is still served.
		},
	}
	if got := cells(t, schema.GroupResource{Resource: "endpoints"}, ep)[1]; got != "10.42.0.1:80,10.42.0.2:80,10.42.0.1:443 + 2 more..." {
		t.Errorf("endpoints = %q", got)
	}
	ep.Subsets = ep.Subsets[1:]
	if got := cells(t, schema.GroupResource{Resource: "endpoints"}, ep)[1]; got != "fd00::3" {
		t.Errorf("endpoints without ports = %q, want fd00::3", got)
	}
	ep.Subsets = nil
	if got := cells(t, schema.GroupResource{Resource: "endpoints"}, ep)[1]; got != "<none>" {
		t.Errorf("endpoints without subsets = %q, want <none>", got)
	}

	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}, {Name: ptr.To("metrics")}, {}, {Port: ptr.To[int32](9)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.42.0.1", "10.42.0.2"}}, {Addresses: []string{"10.42.0.3"}}},
	}
	gr := schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}
	if got, want := cells(t, gr, slice), []interface{}{"web-abc", "IPv4", "80,metrics,* + 1 more...", "10.42.0.1,10.42.0.2,10.42.0.3", "<unknown>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cells = %#v, want %#v", got, want)
	}
	slice.Ports, slice.Endpoints = nil, nil
	if got := cells(t, gr, slice); got[2] != "<unset>" || got[3] != "<unset>" {
		t.Errorf("empty slice PORTS ENDPOINTS = %v %v, want <unset> <unset>", got[2], got[3])
	}
}

func TestVolumeCells(t *testing.T) {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv1", Annotations: map[string]string{corev1.BetaStorageClassAnnotation: "beta-class"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: "default", Name: "data"},
			StorageClassName:              "ignored-for-annotation",
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	want := []interface{}{"pv1", "10Gi", "RWO,RWX", "Retain", "Bound", "default/data", "beta-class", "<unset>", "", "<unknown>", "Filesystem"}
	if got := cells(t, schema.GroupResource{Resource: "persistentvolumes"}, pv); !reflect.DeepEqual(got, want) {
		t.Errorf("pv cells = %#v, want %#v", got, want)
	}

	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", DeletionTimestamp: ptr.To(ago(0))},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("local-path"),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	gr := schema.GroupResource{Resource: "persistentvolumeclaims"}
	want = []interface{}{"data", "Terminating", "", "", "", "local-path", "<unset>", "<unknown>", "<unset>"}
	if got := cells(t, gr, pvc); !reflect.DeepEqual(got, want) {
		t.Errorf("unbound pvc cells = %#v, want %#v", got, want)
	}
	pvc.DeletionTimestamp = nil
	pvc.Spec.VolumeName = "pv1"
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}
	want = []interface{}{"data", "Bound", "pv1", "2Gi", "RWOP", "local-path", "<unset>", "<unknown>", "<unset>"}
	if got := cells(t, gr, pvc); !reflect.DeepEqual(got, want) {
		t.Errorf("bound pvc cells = %#v, want %#v", got, want)
	}
}

func TestResourceQuotaCells(t *testing.T) {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"pods": resource.MustParse("10"), "requests.cpu": resource.MustParse("2"), "limits.memory": resource.MustParse("4Gi"), "limits.cpu": resource.MustParse("4")},
			Used: corev1.ResourceList{"pods": resource.MustParse("3"), "requests.cpu": resource.MustParse("500m")},
		},
	}
	want := []interface{}{"compute", "pods: 3/10, requests.cpu: 500m/2", "limits.cpu: 0/4, limits.memory: 0/4Gi", "<unknown>"}
	if got := cells(t, schema.GroupResource{Resource: "resourcequotas"}, q); !reflect.DeepEqual(got, want) {
		t.Errorf("cells = %#v, want %#v", got, want)
	}
}

func TestSmallResources(t *testing.T) {
	check := func(t *testing.T, gr schema.GroupResource, obj runtime.Object, want []interface{}) {
		t.Helper()
		if got := cells(t, gr, obj); !reflect.DeepEqual(got, want) {
			t.Errorf("%s cells = %#v, want %#v", gr, got, want)
		}
	}
	meta := metav1.ObjectMeta{Name: "x", CreationTimestamp: ago(5 * time.Second)}

	check(t, schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"},
		&policyv1.PodDisruptionBudget{ObjectMeta: meta, Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromString("50%"))},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 2}},
		[]interface{}{"x", "50%", "N/A", int64(2), "5s"})
	check(t, schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"},
		&schedulingv1.PriorityClass{ObjectMeta: meta, Value: 1000, GlobalDefault: true, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
		[]interface{}{"x", int64(1000), true, "5s", "Never"})
	check(t, schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
		&rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, Name: "alice"}, {Kind: rbacv1.UserKind, Name: "bob"}, {Kind: rbacv1.GroupKind, Name: "devs"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "runner"}, {Kind: "Other", Name: "ignored"},
		}},
		[]interface{}{"x", "ClusterRole/view", "5s", "alice, bob", "devs", "ci/runner"})
	check(t, schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"}},
		[]interface{}{"x", "ClusterRole/cluster-admin", "5s", "", "", ""})
	check(t, schema.GroupResource{Resource: "namespaces"},
		&corev1.Namespace{ObjectMeta: meta, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
		[]interface{}{"x", "Terminating", "5s"})
	check(t, schema.GroupResource{Resource: "podtemplates"},
		&corev1.PodTemplate{ObjectMeta: meta, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"b": "2", "a": "1"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c1", Image: "i1"}, {Name: "c2", Image: "i2"}}}}},
		[]interface{}{"x", "c1,c2", "i1,i2", "a=1,b=2"})
	check(t, schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"},
		&coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-1")}},
		[]interface{}{"x", "node-1", "5s"})
	check(t, schema.GroupResource{Group: "networking.k8s.io", Resource: "networkpolicies"},
		&networkingv1.NetworkPolicy{ObjectMeta: meta},
		[]interface{}{"x", "<none>", "5s"})
	check(t, schema.GroupResource{Group: "apps", Resource: "statefulsets"},
		&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}, Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}},
		[]interface{}{"x", "1/3", "5s", "", ""})
	check(t, schema.GroupResource{Group: "apps", Resource: "replicasets"},
		&appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)}, Status: appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1}},
		[]interface{}{"x", int64(2), int64(2), int64(1), "5s", "", "", "<none>"})
	check(t, schema.GroupResource{Group: "apps", Resource: "daemonsets"},
		&appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}}}},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 1, NumberAvailable: 2}},
		[]interface{}{"x", int64(3), int64(3), int64(2), int64(1), int64(2), "kubernetes.io/os=linux", "5s", "", "", "app=agent"})
}
