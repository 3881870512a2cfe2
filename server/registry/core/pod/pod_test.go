package pod

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/server/scheme"
)

func resources(req, lim string) corev1.ResourceRequirements {
	var r corev1.ResourceRequirements
	if req != "" {
		r.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req), corev1.ResourceMemory: resource.MustParse("64Mi")}
	}
	if lim != "" {
		r.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(lim), corev1.ResourceMemory: resource.MustParse("64Mi")}
	}
	return r
}

func TestPrepareForCreate(t *testing.T) {
	gated := corev1.PodCondition{
		Type:    corev1.PodScheduled,
		Status:  corev1.ConditionFalse,
		Reason:  corev1.PodReasonSchedulingGated,
		Message: "Scheduling is blocked due to non-empty scheduling gates",
	}
	tests := []struct {
		name string
		spec corev1.PodSpec
		// defaulted runs scheme defaulting first, as the apiserver does.
		defaulted bool
		want      corev1.PodStatus
	}{
		{
			name: "best effort",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
			want: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
		},
		{
			name: "burstable: requests below limits",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: resources("100m", "200m")}}},
			want: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable},
		},
		{
			name: "burstable: one of two containers without resources",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: resources("1", "1")}, {Name: "b"}}},
			want: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable},
		},
		{
			name: "guaranteed: limits equal requests",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: resources("500m", "500m")}, {Name: "b", Resources: resources("1", "1")}}},
			want: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSGuaranteed},
		},
		{
			name: "guaranteed: limits only, requests defaulted to them",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
			defaulted: true,
			want:      corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSGuaranteed},
		},
		{
			name: "scheduling gates",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}, SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/wait"}}},
			want: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort, Conditions: []corev1.PodCondition{gated}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{
				Spec: tt.spec,
				// Whatever the client sent as status is dropped.
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.42.0.9", HostIP: "192.0.2.1",
					Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
			}
			if tt.defaulted {
				scheme.Scheme.Default(pod)
			}
			PrepareForCreate(context.Background(), pod)
			if diff := cmp.Diff(tt.want, pod.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGracefulDelete(t *testing.T) {
	scheduled := func(grace *int64, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1", TerminationGracePeriodSeconds: grace}, Status: corev1.PodStatus{Phase: phase}}
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		options   *metav1.DeleteOptions
		wantOK    bool
		wantGrace *int64
	}{
		{"no options", scheduled(ptr.To[int64](30), corev1.PodRunning), nil, false, nil},
		{"explicit grace", scheduled(ptr.To[int64](30), corev1.PodRunning), &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](5)}, true, ptr.To[int64](5)},
		{"explicit zero", scheduled(ptr.To[int64](30), corev1.PodRunning), &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, true, ptr.To[int64](0)},
		{"pod default", scheduled(ptr.To[int64](45), corev1.PodRunning), &metav1.DeleteOptions{}, true, ptr.To[int64](45)},
		{"no default anywhere", scheduled(nil, corev1.PodRunning), &metav1.DeleteOptions{}, true, ptr.To[int64](0)},
		{"unscheduled", &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](30)}}, &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](10)}, true, ptr.To[int64](0)},
		{"succeeded", scheduled(ptr.To[int64](30), corev1.PodSucceeded), &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](10)}, true, ptr.To[int64](0)},
		{"failed", scheduled(ptr.To[int64](30), corev1.PodFailed), &metav1.DeleteOptions{}, true, ptr.To[int64](0)},
		{"pending on a node keeps its grace", scheduled(ptr.To[int64](30), corev1.PodPending), &metav1.DeleteOptions{}, true, ptr.To[int64](30)},
		{"negative becomes 1", scheduled(ptr.To[int64](30), corev1.PodRunning), &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](-5)}, true, ptr.To[int64](1)},
		{"negative pod default becomes 1", scheduled(ptr.To[int64](-1), corev1.PodRunning), &metav1.DeleteOptions{}, true, ptr.To[int64](1)},
		{"negative on an unscheduled pod becomes 0", &corev1.Pod{}, &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](-5)}, true, ptr.To[int64](0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			podBefore := tt.pod.DeepCopy()
			got := GracefulDelete(context.Background(), tt.pod, tt.options)
			if got != tt.wantOK {
				t.Errorf("GracefulDelete = %v, want %v", got, tt.wantOK)
			}
			if tt.options != nil {
				if diff := cmp.Diff(tt.wantGrace, tt.options.GracePeriodSeconds); diff != "" {
					t.Errorf("options.gracePeriodSeconds (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(podBefore, tt.pod); diff != "" {
				t.Errorf("pod modified:\n%s", diff)
			}
		})
	}
}

func TestPickContainer(t *testing.T) {
	pod := func(regular []string, init []string, ephemeral []string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
		for _, n := range regular {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		for _, n := range init {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n})
		}
		for _, n := range ephemeral {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: n}})
		}
		return p
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		container string
		want      string
		wantErr   string
	}{
		{"the only container", pod([]string{"app"}, nil, nil), "", "app", ""},
		{"the only regular container beside an init container", pod([]string{"app"}, []string{"setup"}, nil), "", "app", ""},
		{"named", pod([]string{"app", "sidecar"}, nil, nil), "sidecar", "sidecar", ""},
		{"init container by name", pod([]string{"app"}, []string{"setup"}, nil), "setup", "setup", ""},
		{"ephemeral container by name", pod([]string{"app"}, nil, []string{"debugger"}), "debugger", "debugger", ""},
		{"several, none named", pod([]string{"app", "sidecar"}, []string{"setup"}, nil), "", "",
			"a container name must be specified for pod web, choose one of: [app sidecar]"},
		{"unknown", pod([]string{"app", "sidecar"}, nil, nil), "db", "", "container db is not valid for pod web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pickContainer(tt.pod, tt.container)
			if tt.wantErr != "" {
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("pickContainer = %q, %v; want BadRequest", got, err)
				}
				if err.Error() != tt.wantErr {
					t.Errorf("message = %q, want %q", err.Error(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("pickContainer: %v", err)
			}
			if got != tt.want {
				t.Errorf("pickContainer = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateLogOptions(t *testing.T) {
	since := metav1.NewTime(time.Now())
	tests := []struct {
		name string
		opts corev1.PodLogOptions
		want []string // message parts; nil means valid
	}{
		{"empty", corev1.PodLogOptions{}, nil},
		{"all set and valid", corev1.PodLogOptions{SinceSeconds: ptr.To[int64](1), TailLines: ptr.To[int64](0), LimitBytes: ptr.To[int64](1), Stream: ptr.To(corev1.LogStreamStderr)}, nil},
		{"stream All", corev1.PodLogOptions{Stream: ptr.To(corev1.LogStreamAll)}, nil},
		{"sinceTime alone", corev1.PodLogOptions{SinceTime: &since}, nil},
		{"both since", corev1.PodLogOptions{SinceSeconds: ptr.To[int64](10), SinceTime: &since}, []string{"at most one of sinceTime or sinceSeconds may be specified"}},
		{"sinceSeconds zero", corev1.PodLogOptions{SinceSeconds: ptr.To[int64](0)}, []string{"sinceSeconds must be greater than 0"}},
		{"tailLines negative", corev1.PodLogOptions{TailLines: ptr.To[int64](-1)}, []string{"tailLines must be greater than or equal to 0"}},
		{"limitBytes zero", corev1.PodLogOptions{LimitBytes: ptr.To[int64](0)}, []string{"limitBytes must be greater than 0"}},
		{"unknown stream", corev1.PodLogOptions{Stream: ptr.To("stdout")}, []string{"stream must be Stdout, Stderr or All"}},
		{"several at once", corev1.PodLogOptions{TailLines: ptr.To[int64](-1), LimitBytes: ptr.To[int64](-1)},
			[]string{"tailLines must be greater than or equal to 0", "limitBytes must be greater than 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateLogOptions(&tt.opts)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("validateLogOptions = %v, want nil", err)
				}
				return
			}
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("validateLogOptions = %v, want BadRequest", err)
			}
			if got, want := err.Error(), strings.Join(tt.want, "; "); got != want {
				t.Errorf("message = %q, want %q", got, want)
			}
		})
	}
}

func TestSetCondition(t *testing.T) {
	long := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	probe := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	initial := func() corev1.PodStatus {
		return corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "no nodes", LastTransitionTime: long},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: long},
		}}
	}
	tests := []struct {
		name  string
		set   corev1.PodCondition
		index int // index of the condition in the result
		moved bool
		count int
	}{
		{"status changes: transition time moves", corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, 0, true, 2},
		{"same status: transition time kept", corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Other", Message: "m", LastProbeTime: probe}, 0, false, 2},
		{"new type is appended", corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, Reason: "R"}, 2, true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := initial()
			before := time.Now().Add(-time.Second)
			SetCondition(&status, tt.set)
			if len(status.Conditions) != tt.count {
				t.Fatalf("got %d conditions, want %d", len(status.Conditions), tt.count)
			}
			got := status.Conditions[tt.index]
			if got.Type != tt.set.Type || got.Status != tt.set.Status || got.Reason != tt.set.Reason || got.Message != tt.set.Message {
				t.Errorf("condition = %+v, want %+v", got, tt.set)
			}
			if !got.LastProbeTime.Equal(&tt.set.LastProbeTime) {
				t.Errorf("lastProbeTime = %v, want %v", got.LastProbeTime, tt.set.LastProbeTime)
			}
			if tt.moved {
				if got.LastTransitionTime.Time.Before(before) {
					t.Errorf("lastTransitionTime = %v, want now", got.LastTransitionTime)
				}
			} else if !got.LastTransitionTime.Equal(&long) {
				t.Errorf("lastTransitionTime = %v, want %v kept", got.LastTransitionTime, long)
			}
			// Other conditions are untouched.
			if other := initial().Conditions[1]; tt.index != 1 {
				if diff := cmp.Diff(other, status.Conditions[1]); diff != "" {
					t.Errorf("Ready condition changed:\n%s", diff)
				}
			}
		})
	}
}
