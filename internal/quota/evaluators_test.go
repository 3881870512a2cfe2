package quota

import (
	"github.com/k1s/k1s/internal/quota/quotatest"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var (
	rl          = quotatest.RL
	container   = quotatest.Container
	assertUsage = quotatest.AssertUsage
	printList   = quotatest.PrintList
)

func TestPodUsage(t *testing.T) {
	now := time.Unix(10_000, 0)
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{
			name: "requests and limits with a larger init container",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("init", rl("cpu", "500m", "memory", "10Mi"), rl("cpu", "1"))},
				Containers: []corev1.Container{
					container("a", rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "200m", "memory", "200Mi")),
					container("b", rl("cpu", "200m", "memory", "50Mi"), rl("cpu", "400m")),
				},
			}},
			want: rl("count/pods", "1", "pods", "1",
				"cpu", "500m", "requests.cpu", "500m", "limits.cpu", "1",
				"memory", "150Mi", "requests.memory", "150Mi", "limits.memory", "200Mi"),
		},
		{
			name: "sidecar init container adds to the containers",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					Resources: corev1.ResourceRequirements{Requests: rl("cpu", "100m")}}},
				Containers: []corev1.Container{container("a", rl("cpu", "250m"), nil)},
			}},
			want: rl("count/pods", "1", "pods", "1", "cpu", "350m", "requests.cpu", "350m"),
		},
		{
			name: "ephemeral storage, huge pages and extended resources",
			pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				container("a",
					rl("ephemeral-storage", "1Gi", "hugepages-2Mi", "4Mi", "example.com/gpu", "2"),
					rl("ephemeral-storage", "2Gi", "hugepages-2Mi", "4Mi", "example.com/gpu", "2")),
			}}},
			want: rl("count/pods", "1", "pods", "1",
				"ephemeral-storage", "1Gi", "requests.ephemeral-storage", "1Gi", "limits.ephemeral-storage", "2Gi",
				"hugepages-2Mi", "4Mi", "requests.hugepages-2Mi", "4Mi",
				"requests.example.com/gpu", "2"),
		},
		{
			name: "pod overhead is charged",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				Overhead:   rl("cpu", "50m"),
				Containers: []corev1.Container{container("a", rl("cpu", "100m"), rl("cpu", "100m"))},
			}},
			want: rl("count/pods", "1", "pods", "1", "cpu", "150m", "requests.cpu", "150m", "limits.cpu", "150m"),
		},
		{
			name: "best effort pod counts as a pod only",
			pod:  &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}},
			want: rl("count/pods", "1", "pods", "1"),
		},
		{
			name: "succeeded pod counts only as an object",
			pod: &corev1.Pod{
				Spec:   corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "1"), nil)}},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded},
			},
			want: rl("count/pods", "1"),
		},
		{
			name: "failed pod counts only as an object",
			pod: &corev1.Pod{
				Spec:   corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "1"), nil)}},
				Status: corev1.PodStatus{Phase: corev1.PodFailed},
			},
			want: rl("count/pods", "1"),
		},
		{
			name: "deleting pod past its grace period counts only as an object",
			pod: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: now.Add(-time.Minute)}, DeletionGracePeriodSeconds: ptr.To[int64](30)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "1"), nil)}},
			},
			want: rl("count/pods", "1"),
		},
		{
			name: "deleting pod within its grace period still counts",
			pod: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: now.Add(-10 * time.Second)}, DeletionGracePeriodSeconds: ptr.To[int64](30)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "1"), nil)}},
			},
			want: rl("count/pods", "1", "pods", "1", "cpu", "1", "requests.cpu", "1"),
		},
	}
	eval := NewPodEvaluator(nil, clocktesting.NewFakePassiveClock(now))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertUsage(t, PodUsage(tc.pod, now), tc.want)
			got, err := eval.Usage(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			assertUsage(t, got, tc.want)
		})
	}
	if _, err := eval.Usage(&corev1.Service{}); err == nil {
		t.Error("Usage of a service through the pod evaluator succeeded")
	}
}

func TestPodScopes(t *testing.T) {
	bestEffort := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	burstable := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("memory", "1Gi"), nil)}}}
	terminating := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: ptr.To[int64](60), Containers: []corev1.Container{{Name: "a"}}}}
	highPrio := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high", Containers: []corev1.Container{{Name: "a"}}}}
	crossNS := &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{
			TopologyKey: "zone", NamespaceSelector: &metav1.LabelSelector{},
		}}},
	}}}}
	scope := func(name corev1.ResourceQuotaScope) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: name, Operator: corev1.ScopeSelectorOpExists}
	}
	prio := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
	}
	tests := []struct {
		name     string
		selector corev1.ScopedResourceSelectorRequirement
		pod      *corev1.Pod
		want     bool
	}{
		{"BestEffort/best effort", scope(corev1.ResourceQuotaScopeBestEffort), bestEffort, true},
		{"BestEffort/burstable", scope(corev1.ResourceQuotaScopeBestEffort), burstable, false},
		{"NotBestEffort/burstable", scope(corev1.ResourceQuotaScopeNotBestEffort), burstable, true},
		{"Terminating/deadline", scope(corev1.ResourceQuotaScopeTerminating), terminating, true},
		{"Terminating/none", scope(corev1.ResourceQuotaScopeTerminating), bestEffort, false},
		{"NotTerminating/none", scope(corev1.ResourceQuotaScopeNotTerminating), bestEffort, true},
		{"NotTerminating/deadline", scope(corev1.ResourceQuotaScopeNotTerminating), terminating, false},
		{"PriorityClass Exists/with", prio(corev1.ScopeSelectorOpExists), highPrio, true},
		{"PriorityClass Exists/without", prio(corev1.ScopeSelectorOpExists), bestEffort, false},
		{"PriorityClass In/match", prio(corev1.ScopeSelectorOpIn, "low", "high"), highPrio, true},
		{"PriorityClass In/other", prio(corev1.ScopeSelectorOpIn, "low"), highPrio, false},
		{"PriorityClass In/without", prio(corev1.ScopeSelectorOpIn, "high"), bestEffort, false},
		{"PriorityClass NotIn/other", prio(corev1.ScopeSelectorOpNotIn, "low"), highPrio, true},
		{"PriorityClass NotIn/match", prio(corev1.ScopeSelectorOpNotIn, "high"), highPrio, false},
		{"PriorityClass NotIn/without", prio(corev1.ScopeSelectorOpNotIn, "high"), bestEffort, true},
		{"PriorityClass DoesNotExist/without", prio(corev1.ScopeSelectorOpDoesNotExist), bestEffort, true},
		{"PriorityClass DoesNotExist/with", prio(corev1.ScopeSelectorOpDoesNotExist), highPrio, false},
		{"CrossNamespacePodAffinity/selector", scope(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), crossNS, true},
		{"CrossNamespacePodAffinity/none", scope(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), bestEffort, false},
	}
	eval := NewPodEvaluator(nil, clocktesting.NewFakePassiveClock(time.Now()))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podMatchesScope(tc.selector, tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("match = %v, want %v", got, tc.want)
			}
			// The same answer through the quota: a quota limiting pods with
			// this scope matches the pod exactly when the scope does.
			rq := &corev1.ResourceQuota{
				Spec:   corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{tc.selector}}},
				Status: corev1.ResourceQuotaStatus{Hard: rl("pods", "10")},
			}
			matches, err := eval.Matches(rq, tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if matches != tc.want {
				t.Errorf("quota match = %v, want %v", matches, tc.want)
			}
		})
	}
}

func TestPodConstraints(t *testing.T) {
	eval := NewPodEvaluator(nil, clocktesting.NewFakePassiveClock(time.Now()))
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{container("init", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1"))},
		Containers: []corev1.Container{
			container("a", rl("memory", "1Gi"), nil),
			container("b", nil, rl("cpu", "1")),
		},
	}}
	tests := []struct {
		name     string
		required []corev1.ResourceName
		wantErr  string
	}{
		{name: "nothing required", required: nil},
		{name: "storage is never required per container", required: []corev1.ResourceName{"requests.storage", "requests.ephemeral-storage"}},
		{
			name:     "cpu limits and memory requests",
			required: []corev1.ResourceName{"limits.cpu", "requests.memory", "pods"},
			wantErr:  "must specify limits.cpu for: a; requests.memory for: b",
		},
		{name: "shorthand cpu means requests", required: []corev1.ResourceName{"cpu"}, wantErr: "must specify cpu for: a,b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := eval.Constraints(tc.required, pod)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Constraints: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}

	podLevel := pod.DeepCopy()
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Limits: rl("cpu", "2")}
	if err := eval.Constraints([]corev1.ResourceName{"limits.cpu"}, podLevel); err != nil {
		t.Errorf("pod-level resources must lift the per-container rule: %v", err)
	}
}

func TestPodMatchingResourcesAndHandles(t *testing.T) {
	eval := NewPodEvaluator(nil, clocktesting.NewFakePassiveClock(time.Now()))
	got := eval.MatchingResources([]corev1.ResourceName{
		"pods", "count/pods", "requests.cpu", "limits.memory", "services", "requests.storage",
		"hugepages-1Gi", "requests.hugepages-2Mi", "requests.example.com/gpu", "example.com/gpu", "configmaps",
	})
	want := []string{"count/pods", "hugepages-1Gi", "limits.memory", "pods", "requests.cpu", "requests.example.com/gpu", "requests.hugepages-2Mi"}
	if names := sortedNames(got); strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("MatchingResources = %v, want %v", names, want)
	}

	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "1"}}
	withDeadline := plain.DeepCopy()
	withDeadline.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
	attrs := func(obj, old *corev1.Pod, op admission.Operation, sub string) admission.Attributes {
		var oldObj runtime.Object
		if old != nil {
			oldObj = old
		}
		return admission.NewAttributesRecord(obj, oldObj, corev1.SchemeGroupVersion.WithKind("Pod"), "ns", "p",
			corev1.SchemeGroupVersion.WithResource("pods"), sub, op, nil, false, nil)
	}
	tests := []struct {
		name string
		a    admission.Attributes
		want bool
	}{
		{"create", attrs(plain, nil, admission.Create, ""), true},
		{"update without scope change", attrs(plain, plain, admission.Update, ""), false},
		{"update into Terminating", attrs(withDeadline, plain, admission.Update, ""), true},
		{"resize", attrs(plain, plain, admission.Update, "resize"), true},
		{"status", attrs(plain, plain, admission.Update, "status"), false},
	}
	for _, tc := range tests {
		if got := eval.Handles(tc.a); got != tc.want {
			t.Errorf("Handles(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func sortedNames(l []corev1.ResourceName) []string {
	out := make([]string, 0, len(l))
	for _, n := range l {
		out = append(out, string(n))
	}
	sort.Strings(out)
	return out
}

func TestServiceUsage(t *testing.T) {
	ports := func(nodePorts ...int32) []corev1.ServicePort {
		var out []corev1.ServicePort
		for i, np := range nodePorts {
			out = append(out, corev1.ServicePort{Port: int32(80 + i), NodePort: np})
		}
		return out
	}
	tests := []struct {
		name string
		spec corev1.ServiceSpec
		want corev1.ResourceList
	}{
		{"ClusterIP", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports(0, 0)},
			rl("count/services", "1", "services", "1", "services.nodeports", "0", "services.loadbalancers", "0")},
		{"NodePort", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports(0, 0)},
			rl("count/services", "1", "services", "1", "services.nodeports", "2", "services.loadbalancers", "0")},
		{"LoadBalancer", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports(0, 0, 0)},
			rl("count/services", "1", "services", "1", "services.nodeports", "3", "services.loadbalancers", "1")},
		{"LoadBalancer without node port allocation", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports(30001, 0), AllocateLoadBalancerNodePorts: ptr.To(false)},
			rl("count/services", "1", "services", "1", "services.nodeports", "1", "services.loadbalancers", "1")},
	}
	eval := NewServiceEvaluator(nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eval.Usage(&corev1.Service{Spec: tc.spec})
			if err != nil {
				t.Fatal(err)
			}
			assertUsage(t, got, tc.want)
		})
	}
}

func TestPVCUsage(t *testing.T) {
	claim := func(class *string, request string, allocated string) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class}}
		if request != "" {
			pvc.Spec.Resources.Requests = rl("storage", request)
		}
		if allocated != "" {
			pvc.Status.AllocatedResources = rl("storage", allocated)
		}
		return pvc
	}
	annotated := claim(ptr.To("gold"), "1Gi", "")
	annotated.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "silver"}
	tests := []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want corev1.ResourceList
	}{
		{"no class", claim(nil, "1Gi", ""), rl("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1", "requests.storage", "1Gi")},
		{"with class", claim(ptr.To("gold"), "5Gi", ""), rl("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1", "requests.storage", "5Gi",
			"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "gold.storageclass.storage.k8s.io/requests.storage", "5Gi")},
		{"beta annotation wins", annotated, rl("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1", "requests.storage", "1Gi",
			"silver.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "silver.storageclass.storage.k8s.io/requests.storage", "1Gi")},
		{"larger allocation counts", claim(nil, "1Gi", "2Gi"), rl("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1", "requests.storage", "2Gi")},
		{"fractional bytes rounded up", claim(nil, "1500m", ""), rl("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1", "requests.storage", "2")},
		{"no request", claim(nil, "", ""), rl("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1")},
	}
	eval := NewPVCEvaluator(nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eval.Usage(tc.pvc)
			if err != nil {
				t.Fatal(err)
			}
			assertUsage(t, got, tc.want)
		})
	}
	matched := sortedNames(eval.MatchingResources([]corev1.ResourceName{
		"requests.storage", "gold.storageclass.storage.k8s.io/requests.storage", "bronze.storageclass.storage.k8s.io/persistentvolumeclaims", "pods", "count/persistentvolumeclaims",
	}))
	want := []string{"bronze.storageclass.storage.k8s.io/persistentvolumeclaims", "count/persistentvolumeclaims", "gold.storageclass.storage.k8s.io/requests.storage", "requests.storage"}
	if strings.Join(matched, " ") != strings.Join(want, " ") {
		t.Errorf("MatchingResources = %v, want %v", matched, want)
	}
}

func TestObjectCountEvaluators(t *testing.T) {
	registry := NewRegistry(nil)
	tests := []struct {
		resource string
		group    string
		obj      runtime.Object
		want     corev1.ResourceList
	}{
		{"configmaps", "", &corev1.ConfigMap{}, rl("count/configmaps", "1", "configmaps", "1")},
		{"secrets", "", &corev1.Secret{}, rl("count/secrets", "1", "secrets", "1")},
		{"replicationcontrollers", "", &corev1.ReplicationController{}, rl("count/replicationcontrollers", "1", "replicationcontrollers", "1")},
		{"resourcequotas", "", &corev1.ResourceQuota{}, rl("count/resourcequotas", "1", "resourcequotas", "1")},
		{"deployments", "apps", &corev1.ConfigMap{}, rl("count/deployments.apps", "1")},
		{"jobs", "batch", &corev1.ConfigMap{}, rl("count/jobs.batch", "1")},
	}
	for _, tc := range tests {
		e := registry.Get(schema.GroupResource{Group: tc.group, Resource: tc.resource})
		if e == nil {
			t.Errorf("no evaluator for %s.%s", tc.resource, tc.group)
			continue
		}
		got, err := e.Usage(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		assertUsage(t, got, tc.want)
	}
}
