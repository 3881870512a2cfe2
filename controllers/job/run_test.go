package job

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/manager"
	managertesting "github.com/k1s/k1s/controllers/manager/testing"
)

// TestRun starts the controller through its Descriptor against a fake
// clientset: a new Job gets its pods, and Run returns nil on cancel.
func TestRun(t *testing.T) {
	job := newJob("j", ptr.To[int32](2), ptr.To[int32](2))
	client := fake.NewClientset(job)
	factory := informers.NewSharedInformerFactory(client, 0)
	builder := &managertesting.ClientBuilder{Clientset: client}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := Descriptor()
	if d.Name != "job-controller" || d.ServiceAccount != "job-controller" || !slices.Equal(d.Aliases, []string{"job"}) {
		t.Fatalf("descriptor %+v", d)
	}
	errc := make(chan error, 1)
	var components []string
	err := d.Start(ctx, manager.ControllerContext{
		ServiceAccount:  d.ServiceAccount,
		ClientBuilder:   builder,
		InformerFactory: factory,
		EventRecorder: func(c string) record.EventRecorder {
			components = append(components, c)
			return record.NewFakeRecorder(100)
		},
		Clock: testingclock.NewFakeClock(t0),
		Go:    func(fn func(context.Context) error) { go func() { errc <- fn(ctx) }() },
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	deadline := time.Now().Add(5 * time.Second)
	for {
		// (The fake tracker ignores generateName, so only the first of
		// the two creates succeeds; the attempts are what counts here.)
		var creates int
		for _, a := range client.Actions() {
			if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
				creates++
			}
		}
		if creates == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pod creations, want 2", creates)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := builder.Names(); len(got) == 0 || got[0] != "job-controller" {
		t.Errorf("clients asked for %v", got)
	}
	if !slices.Equal(components, []string{"job-controller"}) {
		t.Errorf("event recorders for %v", components)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Run did not return after cancel")
	}
}
