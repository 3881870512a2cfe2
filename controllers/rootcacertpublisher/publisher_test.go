package rootcacertpublisher

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/k1s/k1s/controllers/manager"
	managertesting "github.com/k1s/k1s/controllers/manager/testing"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func namespace(name string, phase corev1.NamespacePhase, deleting bool) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
	if deleting {
		now := metav1.Now()
		ns.DeletionTimestamp = &now
	}
	return ns
}

func configMap(ns string, data map[string]string, annotations map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ConfigMapName, Annotations: annotations, Labels: map[string]string{"keep": "me"}, ResourceVersion: "7"},
		Data:       data,
	}
}

func TestSync(t *testing.T) {
	good := map[string]string{DataKey: testCA}
	described := map[string]string{DescriptionAnnotation: Description}
	terminating := apierrors.NewForbidden(corev1.Resource("configmaps"), ConfigMapName, errors.New("namespace is terminating"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}

	tests := []struct {
		name      string
		ns        *corev1.Namespace
		cm        *corev1.ConfigMap
		reactErr  error // returned by create and update
		wantVerb  string
		wantAnnot map[string]string
		wantErr   bool
	}{
		{
			name:      "missing configmap is created",
			ns:        namespace("apps", corev1.NamespaceActive, false),
			wantVerb:  "create",
			wantAnnot: described,
		},
		{
			name: "correct configmap is left alone",
			ns:   namespace("apps", corev1.NamespaceActive, false),
			cm:   configMap("apps", good, described),
		},
		{
			name: "any description counts",
			ns:   namespace("apps", corev1.NamespaceActive, false),
			cm:   configMap("apps", good, map[string]string{DescriptionAnnotation: "mine"}),
		},
		{
			name:      "edited bundle is restored, other annotations kept",
			ns:        namespace("apps", corev1.NamespaceActive, false),
			cm:        configMap("apps", map[string]string{DataKey: "forged"}, map[string]string{DescriptionAnnotation: Description, "x": "y"}),
			wantVerb:  "update",
			wantAnnot: map[string]string{DescriptionAnnotation: Description, "x": "y"},
		},
		{
			name:      "extra keys are removed",
			ns:        namespace("apps", corev1.NamespaceActive, false),
			cm:        configMap("apps", map[string]string{DataKey: testCA, "other": "x"}, described),
			wantVerb:  "update",
			wantAnnot: described,
		},
		{
			name:      "missing description is added",
			ns:        namespace("apps", corev1.NamespaceActive, false),
			cm:        configMap("apps", good, nil),
			wantVerb:  "update",
			wantAnnot: described,
		},
		{
			name: "terminating namespace is left alone",
			ns:   namespace("apps", corev1.NamespaceTerminating, true),
		},
		{
			name: "namespace with a deletion timestamp is left alone",
			ns:   namespace("apps", corev1.NamespaceActive, true),
			cm:   configMap("apps", map[string]string{DataKey: "forged"}, nil),
		},
		{
			name: "unknown namespace is ignored",
		},
		{
			name:      "namespace began terminating during create",
			ns:        namespace("apps", corev1.NamespaceActive, false),
			reactErr:  terminating,
			wantVerb:  "create",
			wantAnnot: described,
		},
		{
			name:      "create failure is retried",
			ns:        namespace("apps", corev1.NamespaceActive, false),
			reactErr:  apierrors.NewInternalError(errors.New("etcd down")),
			wantVerb:  "create",
			wantAnnot: described,
			wantErr:   true,
		},
		{
			name:      "update conflict is retried",
			ns:        namespace("apps", corev1.NamespaceActive, false),
			cm:        configMap("apps", nil, nil),
			reactErr:  apierrors.NewConflict(corev1.Resource("configmaps"), ConfigMapName, errors.New("changed")),
			wantVerb:  "update",
			wantAnnot: described,
			wantErr:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.cm != nil {
				objs = append(objs, tt.cm)
			}
			client := fake.NewClientset(objs...)
			if tt.reactErr != nil {
				client.PrependReactor("*", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.reactErr
				})
			}
			factory := informers.NewSharedInformerFactory(client, 0)
			p, err := New(client, factory.Core().V1().ConfigMaps(), factory.Core().V1().Namespaces(), []byte(testCA))
			if err != nil {
				t.Fatal(err)
			}
			if tt.ns != nil {
				_ = factory.Core().V1().Namespaces().Informer().GetIndexer().Add(tt.ns)
			}
			var cached *corev1.ConfigMap
			if tt.cm != nil {
				cached = tt.cm.DeepCopy()
				_ = factory.Core().V1().ConfigMaps().Informer().GetIndexer().Add(cached)
			}
			err = p.sync(context.Background(), "apps")
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync error = %v, want error %v", err, tt.wantErr)
			}
			actions := client.Actions()
			if tt.wantVerb == "" {
				if len(actions) != 0 {
					t.Fatalf("actions = %v, want none", actions)
				}
				return
			}
			if len(actions) != 1 || actions[0].GetVerb() != tt.wantVerb || actions[0].GetNamespace() != "apps" {
				t.Fatalf("actions = %v, want one %s in apps", actions, tt.wantVerb)
			}
			var got *corev1.ConfigMap
			switch a := actions[0].(type) {
			case clienttesting.CreateAction:
				got = a.GetObject().(*corev1.ConfigMap)
			case clienttesting.UpdateAction:
				got = a.GetObject().(*corev1.ConfigMap)
			}
			if got.Name != ConfigMapName || got.Namespace != "apps" {
				t.Errorf("wrote %s/%s", got.Namespace, got.Name)
			}
			if !maps.Equal(got.Data, good) {
				t.Errorf("data = %v, want %v", got.Data, good)
			}
			if !maps.Equal(got.Annotations, tt.wantAnnot) {
				t.Errorf("annotations = %v, want %v", got.Annotations, tt.wantAnnot)
			}
			if tt.wantVerb == "update" {
				if got.ResourceVersion != "7" || got.Labels["keep"] != "me" {
					t.Errorf("update lost metadata: rv %q labels %v", got.ResourceVersion, got.Labels)
				}
				if !maps.Equal(cached.Data, tt.cm.Data) || !maps.Equal(cached.Annotations, tt.cm.Annotations) {
					t.Errorf("the cached configmap was mutated: %+v", cached)
				}
			}
		})
	}
}

func TestNewRejectsEmptyBundle(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	if _, err := New(client, factory.Core().V1().ConfigMaps(), factory.Core().V1().Namespaces(), nil); err == nil {
		t.Fatal("New accepted an empty bundle")
	}
}

// TestRunRestores runs the publisher on informers: a namespace gets the
// ConfigMap, an edit is reverted and a deletion is undone.
func TestRunRestores(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(namespace("apps", corev1.NamespaceActive, false))
	writes := make(chan string, 10)
	client.PrependReactor("*", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if v := a.GetVerb(); v == "create" || v == "update" {
			writes <- v
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	p, err := New(client, factory.Core().V1().ConfigMaps(), factory.Core().V1().Namespaces(), []byte(testCA))
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 10)
	if _, err := factory.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { seen <- "add" },
		UpdateFunc: func(any, any) { seen <- "update" },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- p.Run(ctx, 1) }()

	expect := func(ch chan string, want string) {
		t.Helper()
		select {
		case got := <-ch:
			if got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s", want)
		}
	}
	expect(writes, "create")
	expect(seen, "add")

	cm, err := client.CoreV1().ConfigMaps("apps").Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[DataKey] = "forged"
	if _, err := client.CoreV1().ConfigMaps("apps").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(writes, "update") // the edit itself
	expect(writes, "update") // the publisher's repair
	cm, err = client.CoreV1().ConfigMaps("apps").Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil || cm.Data[DataKey] != testCA {
		t.Fatalf("after repair: %v, %v", cm, err)
	}

	if err := client.CoreV1().ConfigMaps("apps").Delete(ctx, ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(writes, "create")

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v on cancel, want nil", err)
	}
	factory.Shutdown()
}

func TestDescriptor(t *testing.T) {
	d := Descriptor([]byte(testCA))
	if d.Name != "root-ca-certificate-publisher-controller" || d.ServiceAccount != "root-ca-cert-publisher" || d.DisabledByDefault {
		t.Errorf("descriptor = %+v", d)
	}
	client := fake.NewClientset()
	builder := &managertesting.ClientBuilder{Clientset: client}
	var runs int
	cc := manager.ControllerContext{
		ServiceAccount:  d.ServiceAccount,
		ClientBuilder:   builder,
		InformerFactory: informers.NewSharedInformerFactory(client, 0),
		Go:              func(func(context.Context) error) { runs++ },
	}
	if err := d.Start(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	if got := builder.Names(); len(got) != 1 || got[0] != "root-ca-cert-publisher" {
		t.Errorf("clients asked for %v, want [root-ca-cert-publisher]", got)
	}
	if runs != 1 {
		t.Errorf("Go called %d times, want 1", runs)
	}
	if err := Descriptor(nil).Start(context.Background(), cc); err == nil {
		t.Error("Start with an empty bundle succeeded")
	}
}
