package printers

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func convert(t *testing.T, gr schema.GroupResource, obj runtime.Object, opts runtime.Object) *metav1.Table {
	t.Helper()
	c := TableConvertorFor(gr, WithClock(clocktesting.NewFakePassiveClock(now)))
	table, err := c.ConvertToTable(context.Background(), obj, opts)
	if err != nil {
		t.Fatalf("ConvertToTable(%s): %v", gr, err)
	}
	return table
}

// cells converts a single object and returns its only row's cells.
func cells(t *testing.T, gr schema.GroupResource, obj runtime.Object) []interface{} {
	t.Helper()
	table := convert(t, gr, obj, nil)
	if len(table.Rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(table.Rows))
	}
	if len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
		t.Fatalf("row has %d cells for %d columns", len(table.Rows[0].Cells), len(table.ColumnDefinitions))
	}
	return table.Rows[0].Cells
}

// columnSpec is a column's name and priority, what kubectl shows and hides.
type columnSpec struct {
	name     string
	priority int32
}

func columnsOf(table *metav1.Table) []columnSpec {
	var out []columnSpec
	for _, c := range table.ColumnDefinitions {
		out = append(out, columnSpec{c.Name, c.Priority})
	}
	return out
}

func TestPodStatus(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	terminated := func(reason string, code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}
	}
	twoContainers := []corev1.Container{{Name: "a"}, {Name: "b"}}
	oneContainer := []corev1.Container{{Name: "a"}}
	oneInit := []corev1.Container{{Name: "init"}}

	tests := []struct {
		name         string
		pod          corev1.Pod
		wantReady    string
		wantStatus   string
		wantRestarts string
	}{
		{
			name:      "pending without statuses",
			pod:       corev1.Pod{Spec: corev1.PodSpec{Containers: oneContainer}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
			wantReady: "0/1", wantStatus: "Pending", wantRestarts: "0",
		},
		{
			name: "container creating",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: oneContainer}, Status: corev1.PodStatus{
				Phase:             corev1.PodPending,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: waiting("ContainerCreating")}},
			}},
			wantReady: "0/1", wantStatus: "ContainerCreating", wantRestarts: "0",
		},
		{
			name: "running one of two ready",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: twoContainers}, Status: corev1.PodStatus{
				Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", Ready: true, State: running},
					{Name: "b", Ready: false, State: running},
				},
			}},
			wantReady: "1/2", wantStatus: "Running", wantRestarts: "0",
		},
		{
			name: "crash loop back-off with recent restart",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: oneContainer}, Status: corev1.PodStatus{
				Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{{
					Name: "a", RestartCount: 4, State: waiting("CrashLoopBackOff"),
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
						ExitCode: 1, Reason: "Error", FinishedAt: ago(5 * time.Minute),
					}},
				}},
			}},
			wantReady: "0/1", wantStatus: "CrashLoopBackOff", wantRestarts: "4 (5m ago)",
		},
		{
			name: "first init container running",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: oneInit, Containers: oneContainer}, Status: corev1.PodStatus{
				Phase:                 corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: running}},
				ContainerStatuses:     []corev1.ContainerStatus{{Name: "a", State: waiting("PodInitializing")}},
			}},
			wantReady: "0/1", wantStatus: "Init:0/1", wantRestarts: "0",
		},
		{
			name: "init container failed",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: oneInit, Containers: oneContainer}, Status: corev1.PodStatus{
				Phase:                 corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", RestartCount: 2, State: terminated("Error", 1)}},
			}},
			wantReady: "0/1", wantStatus: "Init:Error", wantRestarts: "2",
		},
		{
			name: "init container killed by signal without reason",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: oneInit, Containers: oneContainer}, Status: corev1.PodStatus{
				Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{
					Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Signal: 9},
				}}},
			}},
			wantReady: "0/1", wantStatus: "Init:Signal:9", wantRestarts: "0",
		},
		{
			name: "init container crash looping",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: oneInit, Containers: oneContainer}, Status: corev1.PodStatus{
				Phase:                 corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: waiting("CrashLoopBackOff")}},
			}},
			wantReady: "0/1", wantStatus: "Init:CrashLoopBackOff", wantRestarts: "0",
		},
		{
			name: "completed",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: oneContainer}, Status: corev1.PodStatus{
				Phase:             corev1.PodSucceeded,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: terminated("Completed", 0)}},
			}},
			wantReady: "0/1", wantStatus: "Completed", wantRestarts: "0",
		},
		{
			name: "error",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: oneContainer}, Status: corev1.PodStatus{
				Phase:             corev1.PodFailed,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: terminated("Error", 2)}},
			}},
			wantReady: "0/1", wantStatus: "Error", wantRestarts: "0",
		},
		{
			name: "exit code without reason",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: oneContainer}, Status: corev1.PodStatus{
				Phase:             corev1.PodFailed,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: terminated("", 3)}},
			}},
			wantReady: "0/1", wantStatus: "ExitCode:3", wantRestarts: "0",
		},
		{
			name: "completed container beside a ready running one in a ready pod",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: twoContainers}, Status: corev1.PodStatus{
				Phase:      corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", State: terminated("Completed", 0)},
					{Name: "b", Ready: true, State: running},
				},
			}},
			wantReady: "1/2", wantStatus: "Running", wantRestarts: "0",
		},
		{
			name: "completed container beside a running one in an unready pod",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: twoContainers}, Status: corev1.PodStatus{
				Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", State: terminated("Completed", 0)},
					{Name: "b", Ready: true, State: running},
				},
			}},
			wantReady: "1/2", wantStatus: "NotReady", wantRestarts: "0",
		},
		{
			name: "terminating",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(ago(time.Second))},
				Spec:       corev1.PodSpec{Containers: oneContainer},
				Status: corev1.PodStatus{Phase: corev1.PodRunning,
					ContainerStatuses: []corev1.ContainerStatus{{Name: "a", Ready: true, State: running}}},
			},
			wantReady: "1/1", wantStatus: "Terminating", wantRestarts: "0",
		},
		{
			name: "deleted pod that already succeeded keeps its status",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(ago(time.Second))},
				Spec:       corev1.PodSpec{Containers: oneContainer},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded,
					ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: terminated("Completed", 0)}}},
			},
			wantReady: "0/1", wantStatus: "Completed", wantRestarts: "0",
		},
		{
			name: "deleted pod on a lost node",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(ago(time.Second))},
				Spec:       corev1.PodSpec{Containers: oneContainer},
				Status:     corev1.PodStatus{Phase: corev1.PodRunning, Reason: "NodeLost"},
			},
			wantReady: "0/1", wantStatus: "Unknown", wantRestarts: "0",
		},
		{
			name: "evicted",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: oneContainer},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}},
			wantReady: "0/1", wantStatus: "Evicted", wantRestarts: "0",
		},
		{
			name: "scheduling gated",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: oneContainer}, Status: corev1.PodStatus{
				Phase:      corev1.PodPending,
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}},
			}},
			wantReady: "0/1", wantStatus: "SchedulingGated", wantRestarts: "0",
		},
		{
			name: "started sidecar counts towards ready and its restarts stay after init",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
					Containers:     oneContainer,
				},
				Status: corev1.PodStatus{
					Phase:      corev1.PodRunning,
					Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}},
					InitContainerStatuses: []corev1.ContainerStatus{{
						Name: "sidecar", Started: ptr.To(true), Ready: true, RestartCount: 1, State: running,
						LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: ago(2 * time.Hour)}},
					}},
					ContainerStatuses: []corev1.ContainerStatus{{Name: "a", Ready: true, State: running, RestartCount: 2}},
				},
			},
			wantReady: "2/2", wantStatus: "Running", wantRestarts: "3 (120m ago)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod.DeepCopy()
			pod.Name = "p"
			pod.CreationTimestamp = ago(10 * time.Minute)
			got := cells(t, schema.GroupResource{Resource: "pods"}, pod)
			if got[0] != "p" || got[1] != tt.wantReady || got[2] != tt.wantStatus || got[3] != tt.wantRestarts || got[4] != "10m" {
				t.Errorf("NAME READY STATUS RESTARTS AGE = %q %q %q %q %q, want p %q %q %q 10m",
					got[0], got[1], got[2], got[3], got[4], tt.wantReady, tt.wantStatus, tt.wantRestarts)
			}
		})
	}
}

func TestPodColumnsAndWideCells(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(3 * time.Hour)},
		Spec: corev1.PodSpec{
			NodeName:       "node-1",
			Containers:     []corev1.Container{{Name: "a"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodSucceeded,
			PodIPs:     []corev1.PodIP{{IP: "10.42.0.7"}, {IP: "fd00::7"}},
			Conditions: []corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionTrue}},
		},
	}
	table := convert(t, schema.GroupResource{Resource: "pods"}, pod, nil)
	wantCols := []columnSpec{{"Name", 0}, {"Ready", 0}, {"Status", 0}, {"Restarts", 0}, {"Age", 0},
		{"IP", 1}, {"Node", 1}, {"Nominated Node", 1}, {"Readiness Gates", 1}}
	if got := columnsOf(table); !reflect.DeepEqual(got, wantCols) {
		t.Errorf("columns = %v, want %v", got, wantCols)
	}
	want := []interface{}{"web", "0/1", "Succeeded", "0", "3h", "10.42.0.7", "node-1", "<none>", "1/2"}
	if got := table.Rows[0].Cells; !reflect.DeepEqual(got, want) {
		t.Errorf("cells = %#v, want %#v", got, want)
	}
	if c := table.Rows[0].Conditions; len(c) != 1 || c[0].Type != metav1.RowCompleted || c[0].Reason != "Succeeded" {
		t.Errorf("row conditions = %+v, want one Completed/Succeeded", c)
	}
}

func TestNodeStatusAndRoles(t *testing.T) {
	ready := func(s corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: s}}
	}
	tests := []struct {
		name       string
		node       corev1.Node
		wantStatus string
		wantRoles  string
	}{
		{"ready", corev1.Node{Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue)}}, "Ready", "<none>"},
		{"not ready", corev1.Node{Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionFalse)}}, "NotReady", "<none>"},
		{"unknown ready condition is not ready", corev1.Node{Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionUnknown)}}, "NotReady", "<none>"},
		{"no ready condition", corev1.Node{}, "Unknown", "<none>"},
		{"cordoned", corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}, Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue)}}, "Ready,SchedulingDisabled", "<none>"},
		{"cordoned without conditions", corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}}, "Unknown,SchedulingDisabled", "<none>"},
		{
			"roles from labels",
			corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
					"node-role.kubernetes.io/control-plane": "",
					"node-role.kubernetes.io/etcd":          "true",
					"node-role.kubernetes.io/":              "",
					"kubernetes.io/role":                    "master",
					"kubernetes.io/hostname":                "n1",
				}},
				Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue)},
			},
			"Ready", "control-plane,etcd,master",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := tt.node.DeepCopy()
			node.Name = "n1"
			got := cells(t, schema.GroupResource{Resource: "nodes"}, node)
			if got[1] != tt.wantStatus || got[2] != tt.wantRoles {
				t.Errorf("STATUS ROLES = %q %q, want %q %q", got[1], got[2], tt.wantStatus, tt.wantRoles)
			}
		})
	}
}

func TestNodeWideCells(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: ago(49 * time.Hour)},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: "n1"},
				{Type: corev1.NodeInternalIP, Address: "192.0.2.10"},
				{Type: corev1.NodeInternalIP, Address: "192.0.2.11"},
			},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion: "v1.37.1+k1s", KernelVersion: "6.12.0", Architecture: "arm64",
				ContainerRuntimeVersion: "containerd://2.1.0",
			},
		},
	}
	table := convert(t, schema.GroupResource{Resource: "nodes"}, node, nil)
	wantCols := []columnSpec{{"Name", 0}, {"Status", 0}, {"Roles", 0}, {"Age", 0}, {"Version", 0},
		{"Internal-IP", 1}, {"External-IP", 1}, {"OS-Image", 1}, {"Kernel-Version", 1}, {"Container-Runtime", 1}}
	if got := columnsOf(table); !reflect.DeepEqual(got, wantCols) {
		t.Errorf("columns = %v, want %v", got, wantCols)
	}
	want := []interface{}{"n1", "Ready", "<none>", "2d1h", "v1.37.1+k1s", "192.0.2.10", "<none>", "<unknown>", "6.12.0 (arm64)", "containerd://2.1.0"}
	if got := table.Rows[0].Cells; !reflect.DeepEqual(got, want) {
		t.Errorf("cells = %#v, want %#v", got, want)
	}
}

func TestDeploymentColumns(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(90 * time.Second)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "nginx", Image: "nginx:1.27"}, {Name: "sidecar", Image: "busybox"},
			}}},
		},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 1},
	}
	table := convert(t, schema.GroupResource{Group: "apps", Resource: "deployments"}, d, nil)
	wantCols := []columnSpec{{"Name", 0}, {"Ready", 0}, {"Up-to-date", 0}, {"Available", 0}, {"Age", 0},
		{"Containers", 1}, {"Images", 1}, {"Selector", 1}}
	if got := columnsOf(table); !reflect.DeepEqual(got, wantCols) {
		t.Errorf("columns = %v, want %v", got, wantCols)
	}
	want := []interface{}{"web", "2/3", int64(3), int64(1), "90s", "nginx,sidecar", "nginx:1.27,busybox", "app=web"}
	if got := table.Rows[0].Cells; !reflect.DeepEqual(got, want) {
		t.Errorf("cells = %#v, want %#v", got, want)
	}

	bad := d.DeepCopy()
	bad.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	if got := cells(t, schema.GroupResource{Group: "apps", Resource: "deployments"}, bad)[7]; got != "<invalid>" {
		t.Errorf("selector cell for an invalid selector = %q, want <invalid>", got)
	}
}

func TestServiceCells(t *testing.T) {
	tests := []struct {
		name         string
		spec         corev1.ServiceSpec
		status       corev1.ServiceStatus
		wantCluster  string
		wantExternal string
		wantPorts    string
		wantSelector string
	}{
		{
			name: "node port",
			spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.43.0.10", "fd00::10"},
				Ports: []corev1.ServicePort{
					{Port: 80, Protocol: corev1.ProtocolTCP},
					{Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP},
				},
				Selector: map[string]string{"app": "web"},
			},
			wantCluster: "10.43.0.10", wantExternal: "<none>", wantPorts: "80/TCP,443:30443/TCP", wantSelector: "app=web",
		},
		{
			name:        "headless without ports",
			spec:        corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"None"}},
			wantCluster: "None", wantExternal: "<none>", wantPorts: "<none>", wantSelector: "<none>",
		},
		{
			name: "cluster IP with external IPs",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ExternalIPs: []string{"198.51.100.1", "198.51.100.2"},
				Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP}}},
			wantCluster: "<none>", wantExternal: "198.51.100.1,198.51.100.2", wantPorts: "53/UDP", wantSelector: "<none>",
		},
		{
			name:        "load balancer pending",
			spec:        corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.43.0.5"}},
			wantCluster: "10.43.0.5", wantExternal: "<pending>", wantPorts: "<none>", wantSelector: "<none>",
		},
		{
			name: "load balancer with ingress and external IPs",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalIPs: []string{"198.51.100.9"}},
			status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
				{IP: "203.0.113.2"}, {Hostname: "lb.example.com"}, {IP: "203.0.113.1"}, {IP: "203.0.113.2"},
			}}},
			wantCluster: "<none>", wantExternal: "203.0.113.1,203.0.113.2,lb.example.com,198.51.100.9", wantPorts: "<none>", wantSelector: "<none>",
		},
		{
			name:        "external name",
			spec:        corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
			wantCluster: "<none>", wantExternal: "db.example.com", wantPorts: "<none>", wantSelector: "<none>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", CreationTimestamp: ago(time.Hour)}, Spec: tt.spec, Status: tt.status}
			got := cells(t, schema.GroupResource{Resource: "services"}, svc)
			want := []interface{}{"s", string(tt.spec.Type), tt.wantCluster, tt.wantExternal, tt.wantPorts, "60m", tt.wantSelector}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("cells = %#v, want %#v", got, want)
			}
		})
	}
}

func TestListConvertsToRowsWithObjectsAndListMeta(t *testing.T) {
	list := &corev1.ConfigMapList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "token", RemainingItemCount: ptr.To[int64](7)},
		Items: []corev1.ConfigMap{
			{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: ago(time.Minute)}, Data: map[string]string{"k": "v"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: ago(time.Minute)}, Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": nil}},
		},
	}
	table := convert(t, schema.GroupResource{Resource: "configmaps"}, list, &metav1.TableOptions{})
	if table.ResourceVersion != "42" || table.Continue != "token" || table.RemainingItemCount == nil || *table.RemainingItemCount != 7 {
		t.Errorf("list meta = %+v, want resourceVersion 42, continue token, remaining 7", table.ListMeta)
	}
	if got, want := columnsOf(table), []columnSpec{{"Name", 0}, {"Data", 0}, {"Age", 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("columns = %v, want %v", got, want)
	}
	if len(table.Rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(table.Rows))
	}
	for i, row := range table.Rows {
		obj, ok := row.Object.Object.(*corev1.ConfigMap)
		if !ok || obj != &list.Items[i] {
			t.Errorf("row %d object = %T %p, want pointer to item %d", i, row.Object.Object, row.Object.Object, i)
		}
	}
	if got, want := table.Rows[1].Cells, []interface{}{"b", int64(2), "60s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("row 1 cells = %#v, want %#v", got, want)
	}
}

func TestSingleObjectCarriesResourceVersion(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", ResourceVersion: "9", CreationTimestamp: ago(time.Hour)}}
	table := convert(t, schema.GroupResource{Resource: "serviceaccounts"}, sa, nil)
	if table.ResourceVersion != "9" {
		t.Errorf("resourceVersion = %q, want 9", table.ResourceVersion)
	}
	if got, want := columnsOf(table), []columnSpec{{"Name", 0}, {"Age", 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("serviceaccount columns = %v, want %v", got, want)
	}
	if table.Rows[0].Object.Object != sa {
		t.Errorf("row object = %v, want the service account", table.Rows[0].Object.Object)
	}
}

func TestNoHeaders(t *testing.T) {
	table := convert(t, schema.GroupResource{Resource: "secrets"},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": nil}},
		&metav1.TableOptions{NoHeaders: true})
	if table.ColumnDefinitions != nil {
		t.Errorf("columns = %v, want none with NoHeaders", table.ColumnDefinitions)
	}
	if want := []interface{}{"s", "Opaque", int64(1), "<unknown>"}; !reflect.DeepEqual(table.Rows[0].Cells, want) {
		t.Errorf("cells = %#v, want %#v", table.Rows[0].Cells, want)
	}
}

func TestConvertErrors(t *testing.T) {
	c := TableConvertorFor(schema.GroupResource{Resource: "pods"})
	if _, err := c.ConvertToTable(context.Background(), &corev1.Pod{}, &metav1.ListOptions{}); err == nil ||
		!strings.Contains(err.Error(), "unrecognized type *v1.ListOptions for table options") {
		t.Errorf("bad table options: err = %v, want unrecognized type", err)
	}
	if _, err := c.ConvertToTable(context.Background(), &corev1.Node{}, nil); err == nil ||
		!strings.Contains(err.Error(), "no table printer for *v1.Node") {
		t.Errorf("wrong object type: err = %v, want no table printer", err)
	}
	events := TableConvertorFor(schema.GroupResource{Resource: "events"})
	if _, err := events.ConvertToTable(context.Background(), &corev1.Pod{}, nil); err == nil ||
		!strings.Contains(err.Error(), "no table printer for *v1.Pod") {
		t.Errorf("pod as event: err = %v, want no table printer", err)
	}
	var nilOpts *metav1.TableOptions
	if _, err := c.ConvertToTable(context.Background(), &corev1.Pod{}, nilOpts); err != nil {
		t.Errorf("typed nil table options: %v", err)
	}
}

func TestStatusObject(t *testing.T) {
	status := &metav1.Status{Status: metav1.StatusSuccess, Reason: "Gone", Message: "deleted"}
	table := convert(t, schema.GroupResource{Resource: "pods"}, status, nil)
	if got, want := columnsOf(table), []columnSpec{{"Status", 0}, {"Reason", 0}, {"Message", 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("columns = %v, want %v", got, want)
	}
	if want := []interface{}{"Success", "Gone", "deleted"}; !reflect.DeepEqual(table.Rows[0].Cells, want) {
		t.Errorf("cells = %#v, want %#v", table.Rows[0].Cells, want)
	}
}

func TestUnknownAndDefaultResources(t *testing.T) {
	for _, gr := range []schema.GroupResource{
		{Resource: "limitranges"},
		{Group: "rbac.authorization.k8s.io", Resource: "roles"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Group: "example.com", Resource: "widgets"},
	} {
		t.Run(gr.String(), func(t *testing.T) {
			c := TableConvertorFor(gr)
			if _, ok := c.(*convertor); ok {
				t.Fatalf("%s got a dedicated printer, want the default convertor", gr)
			}
			table, err := c.ConvertToTable(context.Background(), &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, nil)
			if err != nil {
				t.Fatalf("ConvertToTable: %v", err)
			}
			if got, want := columnsOf(table), []columnSpec{{"Name", 0}, {"Created At", 0}}; !reflect.DeepEqual(got, want) {
				t.Errorf("columns = %v, want %v", got, want)
			}
		})
	}
}

// TestEveryPrinterIsConsistent checks that every registered printer emits one
// cell per column for its own zero-valued object and for a list of it.
func TestEveryPrinterIsConsistent(t *testing.T) {
	scheme := newTestScheme(t)
	for gr, p := range printersByResource {
		t.Run(gr.String(), func(t *testing.T) {
			obj, list := objectsFor(t, scheme, gr)
			for _, o := range []runtime.Object{obj, list} {
				table := convert(t, gr, o, nil)
				if len(table.ColumnDefinitions) != len(p.columns) {
					t.Fatalf("%T: %d columns, want %d", o, len(table.ColumnDefinitions), len(p.columns))
				}
				if len(table.Rows) != 1 {
					t.Fatalf("%T: %d rows, want 1", o, len(table.Rows))
				}
				if n := len(table.Rows[0].Cells); n != len(p.columns) {
					t.Errorf("%T: %d cells for %d columns", o, n, len(p.columns))
				}
				if table.Rows[0].Object.Object == nil {
					t.Errorf("%T: row has no object", o)
				}
				if p.columns[0].Name == "Name" && p.columns[0].Format != "name" {
					t.Errorf("Name column format = %q, want name", p.columns[0].Format)
				}
			}
		})
	}
}
