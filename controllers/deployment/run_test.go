package deployment

import (
	"context"
	"reflect"
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
	c, err := New(client, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), record.NewFakeRecorder(100), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	if _, err := client.AppsV1().Deployments("ns").Create(ctx, newDeployment(2, "nginx"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		rss, err := client.AppsV1().ReplicaSets("ns").List(ctx, metav1.ListOptions{})
		return err == nil && len(rss.Items) == 1 && *rss.Items[0].Spec.Replicas == 2, nil
	}); err != nil {
		t.Fatal("no replica set created by the running controller")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v on cancel, want nil", err)
	}
	factory.Shutdown()
}

func TestDescriptor(t *testing.T) {
	d := Descriptor(Config{})
	if d.Name != "deployment-controller" || d.ServiceAccount != "deployment-controller" || len(d.Aliases) != 1 || d.Aliases[0] != "deployment" || d.DisabledByDefault {
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
		EventRecorder:   func(string) record.EventRecorder { return record.NewFakeRecorder(1) },
		Go:              func(func(context.Context) error) { runs++ },
	}
	if err := d.Start(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	if got := builder.Names(); len(got) != 1 || got[0] != "deployment-controller" || runs != 1 {
		t.Errorf("clients asked for %v, Go called %d times", got, runs)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	synced := factory.WaitForCacheSync(stop)
	for _, typ := range []reflect.Type{reflect.TypeFor[*appsv1.Deployment](), reflect.TypeFor[*appsv1.ReplicaSet](), reflect.TypeFor[*corev1.Pod]()} {
		if !synced[typ] {
			t.Errorf("no synced informer for %v", typ)
		}
	}
	close(stop)
	factory.Shutdown()
}
