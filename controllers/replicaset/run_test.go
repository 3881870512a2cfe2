package replicaset

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/k1s/k1s/controllers/manager"
	managertesting "github.com/k1s/k1s/controllers/manager/testing"
)

func TestRun(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), record.NewFakeRecorder(100), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()

	rs := newRS("web", 2)
	if _, err := client.AppsV1().ReplicaSets("ns").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The fake clientset does not name pods from generateName, so every
	// pod after the first collides; one pod arriving proves the loop.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) > 0, nil
	}); err != nil {
		t.Fatal("no pod created by the running controller")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v on cancel, want nil", err)
	}
	factory.Shutdown()
}

func TestDescriptor(t *testing.T) {
	d := Descriptor(Config{})
	if d.Name != "replicaset-controller" || d.ServiceAccount != "replicaset-controller" || len(d.Aliases) != 1 || d.Aliases[0] != "replicaset" || d.DisabledByDefault {
		t.Errorf("descriptor = %+v", d)
	}
	client := fake.NewClientset()
	builder := &managertesting.ClientBuilder{Clientset: client}
	factory := informers.NewSharedInformerFactory(client, 0)
	var runs int
	var recorders []string
	cc := manager.ControllerContext{
		ServiceAccount:  d.ServiceAccount,
		ClientBuilder:   builder,
		InformerFactory: factory,
		EventRecorder: func(c string) record.EventRecorder {
			recorders = append(recorders, c)
			return record.NewFakeRecorder(1)
		},
		Go: func(func(context.Context) error) { runs++ },
	}
	if err := d.Start(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	if got := builder.Names(); len(got) != 1 || got[0] != "replicaset-controller" {
		t.Errorf("clients asked for %v", got)
	}
	if runs != 1 || len(recorders) != 1 || recorders[0] != Name {
		t.Errorf("Go called %d times, recorders %v", runs, recorders)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	synced := factory.WaitForCacheSync(stop)
	for _, typ := range []reflect.Type{reflect.TypeFor[*appsv1.ReplicaSet](), reflect.TypeFor[*corev1.Pod]()} {
		if !synced[typ] {
			t.Errorf("no synced informer for %v", typ)
		}
	}
	close(stop)
	factory.Shutdown()

	if err := Descriptor(Config{ConcurrentSyncs: -1}).Start(context.Background(), cc); err == nil || !strings.Contains(err.Error(), "--concurrent-replicaset-syncs") {
		t.Errorf("Start with a bad config = %v", err)
	}
}
