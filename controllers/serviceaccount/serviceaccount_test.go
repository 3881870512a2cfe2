package serviceaccount

import (
	"context"
	"errors"
	"reflect"
	"slices"
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

func namespace(name string, phase corev1.NamespacePhase, deleting bool) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
	if deleting {
		now := metav1.Now()
		ns.DeletionTimestamp = &now
	}
	return ns
}

func serviceAccount(ns, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestSync(t *testing.T) {
	terminating := apierrors.NewForbidden(corev1.Resource("serviceaccounts"), "default", errors.New("namespace is terminating"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	tests := []struct {
		name       string
		namespaces []*corev1.Namespace
		accounts   []*corev1.ServiceAccount
		createErr  error
		key        string
		wantCreate []string // namespace/name of created service accounts
		wantErr    bool
	}{
		{
			name:       "active namespace without default gets one",
			namespaces: []*corev1.Namespace{namespace("apps", corev1.NamespaceActive, false)},
			key:        "apps",
			wantCreate: []string{"apps/default"},
		},
		{
			name:       "default in another namespace does not count",
			namespaces: []*corev1.Namespace{namespace("apps", corev1.NamespaceActive, false), namespace("other", corev1.NamespaceActive, false)},
			accounts:   []*corev1.ServiceAccount{serviceAccount("other", "default"), serviceAccount("apps", "builder")},
			key:        "apps",
			wantCreate: []string{"apps/default"},
		},
		{
			name:       "existing default is left alone",
			namespaces: []*corev1.Namespace{namespace("apps", corev1.NamespaceActive, false)},
			accounts:   []*corev1.ServiceAccount{serviceAccount("apps", "default")},
			key:        "apps",
		},
		{
			name:       "terminating namespace gets nothing",
			namespaces: []*corev1.Namespace{namespace("apps", corev1.NamespaceTerminating, true)},
			key:        "apps",
		},
		{
			name:       "namespace being deleted but not yet terminating gets nothing",
			namespaces: []*corev1.Namespace{namespace("apps", corev1.NamespaceActive, true)},
			key:        "apps",
		},
		{
			name: "unknown namespace is ignored",
			key:  "gone",
		},
		{
			name:       "already exists is success",
			namespaces: []*corev1.Namespace{namespace("apps", corev1.NamespaceActive, false)},
			createErr:  apierrors.NewAlreadyExists(corev1.Resource("serviceaccounts"), "default"),
			key:        "apps",
			wantCreate: []string{"apps/default"},
		},
		{
			name:       "namespace began terminating is success",
			namespaces: []*corev1.Namespace{namespace("apps", corev1.NamespaceActive, false)},
			createErr:  terminating,
			key:        "apps",
			wantCreate: []string{"apps/default"},
		},
		{
			name:       "other create errors are retried",
			namespaces: []*corev1.Namespace{namespace("apps", corev1.NamespaceActive, false)},
			createErr:  apierrors.NewInternalError(errors.New("etcd down")),
			key:        "apps",
			wantCreate: []string{"apps/default"},
			wantErr:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tt.createErr != nil {
				client.PrependReactor("create", "serviceaccounts", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.createErr
				})
			}
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, factory.Core().V1().ServiceAccounts(), factory.Core().V1().Namespaces())
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range tt.namespaces {
				_ = factory.Core().V1().Namespaces().Informer().GetIndexer().Add(ns)
			}
			for _, sa := range tt.accounts {
				_ = factory.Core().V1().ServiceAccounts().Informer().GetIndexer().Add(sa)
			}
			err = c.sync(context.Background(), tt.key)
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync error = %v, want error %v", err, tt.wantErr)
			}
			var created []string
			for _, a := range client.Actions() {
				if a.GetVerb() != "create" {
					t.Errorf("unexpected action %s %s", a.GetVerb(), a.GetResource().Resource)
					continue
				}
				sa := a.(clienttesting.CreateAction).GetObject().(*corev1.ServiceAccount)
				if a.GetNamespace() != sa.Namespace {
					t.Errorf("created in %q an object of namespace %q", a.GetNamespace(), sa.Namespace)
				}
				created = append(created, sa.Namespace+"/"+sa.Name)
			}
			if !slices.Equal(created, tt.wantCreate) {
				t.Errorf("created %v, want %v", created, tt.wantCreate)
			}
		})
	}
}

// TestRunRecreates runs the controller on informers: a new namespace gets
// its default account, and deleting the account brings it back.
func TestRunRecreates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(namespace("apps", corev1.NamespaceActive, false))
	created := make(chan string, 10)
	client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		created <- a.GetNamespace()
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Core().V1().ServiceAccounts(), factory.Core().V1().Namespaces())
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan struct{}, 10)
	if _, err := factory.Core().V1().ServiceAccounts().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { seen <- struct{}{} },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 1) }()

	waitCreated := func() {
		t.Helper()
		select {
		case ns := <-created:
			if ns != "apps" {
				t.Fatalf("created in %q, want apps", ns)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("default service account not created")
		}
	}
	waitCreated()
	// Let the informer see it before deleting it.
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("informer did not see the service account")
	}
	if err := client.CoreV1().ServiceAccounts("apps").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCreated()

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v on cancel, want nil", err)
	}
	factory.Shutdown()
}

func TestDescriptor(t *testing.T) {
	d := Descriptor()
	if d.Name != "serviceaccount-controller" || d.ServiceAccount != "service-account-controller" || d.DisabledByDefault {
		t.Errorf("descriptor = %+v", d)
	}
	client := fake.NewClientset()
	builder := &managertesting.ClientBuilder{Clientset: client}
	factory := informers.NewSharedInformerFactory(client, 0)
	var runs int
	cc := manager.ControllerContext{
		ServiceAccount:  d.ServiceAccount,
		ClientBuilder:   builder,
		InformerFactory: factory,
		Go:              func(func(context.Context) error) { runs++ },
	}
	if err := d.Start(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	if got := builder.Names(); len(got) != 1 || got[0] != "service-account-controller" {
		t.Errorf("clients asked for %v, want [service-account-controller]", got)
	}
	if runs != 1 {
		t.Errorf("Go called %d times, want 1", runs)
	}
	// Start asked for the two informers; the manager starts them.
	stop := make(chan struct{})
	factory.Start(stop)
	synced := factory.WaitForCacheSync(stop)
	for _, typ := range []reflect.Type{reflect.TypeFor[*corev1.ServiceAccount](), reflect.TypeFor[*corev1.Namespace]()} {
		if !synced[typ] {
			t.Errorf("no synced informer for %v (have %v)", typ, synced)
		}
	}
	close(stop)
	factory.Shutdown()
}
