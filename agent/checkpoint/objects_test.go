package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestFetch(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: "3"}, Data: map[string]string{"k": "v"}}
	gr := schema.GroupResource{Resource: "configmaps"}
	steps := []struct {
		name    string
		obj     *corev1.ConfigMap
		err     error
		wantErr bool
		wantV   string // "" : nil object
		kept    bool
	}{
		{"unreachable, nothing kept", nil, errRefused, true, "", false},
		{"answered", cm, nil, false, "v", true},
		{"unreachable, kept copy", nil, errRefused, false, "v", true},
		{"forbidden", nil, apierrors.NewForbidden(gr, "cm", errors.New("no")), true, "", true},
		{"not found removes it", nil, apierrors.NewNotFound(gr, "cm"), true, "", false},
		{"unreachable after removal", nil, errRefused, true, "", false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got, err := Fetch(ctx, s, ConfigMaps, "ns", "cm", func() (*corev1.ConfigMap, error) { return st.obj, st.err })
			if (err != nil) != st.wantErr {
				t.Errorf("err = %v, want error %v", err, st.wantErr)
			}
			if st.wantV == "" && got != nil || st.wantV != "" && (got == nil || got.Data["k"] != st.wantV) {
				t.Errorf("got %+v, want data %q", got, st.wantV)
			}
			if ok, _ := s.Get(ConfigMaps, "ns", "cm", &corev1.ConfigMap{}); ok != st.kept {
				t.Errorf("kept = %v, want %v", ok, st.kept)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}}
	var answer struct {
		tok string
		exp time.Time
		err error
	}
	req := s.Tokens(func(context.Context, string, string, []string, int64, *corev1.Pod) (string, time.Time, error) {
		return answer.tok, answer.exp, answer.err
	})
	ctx := context.Background()
	answer.err = errRefused
	if _, _, err := req(ctx, "ns", "default", nil, 3600, p); err == nil {
		t.Error("no token kept, unreachable: want the error")
	}
	answer.tok, answer.exp, answer.err = "T1", time.Now().Add(time.Hour), nil
	if tok, _, err := req(ctx, "ns", "default", nil, 3600, p); err != nil || tok != "T1" {
		t.Fatalf("issued: %q, %v", tok, err)
	}
	answer.err = errRefused
	if tok, _, err := req(ctx, "ns", "default", nil, 3600, p); err != nil || tok != "T1" {
		t.Errorf("unreachable: %q, %v; want the kept token", tok, err)
	}
	if _, _, err := req(ctx, "ns", "default", []string{"other"}, 3600, p); err == nil {
		t.Error("another audience got the kept token")
	}
	answer.err = apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "default", errors.New("no"))
	if _, _, err := req(ctx, "ns", "default", nil, 3600, p); err == nil {
		t.Error("a refusal was answered from the checkpoint")
	}
	// An expired token is not handed out.
	answer.tok, answer.exp, answer.err = "T2", time.Now().Add(-time.Second), nil
	_, _, _ = req(ctx, "ns", "default", nil, 3600, p)
	answer.err = errRefused
	if tok, _, err := req(ctx, "ns", "default", nil, 3600, p); err == nil {
		t.Errorf("expired token %q handed out", tok)
	}
}

func TestPruneUnreferenced(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
			{Name: "pr", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}}}}}},
		},
		Containers: []corev1.Container{{Name: "c",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}}}},
			Env:     []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}}}}}}},
	}}
	if err := s.Replace(Pods, []Object{{"ns", "p", p}}); err != nil {
		t.Fatal(err)
	}
	for _, kn := range [][3]string{
		{ConfigMaps, "ns", "vol-cm"}, {ConfigMaps, "ns", "env-cm"}, {ConfigMaps, "ns", "gone"}, {ConfigMaps, "other", "vol-cm"},
		{Secrets, "ns", "proj-secret"}, {Secrets, "ns", "env-secret"}, {Secrets, "ns", "gone"},
		{Tokens, "ns", "u1.abc"}, {Tokens, "ns", "u2.abc"},
	} {
		if _, err := s.Put(kn[0], kn[1], kn[2], value{"x"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PruneUnreferenced(); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(s.Names(ConfigMaps), s.Names(Secrets), s.Names(Tokens))
	want := "[[ns env-cm] [ns vol-cm]] [[ns env-secret] [ns proj-secret]] [[ns u1.abc]]"
	if got != want {
		t.Errorf("after pruning: %s, want %s", got, want)
	}
	// The pod gone, everything of it goes.
	if err := s.Replace(Pods, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PruneUnreferenced(); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Names(ConfigMaps)) + len(s.Names(Secrets)) + len(s.Names(Tokens)); n != 0 {
		t.Errorf("%d objects left without pods", n)
	}
}

// Once the apiservers are known to be unreachable, the kept copy answers
// without a question to them; a successful list ends that.
func TestFetchWhileOffline(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"k": "v"}}
	asked := 0
	get := func() (*corev1.ConfigMap, error) { asked++; return nil, errRefused }
	if _, err := Fetch(ctx, s, ConfigMaps, "ns", "cm", func() (*corev1.ConfigMap, error) { return cm, nil }); err != nil {
		t.Fatal(err)
	}
	s.MarkUnreachable()
	if got, err := Fetch(ctx, s, ConfigMaps, "ns", "cm", get); err != nil || got.Data["k"] != "v" || asked != 0 {
		t.Errorf("offline: %v, %v, asked %d times", got, err, asked)
	}
	if _, err := Fetch(ctx, s, ConfigMaps, "ns", "other", get); err == nil || asked != 1 {
		t.Errorf("offline, not kept: %v, asked %d times", err, asked)
	}
	s.offline.Store(false)
	if _, err := Fetch(ctx, s, ConfigMaps, "ns", "cm", get); err != nil || asked != 2 {
		t.Errorf("online again: %v, asked %d times", err, asked)
	}
}
