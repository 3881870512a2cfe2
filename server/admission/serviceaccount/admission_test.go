package serviceaccount

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

const ns = "ns"

// newPlugin returns a plugin whose informer cache holds cached and whose
// API (fake clientset) holds live; API retries do not wait.
func newPlugin(t *testing.T, cached []*corev1.ServiceAccount, live ...runtime.Object) (*Plugin, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(live...)
	factory := informers.NewSharedInformerFactory(client, 0)
	p, err := New(client, factory)
	if err != nil {
		t.Fatal(err)
	}
	indexer := factory.Core().V1().ServiceAccounts().Informer().GetIndexer()
	for _, sa := range cached {
		if err := indexer.Add(sa); err != nil {
			t.Fatal(err)
		}
	}
	p.makeName = func(prefix string) string { return prefix + "abcde" }
	p.retryWait = func() time.Duration { return 0 }
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p, client
}

func sa(name string, mutate ...func(*corev1.ServiceAccount)) *corev1.ServiceAccount {
	s := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func createAttrs(pod *corev1.Pod) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), ns, pod.Name,
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
}

func basicPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers:     []corev1.Container{{Name: "a"}, {Name: "b"}},
		},
	}
}

var tokenMount = corev1.VolumeMount{Name: "kube-api-access-abcde", ReadOnly: true, MountPath: DefaultAPITokenMountPath}

var tokenVolume = corev1.Volume{
	Name: "kube-api-access-abcde",
	VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}},
}

func TestAdmit(t *testing.T) {
	withAutomount := func(v bool) func(*corev1.ServiceAccount) {
		return func(s *corev1.ServiceAccount) { s.AutomountServiceAccountToken = ptr.To(v) }
	}
	withPullSecrets := func(s *corev1.ServiceAccount) {
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg1"}, {Name: "reg2"}}
	}
	tests := []struct {
		name       string
		cached     []*corev1.ServiceAccount
		pod        func() *corev1.Pod
		wantErr    string
		wantSA     string
		wantVols   []corev1.Volume
		wantMounts map[string][]corev1.VolumeMount // container name -> mounts
		wantPull   []corev1.LocalObjectReference
	}{
		{
			name:     "defaults to default SA and mounts the token everywhere",
			cached:   []*corev1.ServiceAccount{sa("default")},
			pod:      basicPod,
			wantSA:   "default",
			wantVols: []corev1.Volume{tokenVolume},
			wantMounts: map[string][]corev1.VolumeMount{
				"init": {tokenMount}, "a": {tokenMount}, "b": {tokenMount},
			},
		},
		{
			name:    "named SA missing is rejected",
			cached:  []*corev1.ServiceAccount{sa("default")},
			pod:     func() *corev1.Pod { p := basicPod(); p.Spec.ServiceAccountName = "builder"; return p },
			wantErr: `error looking up service account ns/builder: serviceaccounts "builder" not found`,
		},
		{
			name:    "default SA missing is rejected",
			pod:     basicPod,
			wantErr: `error looking up service account ns/default: serviceaccounts "default" not found`,
		},
		{
			name:   "pod automount false: nothing mounted",
			cached: []*corev1.ServiceAccount{sa("default")},
			pod: func() *corev1.Pod {
				p := basicPod()
				p.Spec.AutomountServiceAccountToken = ptr.To(false)
				return p
			},
			wantSA:     "default",
			wantMounts: map[string][]corev1.VolumeMount{"init": nil, "a": nil, "b": nil},
		},
		{
			name:       "SA automount false: nothing mounted",
			cached:     []*corev1.ServiceAccount{sa("default", withAutomount(false))},
			pod:        basicPod,
			wantSA:     "default",
			wantMounts: map[string][]corev1.VolumeMount{"init": nil, "a": nil, "b": nil},
		},
		{
			name:   "pod automount true beats SA automount false",
			cached: []*corev1.ServiceAccount{sa("default", withAutomount(false))},
			pod: func() *corev1.Pod {
				p := basicPod()
				p.Spec.AutomountServiceAccountToken = ptr.To(true)
				return p
			},
			wantSA:     "default",
			wantVols:   []corev1.Volume{tokenVolume},
			wantMounts: map[string][]corev1.VolumeMount{"init": {tokenMount}, "a": {tokenMount}, "b": {tokenMount}},
		},
		{
			name:   "container with its own mount at the path is skipped",
			cached: []*corev1.ServiceAccount{sa("default")},
			pod: func() *corev1.Pod {
				p := basicPod()
				p.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: DefaultAPITokenMountPath}}
				return p
			},
			wantSA:   "default",
			wantVols: []corev1.Volume{tokenVolume},
			wantMounts: map[string][]corev1.VolumeMount{
				"init": {tokenMount}, "a": {tokenMount},
				"b": {{Name: "mine", MountPath: DefaultAPITokenMountPath}},
			},
		},
		{
			name:   "every container mounts the path itself: no volume added",
			cached: []*corev1.ServiceAccount{sa("default")},
			pod: func() *corev1.Pod {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}}
				p.Spec.Containers = []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: DefaultAPITokenMountPath}}}}
				return p
			},
			wantSA:     "default",
			wantMounts: map[string][]corev1.VolumeMount{"a": {{Name: "mine", MountPath: DefaultAPITokenMountPath}}},
		},
		{
			name:   "existing kube-api-access volume is reused",
			cached: []*corev1.ServiceAccount{sa("default")},
			pod: func() *corev1.Pod {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}}
				p.Spec.Containers = []corev1.Container{{Name: "a"}}
				p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-zzzzz", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				return p
			},
			wantSA:     "default",
			wantVols:   []corev1.Volume{{Name: "kube-api-access-zzzzz", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			wantMounts: map[string][]corev1.VolumeMount{"a": {{Name: "kube-api-access-zzzzz", ReadOnly: true, MountPath: DefaultAPITokenMountPath}}},
		},
		{
			name:   "image pull secrets copied from SA when pod has none",
			cached: []*corev1.ServiceAccount{sa("default", withAutomount(false), withPullSecrets)},
			pod:    basicPod,
			wantSA: "default",
			wantMounts: map[string][]corev1.VolumeMount{
				"init": nil, "a": nil, "b": nil,
			},
			wantPull: []corev1.LocalObjectReference{{Name: "reg1"}, {Name: "reg2"}},
		},
		{
			name:   "pod's own image pull secrets are kept",
			cached: []*corev1.ServiceAccount{sa("default", withAutomount(false), withPullSecrets)},
			pod: func() *corev1.Pod {
				p := basicPod()
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mine"}}
				return p
			},
			wantSA:     "default",
			wantMounts: map[string][]corev1.VolumeMount{"init": nil, "a": nil, "b": nil},
			wantPull:   []corev1.LocalObjectReference{{Name: "mine"}},
		},
		{
			name: "enforced mountable secrets: unlisted secret volume rejected",
			cached: []*corev1.ServiceAccount{sa("default", withAutomount(false), func(s *corev1.ServiceAccount) {
				s.Annotations = map[string]string{EnforceMountableSecretsAnnotation: "true"}
				s.Secrets = []corev1.ObjectReference{{Name: "allowed"}}
			})},
			pod: func() *corev1.Pod {
				p := basicPod()
				p.Spec.Volumes = []corev1.Volume{
					{Name: "ok", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "allowed"}}},
					{Name: "bad", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "other"}}},
				}
				return p
			},
			wantErr: `volume with secret.secretName="other" is not allowed because service account default does not reference that secret`,
		},
		{
			name: "enforced mountable secrets: unlisted env secret rejected",
			cached: []*corev1.ServiceAccount{sa("default", withAutomount(false), func(s *corev1.ServiceAccount) {
				s.Annotations = map[string]string{EnforceMountableSecretsAnnotation: "true"}
			})},
			pod: func() *corev1.Pod {
				p := basicPod()
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s1"}}}}
				return p
			},
			wantErr: `container a with envFrom referencing secret.secretName="s1" is not allowed because service account default does not reference that secret`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t, tc.cached)
			pod := tc.pod()
			err := p.Admit(context.Background(), createAttrs(pod), nil)
			if tc.wantErr != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want Forbidden containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if pod.Spec.ServiceAccountName != tc.wantSA || pod.Spec.DeprecatedServiceAccount != tc.wantSA { //nolint:staticcheck // checking the alias
				t.Errorf("serviceAccountName=%q serviceAccount=%q, want %q", pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount, tc.wantSA) //nolint:staticcheck // checking the alias
			}
			if !apiequality.Semantic.DeepEqual(pod.Spec.Volumes, tc.wantVols) {
				t.Errorf("volumes = %+v\nwant %+v", pod.Spec.Volumes, tc.wantVols)
			}
			for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
				if !apiequality.Semantic.DeepEqual(c.VolumeMounts, tc.wantMounts[c.Name]) {
					t.Errorf("container %s mounts = %+v, want %+v", c.Name, c.VolumeMounts, tc.wantMounts[c.Name])
				}
			}
			if !apiequality.Semantic.DeepEqual(pod.Spec.ImagePullSecrets, tc.wantPull) {
				t.Errorf("imagePullSecrets = %+v, want %+v", pod.Spec.ImagePullSecrets, tc.wantPull)
			}
		})
	}
}

func TestGeneratedVolumeName(t *testing.T) {
	client := fake.NewClientset(sa("default"))
	p, err := New(client, informers.NewSharedInformerFactory(client, 0))
	if err != nil {
		t.Fatal(err)
	}
	pod := basicPod()
	if err := p.Admit(context.Background(), createAttrs(pod), nil); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Volumes) != 1 {
		t.Fatalf("volumes = %+v", pod.Spec.Volumes)
	}
	name := pod.Spec.Volumes[0].Name
	if !strings.HasPrefix(name, TokenVolumeNamePrefix) || len(name) != len(TokenVolumeNamePrefix)+5 {
		t.Errorf("volume name %q is not kube-api-access- plus 5 characters", name)
	}
	if got := pod.Spec.Containers[0].VolumeMounts[0].Name; got != name {
		t.Errorf("mount refers to %q, volume is %q", got, name)
	}
}

// The informer has not seen the ServiceAccount yet: the API is asked, once
// for a named account and up to ten times for "default".
func TestLiveLookup(t *testing.T) {
	tests := []struct {
		name      string
		saName    string
		live      []runtime.Object
		wantErr   bool
		wantCalls int
	}{
		{name: "found in API", saName: "builder", live: []runtime.Object{sa("builder")}, wantCalls: 1},
		{name: "named absent: one lookup", saName: "builder", wantErr: true, wantCalls: 1},
		{name: "default absent: ten lookups", saName: "", wantErr: true, wantCalls: 10},
		{name: "default in API", saName: "", live: []runtime.Object{sa("default")}, wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, client := newPlugin(t, nil, tc.live...)
			pod := basicPod()
			pod.Spec.ServiceAccountName = tc.saName
			err := p.Admit(context.Background(), createAttrs(pod), nil)
			if tc.wantErr != (err != nil) {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			gets := 0
			for _, act := range client.Actions() {
				if act.GetVerb() == "get" && act.GetResource().Resource == "serviceaccounts" {
					gets++
				}
			}
			// Admit validates at its end, which looks the account up again
			// when it was found.
			if !tc.wantErr {
				tc.wantCalls *= 2
			}
			if gets != tc.wantCalls {
				t.Errorf("API gets = %d, want %d", gets, tc.wantCalls)
			}
		})
	}
}

func TestLiveLookupHonoursContext(t *testing.T) {
	p, _ := newPlugin(t, nil)
	p.retryWait = func() time.Duration { return time.Hour }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := p.Admit(ctx, createAttrs(basicPod()), nil)
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("error = %v, want context canceled", err)
	}
}

func TestMirrorPods(t *testing.T) {
	mirror := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := basicPod()
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		wantErr string
	}{
		{name: "plain mirror pod admitted unchanged", pod: mirror(nil)},
		{
			name:    "mirror pod naming a service account",
			pod:     mirror(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }),
			wantErr: "a mirror pod may not reference service accounts",
		},
		{
			name: "mirror pod with a secret volume",
			pod: mirror(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
			}),
			wantErr: "a mirror pod may not reference secrets",
		},
		{
			name: "mirror pod with a secret env var in an init container",
			pod: mirror(func(p *corev1.Pod) {
				p.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}
			}),
			wantErr: "a mirror pod may not reference secrets",
		},
		{
			name: "mirror pod with a CSI node publish secret",
			pod: mirror(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "s"}}}}}
			}),
			wantErr: "a mirror pod may not reference secrets",
		},
		{
			name: "mirror pod with an image pull secret",
			pod: mirror(func(p *corev1.Pod) {
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg"}}
			}),
			wantErr: "a mirror pod may not reference secrets",
		},
		{
			name: "mirror pod projecting a token",
			pod: mirror(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()}}}
			}),
			wantErr: "a mirror pod may not use ServiceAccountToken volume projections",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// No ServiceAccount exists at all: mirror pods never need one.
			p, client := newPlugin(t, nil)
			before := tc.pod.DeepCopy()
			for _, step := range []struct {
				name string
				run  func(context.Context, admission.Attributes, admission.ObjectInterfaces) error
			}{{"Admit", p.Admit}, {"Validate", p.Validate}} {
				err := step.run(context.Background(), createAttrs(tc.pod), nil)
				if tc.wantErr == "" && err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				if tc.wantErr != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("%s: error = %v, want Forbidden containing %q", step.name, err, tc.wantErr)
				}
			}
			if !apiequality.Semantic.DeepEqual(before, tc.pod) {
				t.Errorf("mirror pod was changed:\nbefore %+v\nafter  %+v", before.Spec, tc.pod.Spec)
			}
			if n := len(client.Actions()); n != 0 {
				t.Errorf("mirror pod caused %d API calls", n)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		saName  string
		wantErr string
	}{
		{name: "no service account named", wantErr: "no service account specified for pod ns/p"},
		{name: "existing", saName: "default"},
		{name: "missing", saName: "ghost", wantErr: `serviceaccounts "ghost" not found`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t, []*corev1.ServiceAccount{sa("default")})
			pod := basicPod()
			pod.Spec.ServiceAccountName = tc.saName
			err := p.Validate(context.Background(), createAttrs(pod), nil)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if tc.wantErr != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want Forbidden containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestIgnored(t *testing.T) {
	p, client := newPlugin(t, nil)
	pod := basicPod()
	update := admission.NewAttributesRecord(pod, basicPod(), corev1.SchemeGroupVersion.WithKind("Pod"), ns, "p",
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Update, &metav1.UpdateOptions{}, false, nil)
	status := admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), ns, "p",
		corev1.SchemeGroupVersion.WithResource("pods"), "status", admission.Create, &metav1.CreateOptions{}, false, nil)
	other := admission.NewAttributesRecord(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns}}, nil,
		corev1.SchemeGroupVersion.WithKind("ConfigMap"), ns, "c", corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	for _, a := range []admission.Attributes{update, status, other} {
		if err := p.Admit(context.Background(), a, nil); err != nil {
			t.Errorf("Admit %s %s/%s: %v", a.GetOperation(), a.GetResource().Resource, a.GetSubresource(), err)
		}
		if err := p.Validate(context.Background(), a, nil); err != nil {
			t.Errorf("Validate %s %s/%s: %v", a.GetOperation(), a.GetResource().Resource, a.GetSubresource(), err)
		}
	}
	if pod.Spec.ServiceAccountName != "" || len(pod.Spec.Volumes) != 0 {
		t.Errorf("ignored request changed the pod: %+v", pod.Spec)
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("ignored requests caused %d API calls", n)
	}
}

func TestNewRejectsMissingDependencies(t *testing.T) {
	client := fake.NewClientset()
	if _, err := New(nil, informers.NewSharedInformerFactory(client, 0)); err == nil {
		t.Error("New without client succeeded")
	}
	if _, err := New(client, nil); err == nil {
		t.Error("New without factory succeeded")
	}
}
