package ttlafterfinished

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/manager"
	managertesting "github.com/k1s/k1s/controllers/manager/testing"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// job returns a Job with ttl (nil: none) that finished (cond, at
// finishedAgo before now) or not (cond "").
func job(name string, ttl *int32, cond batchv1.JobConditionType, finishedAgo time.Duration) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")},
		Spec:       batchv1.JobSpec{TTLSecondsAfterFinished: ttl},
	}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
			{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-finishedAgo))},
		}
	}
	return j
}

func newController(t *testing.T, cached, stored []*batchv1.Job) (*Controller, *fake.Clientset, *testingclock.FakeClock) {
	t.Helper()
	var objs []runtime.Object
	for _, j := range stored {
		objs = append(objs, j)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(now)
	c, err := New(client, factory.Batch().V1().Jobs(), clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	for _, j := range cached {
		if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(j); err != nil {
			t.Fatal(err)
		}
	}
	client.ClearActions()
	return c, client, clk
}

// queuedAfter reports whether key enters the queue once the clock has
// moved by d (and not before).
func queuedAfter(t *testing.T, c *Controller, clk *testingclock.FakeClock, key string, d time.Duration) {
	t.Helper()
	if d > time.Millisecond {
		clk.Step(d - time.Millisecond)
		time.Sleep(20 * time.Millisecond)
		if c.queue.Len() != 0 {
			t.Fatalf("key queued before %v", d)
		}
		clk.Step(time.Millisecond)
	} else {
		clk.Step(d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("key %s not queued after %v", key, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got, _ := c.queue.Get(); got != key {
		t.Fatalf("queued %q, want %q", got, key)
	}
	c.queue.Done(key)
}

func TestSync(t *testing.T) {
	tests := []struct {
		name          string
		cached        *batchv1.Job // nil: not in the cache
		stored        *batchv1.Job // nil: not in the API
		deleteErr     error
		wantDelete    bool
		wantGet       bool
		wantRequeue   time.Duration // 0: none
		wantErrSubstr string
	}{
		{name: "not in cache"},
		{name: "no ttl", cached: job("j", nil, batchv1.JobComplete, time.Hour)},
		{name: "not finished", cached: job("j", ptr.To[int32](0), "", 0)},
		{
			name:        "complete, ttl not yet expired",
			cached:      job("j", ptr.To[int32](10), batchv1.JobComplete, 4*time.Second),
			wantRequeue: 6 * time.Second,
		},
		{
			name:       "complete, expired",
			cached:     job("j", ptr.To[int32](10), batchv1.JobComplete, 10*time.Second),
			stored:     job("j", ptr.To[int32](10), batchv1.JobComplete, 10*time.Second),
			wantGet:    true,
			wantDelete: true,
		},
		{
			name:       "failed, ttl zero",
			cached:     job("j", ptr.To[int32](0), batchv1.JobFailed, 0),
			stored:     job("j", ptr.To[int32](0), batchv1.JobFailed, 0),
			wantGet:    true,
			wantDelete: true,
		},
		{
			name: "being deleted",
			cached: func() *batchv1.Job {
				j := job("j", ptr.To[int32](0), batchv1.JobComplete, time.Hour)
				j.DeletionTimestamp = ptr.To(metav1.NewTime(now))
				return j
			}(),
		},
		{
			name:    "gone from the API",
			cached:  job("j", ptr.To[int32](0), batchv1.JobComplete, time.Hour),
			wantGet: true,
		},
		{
			name:        "ttl raised since cached",
			cached:      job("j", ptr.To[int32](10), batchv1.JobComplete, time.Minute),
			stored:      job("j", ptr.To[int32](70), batchv1.JobComplete, time.Minute),
			wantGet:     true,
			wantRequeue: 10 * time.Second,
		},
		{
			name:    "ttl removed since cached",
			cached:  job("j", ptr.To[int32](10), batchv1.JobComplete, time.Minute),
			stored:  job("j", nil, batchv1.JobComplete, time.Minute),
			wantGet: true,
		},
		{
			name:       "replaced meanwhile: conflict is not an error",
			cached:     job("j", ptr.To[int32](0), batchv1.JobComplete, time.Minute),
			stored:     job("j", ptr.To[int32](0), batchv1.JobComplete, time.Minute),
			deleteErr:  apierrors.NewConflict(batchv1.Resource("jobs"), "j", errors.New("uid mismatch")),
			wantGet:    true,
			wantDelete: true,
		},
		{
			name:          "delete fails",
			cached:        job("j", ptr.To[int32](0), batchv1.JobComplete, time.Minute),
			stored:        job("j", ptr.To[int32](0), batchv1.JobComplete, time.Minute),
			deleteErr:     apierrors.NewServiceUnavailable("etcd down"),
			wantGet:       true,
			wantDelete:    true,
			wantErrSubstr: "delete job ns/j",
		},
		{
			name: "finished without a transition time",
			cached: func() *batchv1.Job {
				j := job("j", ptr.To[int32](0), batchv1.JobComplete, 0)
				j.Status.Conditions[1].LastTransitionTime = metav1.Time{}
				return j
			}(),
			wantErrSubstr: "Complete condition has no lastTransitionTime",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cached, stored []*batchv1.Job
			if tc.cached != nil {
				cached = append(cached, tc.cached)
			}
			if tc.stored != nil {
				stored = append(stored, tc.stored)
			}
			c, client, clk := newController(t, cached, stored)
			if tc.deleteErr != nil {
				client.PrependReactor("delete", "jobs", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.deleteErr
				})
			}
			err := c.sync(context.Background(), "ns/j")
			if tc.wantErrSubstr == "" && err != nil {
				t.Fatalf("sync: %v", err)
			}
			if tc.wantErrSubstr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErrSubstr)) {
				t.Fatalf("sync error %v, want one containing %q", err, tc.wantErrSubstr)
			}
			var gets, deletes int
			for _, a := range client.Actions() {
				switch a.GetVerb() {
				case "get":
					gets++
				case "delete":
					deletes++
					opts := a.(clienttesting.DeleteAction).GetDeleteOptions()
					if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
						t.Errorf("delete propagation %v, want Background", opts.PropagationPolicy)
					}
					if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "j-uid" {
						t.Errorf("delete preconditions %+v, want UID j-uid", opts.Preconditions)
					}
				default:
					t.Errorf("unexpected action %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
			if (gets > 0) != tc.wantGet {
				t.Errorf("fresh get done: %v, want %v", gets > 0, tc.wantGet)
			}
			if (deletes > 0) != tc.wantDelete {
				t.Errorf("delete done: %v, want %v", deletes > 0, tc.wantDelete)
			}
			if tc.wantRequeue > 0 {
				queuedAfter(t, c, clk, "ns/j", tc.wantRequeue)
			} else {
				clk.Step(time.Hour)
				time.Sleep(20 * time.Millisecond)
				if c.queue.Len() != 0 {
					t.Errorf("job requeued, want not")
				}
			}
		})
	}
}

// TestEnqueue checks which Job events put a Job in the queue at once.
func TestEnqueue(t *testing.T) {
	tests := []struct {
		name string
		job  *batchv1.Job
		want bool
	}{
		{"finished with ttl", job("j", ptr.To[int32](100), batchv1.JobComplete, 0), true},
		{"failed with ttl", job("j", ptr.To[int32](100), batchv1.JobFailed, 0), true},
		{"running with ttl", job("j", ptr.To[int32](100), "", 0), false},
		{"finished without ttl", job("j", nil, batchv1.JobComplete, 0), false},
		{"finished, deleting", func() *batchv1.Job {
			j := job("j", ptr.To[int32](0), batchv1.JobComplete, 0)
			j.DeletionTimestamp = ptr.To(metav1.NewTime(now))
			return j
		}(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := newController(t, nil, nil)
			c.enqueue(tc.job)
			if got := c.queue.Len() == 1; got != tc.want {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRun runs the controller through its Descriptor against a fake
// clientset: a Job that finished a second ago with a two-second TTL is
// deleted once the clock passes its expiry, and Run returns nil on cancel.
func TestRun(t *testing.T) {
	j := job("j", ptr.To[int32](2), batchv1.JobComplete, time.Second)
	client := fake.NewClientset(j)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(now)
	builder := &managertesting.ClientBuilder{Clientset: client}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	d := Descriptor()
	if d.Name != "ttl-after-finished-controller" || d.ServiceAccount != "ttl-after-finished-controller" {
		t.Fatalf("descriptor %q as %q", d.Name, d.ServiceAccount)
	}
	err := d.Start(ctx, manager.ControllerContext{
		ServiceAccount:  d.ServiceAccount,
		ClientBuilder:   builder,
		InformerFactory: factory,
		Clock:           clk,
		Go:              func(fn func(context.Context) error) { go func() { errc <- fn(ctx) }() },
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	deleted := func() bool {
		for _, a := range client.Actions() {
			if a.GetVerb() == "delete" {
				return true
			}
		}
		return false
	}
	time.Sleep(100 * time.Millisecond)
	if deleted() {
		t.Fatal("job deleted before its TTL ran out")
	}
	clk.Step(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for !deleted() {
		if time.Now().After(deadline) {
			t.Fatal("job not deleted after its TTL")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := builder.Names(); len(got) == 0 || got[0] != "ttl-after-finished-controller" {
		t.Errorf("clients asked for %v", got)
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
