package limitranger

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

const ns = "ns"

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func limitRange(items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: ns}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

// newPlugin returns a plugin whose informer cache holds cached and whose
// API holds live.
func newPlugin(t *testing.T, cached []*corev1.LimitRange, live ...runtime.Object) (*Plugin, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(live...)
	factory := informers.NewSharedInformerFactory(client, 0)
	p, err := New(client, factory)
	if err != nil {
		t.Fatal(err)
	}
	for _, lr := range cached {
		if err := factory.Core().V1().LimitRanges().Informer().GetIndexer().Add(lr); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p, client
}

func podAttrs(pod *corev1.Pod, op admission.Operation, subresource string, old *corev1.Pod) admission.Attributes {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	return admission.NewAttributesRecord(pod, oldObj, corev1.SchemeGroupVersion.WithKind("Pod"), ns, pod.Name,
		corev1.SchemeGroupVersion.WithResource("pods"), subresource, op, nil, false, nil)
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func admitAndValidate(p *Plugin, a admission.Attributes) error {
	if err := p.Admit(context.Background(), a, nil); err != nil {
		return err
	}
	return p.Validate(context.Background(), a, nil)
}

func TestDefaultsApplied(t *testing.T) {
	lr := limitRange(corev1.LimitRangeItem{
		Type:           corev1.LimitTypeContainer,
		Default:        rl("cpu", "500m", "memory", "256Mi"),
		DefaultRequest: rl("cpu", "100m", "memory", "128Mi"),
	})
	p, _ := newPlugin(t, []*corev1.LimitRange{lr})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{container("init", rl("cpu", "200m"), nil)},
			Containers: []corev1.Container{
				container("app", nil, nil),
				container("full", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "2", "memory", "2Gi")),
			},
		},
	}
	if err := admitAndValidate(p, podAttrs(pod, admission.Create, "", nil)); err != nil {
		t.Fatalf("admission: %v", err)
	}
	want := map[string]corev1.ResourceRequirements{
		"init": {Requests: rl("cpu", "200m", "memory", "128Mi"), Limits: rl("cpu", "500m", "memory", "256Mi")},
		"app":  {Requests: rl("cpu", "100m", "memory", "128Mi"), Limits: rl("cpu", "500m", "memory", "256Mi")},
		"full": {Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "2", "memory", "2Gi")},
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if !apiequality.Semantic.DeepEqual(c.Resources, want[c.Name]) {
			t.Errorf("%s resources = %+v, want %+v", c.Name, c.Resources, want[c.Name])
		}
	}
	wantNote := "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; " +
		"memory request for init container init; cpu, memory limit for init container init"
	if got := pod.Annotations[AnnotationKey]; got != wantNote {
		t.Errorf("annotation = %q\nwant %q", got, wantNote)
	}
}

func TestValidatePod(t *testing.T) {
	tests := []struct {
		name    string
		items   []corev1.LimitRangeItem
		pod     corev1.PodSpec
		wantErr string
	}{
		{
			name:    "container limit over max",
			items:   []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: rl("cpu", "500m")}},
			pod:     corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m"), rl("cpu", "1"))}},
			wantErr: "maximum cpu usage per Container is 500m, but limit is 1",
		},
		{
			name:    "container without limit under max",
			items:   []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: rl("memory", "1Gi")}},
			pod:     corev1.PodSpec{Containers: []corev1.Container{container("a", rl("memory", "100Mi"), nil)}},
			wantErr: "maximum memory usage per Container is 1Gi.  No limit is specified",
		},
		{
			name:    "container request over max",
			items:   []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: rl("cpu", "500m")}},
			pod:     corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "600m"), rl("cpu", "400m"))}},
			wantErr: "maximum cpu usage per Container is 500m, but request is 600m",
		},
		{
			name:    "init container checked too",
			items:   []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: rl("cpu", "500m")}},
			pod:     corev1.PodSpec{InitContainers: []corev1.Container{container("i", nil, rl("cpu", "2"))}},
			wantErr: "maximum cpu usage per Container is 500m, but limit is 2",
		},
		{
			name:    "request under min",
			items:   []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Min: rl("memory", "64Mi")}},
			pod:     corev1.PodSpec{Containers: []corev1.Container{container("a", rl("memory", "32Mi"), nil)}},
			wantErr: "minimum memory usage per Container is 64Mi, but request is 32Mi",
		},
		{
			name:    "no request with min",
			items:   []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Min: rl("cpu", "10m")}},
			pod:     corev1.PodSpec{Containers: []corev1.Container{container("a", nil, nil)}},
			wantErr: "minimum cpu usage per Container is 10m.  No request is specified",
		},
		{
			name:    "ratio exceeded",
			items:   []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("cpu", "2")}},
			pod:     corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m"), rl("cpu", "300m"))}},
			wantErr: "cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000",
		},
		{
			name:  "ratio within bound",
			items: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("cpu", "2")}},
			pod:   corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m"), rl("cpu", "200m"))}},
		},
		{
			name:    "pod total limit over pod max",
			items:   []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Max: rl("cpu", "500m")}},
			pod:     corev1.PodSpec{Containers: []corev1.Container{container("a", nil, rl("cpu", "300m")), container("b", nil, rl("cpu", "300m"))}},
			wantErr: "maximum cpu usage per Pod is 500m, but limit is 600m",
		},
		{
			name:  "pod max counts init containers as the larger of them and the sum",
			items: []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Max: rl("cpu", "500m")}},
			pod: corev1.PodSpec{
				InitContainers: []corev1.Container{container("i", nil, rl("cpu", "450m"))},
				Containers:     []corev1.Container{container("a", nil, rl("cpu", "200m")), container("b", nil, rl("cpu", "200m"))},
			},
		},
		{
			name:  "pod max counts sidecars on top of containers",
			items: []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Max: rl("cpu", "500m")}},
			pod: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Limits: rl("cpu", "200m")}}},
				Containers:     []corev1.Container{container("a", nil, rl("cpu", "400m"))},
			},
			wantErr: "maximum cpu usage per Pod is 500m, but limit is 600m",
		},
		{
			name: "several violations aggregated",
			items: []corev1.LimitRangeItem{
				{Type: corev1.LimitTypeContainer, Max: rl("cpu", "500m")},
				{Type: corev1.LimitTypePod, Max: rl("cpu", "500m")},
			},
			pod:     corev1.PodSpec{Containers: []corev1.Container{container("a", nil, rl("cpu", "1"))}},
			wantErr: "[maximum cpu usage per Container is 500m, but limit is 1, maximum cpu usage per Pod is 500m, but limit is 1]",
		},
		{
			name:  "PVC items ignored for pods",
			items: []corev1.LimitRangeItem{{Type: corev1.LimitTypePersistentVolumeClaim, Max: rl("storage", "1Gi")}},
			pod:   corev1.PodSpec{Containers: []corev1.Container{container("a", nil, nil)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t, []*corev1.LimitRange{limitRange(tc.items...)})
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: tc.pod}
			err := admitAndValidate(p, podAttrs(pod, admission.Create, "", nil))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("admission: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("error = %v, want Forbidden", err)
			}
			want := `pods "p" is forbidden: ` + tc.wantErr
			if err.Error() != want {
				t.Errorf("error = %q\nwant    %q", err.Error(), want)
			}
		})
	}
}

func TestValidatePVC(t *testing.T) {
	lr := limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: rl("storage", "1Gi"), Max: rl("storage", "10Gi")})
	tests := []struct {
		name    string
		request corev1.ResourceList
		wantErr string
	}{
		{name: "within", request: rl("storage", "5Gi")},
		{name: "over max", request: rl("storage", "20Gi"), wantErr: "maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"},
		{name: "under min", request: rl("storage", "100Mi"), wantErr: "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 100Mi"},
		{name: "no request", wantErr: "[minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t, []*corev1.LimitRange{lr})
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns},
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: tc.request}}}
			a := admission.NewAttributesRecord(pvc, nil, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), ns, "c",
				corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), "", admission.Create, nil, false, nil)
			err := admitAndValidate(p, a)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("admission: %v", err)
				}
				return
			}
			want := `persistentvolumeclaims "c" is forbidden: ` + tc.wantErr
			if !apierrors.IsForbidden(err) || err.Error() != want {
				t.Errorf("error = %v\nwant Forbidden %q", err, want)
			}
		})
	}
}

func TestWhichRequestsAreHandled(t *testing.T) {
	strict := limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "100m"), Default: rl("cpu", "50m")})
	big := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, ResourceVersion: "1"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", nil, rl("cpu", "1"))}}}
	}
	deleting := big()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	tests := []struct {
		name    string
		attrs   admission.Attributes
		wantErr bool
	}{
		{name: "create", attrs: podAttrs(big(), admission.Create, "", nil), wantErr: true},
		{name: "update of pod proper skipped", attrs: podAttrs(big(), admission.Update, "", big())},
		{name: "resize checked", attrs: podAttrs(big(), admission.Update, "resize", big()), wantErr: true},
		{name: "status skipped", attrs: podAttrs(big(), admission.Update, "status", big())},
		{name: "resize of a deleting pod skipped", attrs: podAttrs(big(), admission.Update, "resize", deleting)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t, []*corev1.LimitRange{strict})
			err := admitAndValidate(p, tc.attrs)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestLiveLookup(t *testing.T) {
	lr := limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "300m")})
	p, client := newPlugin(t, nil, lr)
	fakeClock := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	p.clock = fakeClock

	lists := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "limitranges" {
				n++
			}
		}
		return n
	}
	admit := func() *corev1.Pod {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
		if err := p.Admit(context.Background(), podAttrs(pod, admission.Create, "", nil), nil); err != nil {
			t.Fatal(err)
		}
		return pod
	}

	pod := admit()
	if got := pod.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; got.Cmp(resource.MustParse("300m")) != 0 {
		t.Errorf("default from live lookup not applied: limits %v", pod.Spec.Containers[0].Resources.Limits)
	}
	if n := lists(); n != 1 {
		t.Fatalf("lists after first admit = %d, want 1", n)
	}
	fakeClock.SetTime(fakeClock.Now().Add(29 * time.Second))
	admit()
	if n := lists(); n != 1 {
		t.Errorf("lists within TTL = %d, want 1 (cached)", n)
	}
	fakeClock.SetTime(fakeClock.Now().Add(2 * time.Second))
	admit()
	if n := lists(); n != 2 {
		t.Errorf("lists after TTL = %d, want 2", n)
	}
}

func TestCachedLimitRangeAvoidsAPI(t *testing.T) {
	lr := limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "300m")})
	p, client := newPlugin(t, []*corev1.LimitRange{lr})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	if err := admitAndValidate(p, podAttrs(pod, admission.Create, "", nil)); err != nil {
		t.Fatal(err)
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("API calls = %d, want 0", n)
	}
	if !strings.Contains(pod.Annotations[AnnotationKey], "cpu limit for container a") {
		t.Errorf("annotation = %q", pod.Annotations[AnnotationKey])
	}
}
