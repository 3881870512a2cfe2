package tokencleaner

import (
	"context"
	"strings"
	"testing"
	"time"

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
	"github.com/k1s/k1s/internal/bootstraptoken"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// token is the Secret of token id expiring at expires (zero: never).
func token(t *testing.T, id string, expires time.Time) *corev1.Secret {
	t.Helper()
	s, err := bootstraptoken.ToSecret(bootstraptoken.Token{ID: id, Secret: "0123456789abcdef", Expires: expires,
		Usages: bootstraptoken.DefaultUsages(), Groups: []string{bootstraptoken.DefaultGroup}})
	if err != nil {
		t.Fatal(err)
	}
	s.UID = types.UID(id + "-uid")
	s.ResourceVersion = "7"
	return s
}

func newController(t *testing.T, cached ...*corev1.Secret) (*Controller, *fake.Clientset, *testingclock.FakeClock) {
	t.Helper()
	var objs []runtime.Object
	for _, s := range cached {
		objs = append(objs, s)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(now)
	c, err := New(client, factory.Core().V1().Secrets(), clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	for _, s := range cached {
		if err := factory.Core().V1().Secrets().Informer().GetStore().Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return c, client, clk
}

// queuedAfter checks that key enters the queue once the clock has moved
// by d, and not before.
func queuedAfter(t *testing.T, c *Controller, clk *testingclock.FakeClock, key string, d time.Duration) {
	t.Helper()
	clk.Step(d - time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	if c.queue.Len() != 0 {
		t.Fatalf("key queued before %v", d)
	}
	clk.Step(time.Millisecond)
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
		cached        *corev1.Secret // nil: not in the cache
		deleteErr     error
		wantDelete    bool
		wantRequeue   time.Duration // 0: none
		wantErrSubstr string
	}{
		{name: "not in cache"},
		{name: "never expires", cached: token(t, "abcdef", time.Time{})},
		{name: "expires later", cached: token(t, "abcdef", now.Add(90*time.Second)), wantRequeue: 90 * time.Second},
		{name: "expired", cached: token(t, "abcdef", now.Add(-time.Second)), wantDelete: true},
		{name: "expires now", cached: token(t, "abcdef", now), wantDelete: true},
		{
			name: "unparseable expiration counts as expired",
			cached: func() *corev1.Secret {
				s := token(t, "abcdef", time.Time{})
				s.Data["expiration"] = []byte("next tuesday")
				return s
			}(),
			wantDelete: true,
		},
		{
			name: "another type",
			cached: func() *corev1.Secret {
				s := token(t, "abcdef", now.Add(-time.Hour))
				s.Type = corev1.SecretTypeOpaque
				return s
			}(),
		},
		{
			name: "another namespace",
			cached: func() *corev1.Secret {
				s := token(t, "abcdef", now.Add(-time.Hour))
				s.Namespace = "default"
				return s
			}(),
		},
		{
			name: "being deleted",
			cached: func() *corev1.Secret {
				s := token(t, "abcdef", now.Add(-time.Hour))
				s.DeletionTimestamp = ptr.To(metav1.NewTime(now))
				return s
			}(),
		},
		{
			name:       "gone meanwhile",
			cached:     token(t, "abcdef", now.Add(-time.Hour)),
			deleteErr:  apierrors.NewNotFound(corev1.Resource("secrets"), "bootstrap-token-abcdef"),
			wantDelete: true,
		},
		{
			name:       "changed meanwhile: the conflict is not an error",
			cached:     token(t, "abcdef", now.Add(-time.Hour)),
			deleteErr:  apierrors.NewConflict(corev1.Resource("secrets"), "bootstrap-token-abcdef", nil),
			wantDelete: true,
		},
		{
			name:          "delete fails",
			cached:        token(t, "abcdef", now.Add(-time.Hour)),
			deleteErr:     apierrors.NewServiceUnavailable("etcd down"),
			wantDelete:    true,
			wantErrSubstr: "delete kube-system/bootstrap-token-abcdef",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cached []*corev1.Secret
			key := "kube-system/bootstrap-token-abcdef"
			if tc.cached != nil {
				cached = append(cached, tc.cached)
				key = tc.cached.Namespace + "/" + tc.cached.Name
			}
			c, client, clk := newController(t, cached...)
			client.ClearActions()
			if tc.deleteErr != nil {
				client.PrependReactor("delete", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.deleteErr
				})
			}
			err := c.sync(context.Background(), key)
			if tc.wantErrSubstr == "" && err != nil {
				t.Fatalf("sync: %v", err)
			}
			if tc.wantErrSubstr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErrSubstr)) {
				t.Fatalf("sync error %v, want one containing %q", err, tc.wantErrSubstr)
			}
			deletes := 0
			for _, a := range client.Actions() {
				if a.GetVerb() != "delete" {
					t.Errorf("unexpected action %s %s", a.GetVerb(), a.GetResource().Resource)
					continue
				}
				deletes++
				d := a.(clienttesting.DeleteAction)
				if d.GetNamespace() != "kube-system" || d.GetName() != "bootstrap-token-abcdef" {
					t.Errorf("deleted %s/%s", d.GetNamespace(), d.GetName())
				}
				p := d.GetDeleteOptions().Preconditions
				if p == nil || p.UID == nil || *p.UID != "abcdef-uid" || p.ResourceVersion == nil || *p.ResourceVersion != "7" {
					t.Errorf("delete preconditions %+v, want the cached UID and resourceVersion", p)
				}
			}
			if (deletes > 0) != tc.wantDelete {
				t.Errorf("deleted: %v, want %v", deletes > 0, tc.wantDelete)
			}
			if tc.wantRequeue > 0 {
				queuedAfter(t, c, clk, key, tc.wantRequeue)
			} else {
				clk.Step(24 * time.Hour)
				time.Sleep(20 * time.Millisecond)
				if c.queue.Len() != 0 {
					t.Errorf("requeued, want not")
				}
			}
		})
	}
}

// TestRun runs the cleaner through its Descriptor against a fake clientset
// and a fake clock: an expired token is deleted at once, a token expiring
// in a minute once the clock has passed its expiry, a token without expiry
// and another Secret are kept, and Run returns nil on cancel.
func TestRun(t *testing.T) {
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "other"}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"expiration": []byte("2000-01-01T00:00:00Z")}}
	client := fake.NewClientset(token(t, "expird", now.Add(-time.Minute)), token(t, "inamin", now.Add(time.Minute)),
		token(t, "foreva", time.Time{}), other)
	clk := testingclock.NewFakeClock(now)
	builder := &managertesting.ClientBuilder{Clientset: client}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := Descriptor()
	if d.Name != "token-cleaner-controller" || d.ServiceAccount != "token-cleaner" || d.DisabledByDefault {
		t.Fatalf("descriptor %q as %q, disabled by default %v", d.Name, d.ServiceAccount, d.DisabledByDefault)
	}
	errc := make(chan error, 1)
	err := d.Start(ctx, manager.ControllerContext{
		ServiceAccount: d.ServiceAccount,
		ClientBuilder:  builder,
		Clock:          clk,
		Go:             func(fn func(context.Context) error) { go func() { errc <- fn(ctx) }() },
	})
	if err != nil {
		t.Fatal(err)
	}
	exists := func(name string) bool {
		_, err := client.CoreV1().Secrets("kube-system").Get(ctx, name, metav1.GetOptions{})
		return err == nil
	}
	waitGone := func(name string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for exists(name) {
			if time.Now().After(deadline) {
				t.Fatalf("%s not deleted", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitGone("bootstrap-token-expird")
	time.Sleep(50 * time.Millisecond)
	if !exists("bootstrap-token-inamin") {
		t.Fatal("a token was deleted before its expiry")
	}
	clk.Step(time.Minute)
	waitGone("bootstrap-token-inamin")
	clk.Step(365 * 24 * time.Hour)
	time.Sleep(50 * time.Millisecond)
	if !exists("bootstrap-token-foreva") || !exists("other") {
		t.Error("a token without expiry or another Secret was deleted")
	}
	if got := builder.Names(); len(got) == 0 || got[0] != "token-cleaner" {
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
