package scheme

import (
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"
)

func mustTime(t *testing.T, s string) *metav1.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	mt := metav1.NewTime(ts)
	return &mt
}

func TestDecodeQueryPodLogOptions(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		want    corev1.PodLogOptions
		wantErr string
	}{
		{name: "empty", query: "", want: corev1.PodLogOptions{}},
		{
			name:  "everything",
			query: "container=app&follow=true&previous=1&timestamps=yes&sinceSeconds=30&tailLines=10&limitBytes=4096&insecureSkipTLSVerifyBackend=true&stream=Stderr",
			want: corev1.PodLogOptions{Container: "app", Follow: true, Previous: true, Timestamps: true,
				SinceSeconds: ptr.To[int64](30), TailLines: ptr.To[int64](10), LimitBytes: ptr.To[int64](4096),
				InsecureSkipTLSVerifyBackend: true, Stream: ptr.To("Stderr")},
		},
		{name: "false", query: "follow=false&previous=False", want: corev1.PodLogOptions{}},
		{name: "zero", query: "follow=0&timestamps=FALSE", want: corev1.PodLogOptions{}},
		{name: "f is true, as upstream", query: "follow=f&previous=no", want: corev1.PodLogOptions{Follow: true, Previous: true}},
		{name: "present without a value is true", query: "follow=&previous", want: corev1.PodLogOptions{Follow: true, Previous: true}},
		{name: "first of repeated values wins", query: "container=a&container=b&tailLines=1&tailLines=2", want: corev1.PodLogOptions{Container: "a", TailLines: ptr.To[int64](1)}},
		{name: "negative integer", query: "tailLines=-5", want: corev1.PodLogOptions{TailLines: ptr.To[int64](-5)}},
		{name: "unknown parameters ignored", query: "pretty=true&foo=bar", want: corev1.PodLogOptions{}},
		{name: "bad integer", query: "tailLines=ten", wantErr: "tailLines"},
		{name: "bad sinceSeconds", query: "sinceSeconds=1.5", wantErr: "sinceSeconds"},
		{name: "bad time", query: "sinceTime=yesterday", wantErr: "sinceTime"},
		{name: "time without zone", query: "sinceTime=2024-01-02T03:04:05", wantErr: "sinceTime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			var got corev1.PodLogOptions
			err = DecodeQuery(q, &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), "query parameter "+tt.wantErr+":") {
					t.Fatalf("DecodeQuery = %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeQuery: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeQuery mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeQuerySinceTime(t *testing.T) {
	tests := []struct {
		query string
		want  *metav1.Time
	}{
		{"sinceTime=2024-01-02T03:04:05Z", mustTime(t, "2024-01-02T03:04:05Z")},
		{"sinceTime=2024-01-02T05:04:05%2B02:00", mustTime(t, "2024-01-02T03:04:05Z")},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			var got corev1.PodLogOptions
			if err := DecodeQuery(q, &got); err != nil {
				t.Fatalf("DecodeQuery: %v", err)
			}
			if got.SinceTime == nil || !got.SinceTime.Equal(tt.want) {
				t.Errorf("SinceTime = %v, want %v", got.SinceTime, tt.want)
			}
		})
	}
}

func TestDecodeQueryExecAndPortForward(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		into    any
		want    any
		wantErr string
	}{
		{
			name:  "exec command repeated",
			query: "command=sh&command=-c&command=echo+a,b&stdin=true&stdout=1&stderr=false&tty=true&container=c1",
			into:  &corev1.PodExecOptions{},
			want:  &corev1.PodExecOptions{Command: []string{"sh", "-c", "echo a,b"}, Stdin: true, Stdout: true, TTY: true, Container: "c1"},
		},
		{
			name:  "attach",
			query: "stdin=1&stdout=1&tty=0",
			into:  &corev1.PodAttachOptions{},
			want:  &corev1.PodAttachOptions{Stdin: true, Stdout: true},
		},
		{
			name:  "ports comma separated",
			query: "ports=80,443",
			into:  &corev1.PodPortForwardOptions{},
			want:  &corev1.PodPortForwardOptions{Ports: []int32{80, 443}},
		},
		{
			name:  "ports repeated",
			query: "ports=80&ports=443",
			into:  &corev1.PodPortForwardOptions{},
			want:  &corev1.PodPortForwardOptions{Ports: []int32{80, 443}},
		},
		{
			name:  "ports mixed with spaces",
			query: "ports=80,+8080&ports=443",
			into:  &corev1.PodPortForwardOptions{},
			want:  &corev1.PodPortForwardOptions{Ports: []int32{80, 8080, 443}},
		},
		{
			name:    "bad port",
			query:   "ports=80,http",
			into:    &corev1.PodPortForwardOptions{},
			wantErr: `query parameter ports: "http" is not an integer`,
		},
		{
			name:    "port beyond int32",
			query:   "ports=4294967296",
			into:    &corev1.PodPortForwardOptions{},
			wantErr: "query parameter ports:",
		},
		{
			name:  "proxy path",
			query: "path=/healthz",
			into:  &corev1.PodProxyOptions{},
			want:  &corev1.PodProxyOptions{Path: "/healthz"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			err = DecodeQuery(q, tt.into)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeQuery = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeQuery: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.into); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeQueryNotAStruct(t *testing.T) {
	var s string
	for _, out := range []any{corev1.PodLogOptions{}, &s, nil} {
		if err := DecodeQuery(url.Values{}, out); err == nil {
			t.Errorf("DecodeQuery(%T) = nil, want an error", out)
		}
	}
}

// The apiserver decodes options through the parameter codec, which must
// reach DecodeQuery through the registered conversions.
func TestParameterCodec(t *testing.T) {
	q := url.Values{"command": {"ls", "-l"}, "stdout": {"true"}}
	var exec corev1.PodExecOptions
	if err := ParameterCodec.DecodeParameters(q, corev1.SchemeGroupVersion, &exec); err != nil {
		t.Fatalf("DecodeParameters: %v", err)
	}
	if !slices.Equal(exec.Command, []string{"ls", "-l"}) || !exec.Stdout || exec.Stdin {
		t.Errorf("PodExecOptions = %+v", exec)
	}
	var logs corev1.PodLogOptions
	if err := ParameterCodec.DecodeParameters(url.Values{"follow": {"false"}, "tailLines": {"3"}}, corev1.SchemeGroupVersion, &logs); err != nil {
		t.Fatalf("DecodeParameters: %v", err)
	}
	if logs.Follow || logs.TailLines == nil || *logs.TailLines != 3 {
		t.Errorf("PodLogOptions = %+v", logs)
	}
	var pf corev1.PodPortForwardOptions
	if err := ParameterCodec.DecodeParameters(url.Values{"ports": {"bad"}}, corev1.SchemeGroupVersion, &pf); err == nil || !strings.Contains(err.Error(), "ports") {
		t.Errorf("DecodeParameters with a bad port = %v, want an error naming ports", err)
	}
}

func TestFieldLabelConversions(t *testing.T) {
	pod := corev1.SchemeGroupVersion.WithKind("Pod")
	podInternal := schema.GroupVersionKind{Kind: "Pod", Version: runtime.APIVersionInternal}
	coreEvent := corev1.SchemeGroupVersion.WithKind("Event")
	newEvent := eventsv1.SchemeGroupVersion.WithKind("Event")
	tests := []struct {
		name  string
		gvk   schema.GroupVersionKind
		label string
		ok    bool
	}{
		{"pod nodeName", pod, "spec.nodeName", true},
		{"pod phase", pod, "status.phase", true},
		{"pod name", pod, "metadata.name", true},
		{"pod namespace", pod, "metadata.namespace", true},
		{"pod bogus", pod, "spec.bogus", false},
		{"pod labels are not fields", pod, "metadata.labels", false},
		{"internal pod nodeName", podInternal, "spec.nodeName", true},
		{"internal pod bogus", podInternal, "spec.bogus", false},
		{"core event involvedObject.name", coreEvent, "involvedObject.name", true},
		{"core event source", coreEvent, "source", true},
		{"core event has no regarding", coreEvent, "regarding.name", false},
		{"events.k8s.io regarding.name", newEvent, "regarding.name", true},
		{"events.k8s.io reportingController", newEvent, "reportingController", true},
		{"events.k8s.io has no involvedObject", newEvent, "involvedObject.name", false},
		{"secret type", corev1.SchemeGroupVersion.WithKind("Secret"), "type", true},
		{"service type", corev1.SchemeGroupVersion.WithKind("Service"), "spec.type", true},
		{"node unschedulable", corev1.SchemeGroupVersion.WithKind("Node"), "spec.unschedulable", true},
		{"replicaset replicas", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, "status.replicas", true},
		{"job successful", schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, "status.successful", true},
		{"csr signerName", schema.GroupVersionKind{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest"}, "spec.signerName", true},
		{"configmap name (default conversion)", corev1.SchemeGroupVersion.WithKind("ConfigMap"), "metadata.name", true},
		{"configmap data (default conversion)", corev1.SchemeGroupVersion.WithKind("ConfigMap"), "data", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			label, value, err := Scheme.ConvertFieldLabel(tt.gvk, tt.label, "v")
			if !tt.ok {
				if err == nil {
					t.Fatalf("ConvertFieldLabel(%s, %s) accepted an unsupported label", tt.gvk, tt.label)
				}
				if !strings.Contains(err.Error(), tt.label) {
					t.Errorf("error %q does not name the label %s", err, tt.label)
				}
				return
			}
			if err != nil {
				t.Fatalf("ConvertFieldLabel(%s, %s): %v", tt.gvk, tt.label, err)
			}
			if label != tt.label || value != "v" {
				t.Errorf("ConvertFieldLabel = %s=%s, want %s=v", label, value, tt.label)
			}
		})
	}
}

func TestDoubleRegistration(t *testing.T) {
	internal := schema.GroupVersion{Version: runtime.APIVersionInternal}
	tests := []struct {
		name string
		obj  runtime.Object
		gv   schema.GroupVersion
		kind string
	}{
		{"pod", &corev1.Pod{}, corev1.SchemeGroupVersion, "Pod"},
		{"pod list", &corev1.PodList{}, corev1.SchemeGroupVersion, "PodList"},
		{"events.k8s.io event", &eventsv1.Event{}, eventsv1.SchemeGroupVersion, "Event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kinds, _, err := Scheme.ObjectKinds(tt.obj)
			if err != nil {
				t.Fatalf("ObjectKinds: %v", err)
			}
			want := []schema.GroupVersionKind{tt.gv.WithKind(tt.kind), {Group: tt.gv.Group, Version: runtime.APIVersionInternal, Kind: tt.kind}}
			for _, w := range want {
				if !slices.Contains(kinds, w) {
					t.Errorf("ObjectKinds = %v, lacks %v", kinds, w)
				}
			}
		})
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	out, err := Scheme.ConvertToVersion(pod.DeepCopy(), internal)
	if err != nil {
		t.Fatalf("ConvertToVersion internal: %v", err)
	}
	inPod, ok := out.(*corev1.Pod)
	if !ok {
		t.Fatalf("internal form is %T, want *corev1.Pod", out)
	}
	if diff := cmp.Diff(pod.Spec, inPod.Spec); diff != "" {
		t.Errorf("spec changed by conversion to internal:\n%s", diff)
	}
	if diff := cmp.Diff(pod.ObjectMeta, inPod.ObjectMeta); diff != "" {
		t.Errorf("metadata changed by conversion to internal:\n%s", diff)
	}

	back, err := Scheme.ConvertToVersion(inPod, corev1.SchemeGroupVersion)
	if err != nil {
		t.Fatalf("ConvertToVersion v1: %v", err)
	}
	v1Pod, ok := back.(*corev1.Pod)
	if !ok {
		t.Fatalf("v1 form is %T", back)
	}
	if v1Pod.APIVersion != "v1" || v1Pod.Kind != "Pod" {
		t.Errorf("v1 TypeMeta = %+v, want v1 Pod", v1Pod.TypeMeta)
	}
	if diff := cmp.Diff(pod.Status, v1Pod.Status); diff != "" {
		t.Errorf("status changed by round trip:\n%s", diff)
	}

	// Every served group version is registered with priority, the first
	// listed of its group first.
	first := map[string]schema.GroupVersion{}
	for _, gv := range GroupVersions {
		if _, ok := first[gv.Group]; !ok {
			first[gv.Group] = gv
		}
	}
	for _, gv := range GroupVersions {
		if !Scheme.IsVersionRegistered(gv) {
			t.Errorf("%s not registered", gv)
		}
		got := Scheme.PrioritizedVersionsForGroup(gv.Group)
		if len(got) == 0 || got[0] != first[gv.Group] {
			t.Errorf("priority of group %q = %v, want %s first", gv.Group, got, first[gv.Group])
		}
		if !slices.Contains(got, gv) {
			t.Errorf("priority of group %q = %v, lacks %s", gv.Group, got, gv)
		}
	}
}

func newFiller() *randfill.Filler {
	return randfill.New().NilChance(0).NumElements(1, 2).Funcs(
		func(s *string, c randfill.Continue) {
			*s = "s" + c.String(8)
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.Unix(int64(c.Uint64()%1e9)+1, 0)
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(time.Unix(int64(c.Uint64()%1e9)+1, int64(c.Uint64()%1e9)))
		},
	)
}

// assertAllSet fails for every top-level field of obj (but TypeMeta) that is zero.
func assertAllSet(t *testing.T, obj any) {
	t.Helper()
	v := reflect.ValueOf(obj).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Name == "TypeMeta" {
			continue
		}
		if v.Field(i).IsZero() {
			t.Errorf("%T.%s is zero after conversion", obj, f.Name)
		}
	}
}

func TestEventConversionRoundTrip(t *testing.T) {
	f := newFiller()
	for i := 0; i < 20; i++ {
		var core corev1.Event
		f.Fill(&core)
		core.TypeMeta = metav1.TypeMeta{}
		assertAllSet(t, &core)

		var ev eventsv1.Event
		CoreEventToEventsV1(&core, &ev)
		assertAllSet(t, &ev)
		var back corev1.Event
		EventsV1ToCoreEvent(&ev, &back)
		if diff := cmp.Diff(core, back); diff != "" {
			t.Fatalf("core → events.k8s.io → core changed the event (-want +got):\n%s", diff)
		}

		var ev2 eventsv1.Event
		f.Fill(&ev2)
		ev2.TypeMeta = metav1.TypeMeta{}
		var core2 corev1.Event
		EventsV1ToCoreEvent(&ev2, &core2)
		assertAllSet(t, &core2)
		var ev2back eventsv1.Event
		CoreEventToEventsV1(&core2, &ev2back)
		if diff := cmp.Diff(ev2, ev2back); diff != "" {
			t.Fatalf("events.k8s.io → core → events.k8s.io changed the event (-want +got):\n%s", diff)
		}
	}
}

func TestEventConversionFieldMapping(t *testing.T) {
	core := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Name: "p"},
		Message:             "hello",
		Source:              corev1.EventSource{Component: "kubelet", Host: "n1"},
		Count:               3,
		Series:              &corev1.EventSeries{Count: 2},
		ReportingController: "k1s.io/agent",
	}
	var ev eventsv1.Event
	if err := Scheme.Convert(core, &ev, nil); err != nil {
		t.Fatalf("Scheme.Convert core → events.k8s.io: %v", err)
	}
	if ev.Note != "hello" || ev.Regarding.Name != "p" || ev.DeprecatedSource.Host != "n1" || ev.DeprecatedCount != 3 ||
		ev.Series == nil || ev.Series.Count != 2 || ev.ReportingController != "k1s.io/agent" || ev.Name != "e" {
		t.Errorf("converted event = %+v", ev)
	}
	// A nil series stays nil both ways, even over a filled target.
	core.Series = nil
	if err := Scheme.Convert(core, &ev, nil); err != nil {
		t.Fatal(err)
	}
	if ev.Series != nil {
		t.Errorf("Series = %+v, want nil", ev.Series)
	}
	back := &corev1.Event{Series: &corev1.EventSeries{Count: 9}}
	if err := Scheme.Convert(&ev, back, nil); err != nil {
		t.Fatalf("Scheme.Convert events.k8s.io → core: %v", err)
	}
	if back.Series != nil || back.Message != "hello" || back.InvolvedObject.Name != "p" {
		t.Errorf("converted back = %+v", back)
	}
}

func TestDefaulting(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	Scheme.Default(pod)
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restartPolicy = %q, want Always", pod.Spec.RestartPolicy)
	}
	if pod.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("dnsPolicy = %q, want ClusterFirst", pod.Spec.DNSPolicy)
	}
	if c := pod.Spec.Containers[0]; c.TerminationMessagePath != corev1.TerminationMessagePathDefault || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("container defaults = path %q pull %q", c.TerminationMessagePath, c.ImagePullPolicy)
	}
	// An explicit value is kept.
	pod = &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}
	Scheme.Default(pod)
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q, want Never kept", pod.Spec.RestartPolicy)
	}
}
