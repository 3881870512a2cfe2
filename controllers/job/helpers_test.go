package job

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
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
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	batchapi "github.com/k1s/k1s/internal/apis/batch"
)

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

const testNS = "ns"

// fixture is a controller over a fake clientset whose informer stores the
// test fills (and refreshes from the clientset with resync).
type fixture struct {
	t        *testing.T
	c        *Controller
	client   *fake.Clientset
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder
	jobs     cache.Store
	pods     cache.Store

	mu      sync.Mutex
	created int
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: testingclock.NewFakeClock(t0), recorder: record.NewFakeRecorder(100)}
	f.client = fake.NewClientset(objs...)
	// The fake tracker knows no generateName: name and stamp new pods.
	f.client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		f.mu.Lock()
		f.created++
		n := f.created
		f.mu.Unlock()
		if pod.Name == "" {
			pod.Name = fmt.Sprintf("%s%05d", pod.GenerateName, n)
		}
		pod.UID = types.UID("uid-" + pod.Name)
		pod.CreationTimestamp = metav1.NewTime(f.clock.Now())
		pod.Namespace = testNS
		return false, nil, nil
	})
	// Status writes must pass the apiserver's status validation.
	f.client.PrependReactor("update", "jobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		job := a.(clienttesting.UpdateAction).GetObject().(*batchv1.Job)
		old, err := f.client.Tracker().Get(batchv1.SchemeGroupVersion.WithResource("jobs"), job.Namespace, job.Name)
		if err != nil {
			return true, nil, err
		}
		if errs := batchapi.ValidateJobStatusUpdate(job, old.(*batchv1.Job)); len(errs) > 0 {
			t.Errorf("invalid status write: %v", errs.ToAggregate())
			return true, nil, apierrors.NewInvalid(batchv1.SchemeGroupVersion.WithKind("Job").GroupKind(), job.Name, errs)
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(f.client, 0)
	c, err := New(f.client, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), f.recorder, f.clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.queue.ShutDown()
		c.orphanQueue.ShutDown()
	})
	f.c = c
	f.jobs = factory.Batch().V1().Jobs().Informer().GetStore()
	f.pods = factory.Core().V1().Pods().Informer().GetIndexer()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *batchv1.Job:
			err = f.jobs.Add(o)
		case *corev1.Pod:
			err = f.pods.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// sync runs one sync of the Job and returns the actions it took.
func (f *fixture) sync(name string) ([]clienttesting.Action, error) {
	f.client.ClearActions()
	err := f.c.sync(context.Background(), testNS+"/"+name)
	return f.client.Actions(), err
}

// mustSync is sync that fails the test on error.
func (f *fixture) mustSync(name string) []clienttesting.Action {
	f.t.Helper()
	actions, err := f.sync(name)
	if err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
	return actions
}

// resync copies the clientset's pods and Jobs into the informer stores and
// calls the controller's event handlers, as the informers would.
func (f *fixture) resync() {
	f.t.Helper()
	ctx := context.Background()
	pods, err := f.client.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		seen[p.Name] = true
		old, ok, _ := f.pods.GetByKey(testNS + "/" + p.Name)
		if err := f.pods.Update(p); err != nil {
			f.t.Fatal(err)
		}
		if ok {
			p.ResourceVersion = old.(*corev1.Pod).ResourceVersion + "x"
			f.c.updatePod(old, p)
		} else {
			f.c.addPod(p)
		}
	}
	for _, o := range f.pods.List() {
		if p := o.(*corev1.Pod); !seen[p.Name] {
			if err := f.pods.Delete(p); err != nil {
				f.t.Fatal(err)
			}
			f.c.deletePod(p, true)
		}
	}
	jobs, err := f.client.BatchV1().Jobs(testNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		old, ok, _ := f.jobs.GetByKey(testNS + "/" + j.Name)
		if err := f.jobs.Update(j); err != nil {
			f.t.Fatal(err)
		}
		if ok {
			f.c.updateJob(old, j)
		}
	}
}

// storedJob is the Job as the clientset has it.
func (f *fixture) storedJob(name string) *batchv1.Job {
	f.t.Helper()
	j, err := f.client.BatchV1().Jobs(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

// storedPods are the pods as the clientset has them, by name.
func (f *fixture) storedPods() []*corev1.Pod {
	f.t.Helper()
	list, err := f.client.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// setPodPhase changes a stored pod's phase (the kubelet's part).
func (f *fixture) setPodPhase(name string, phase corev1.PodPhase, finished time.Time) {
	f.t.Helper()
	p, err := f.client.CoreV1().Pods(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	p.Status.Phase = phase
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		code := int32(0)
		if phase == corev1.PodFailed {
			code = 1
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(finished)}}}}
	}
	if _, err := f.client.CoreV1().Pods(testNS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// newJob is a Job with completions and parallelism (nil: unset), default
// backoff limit, and the selector and template labels the apiserver would
// generate.
func newJob(name string, completions, parallelism *int32) *batchv1.Job {
	uid := types.UID(name + "-uid")
	labels := map[string]string{batchv1.ControllerUidLabel: string(uid), batchv1.JobNameLabel: name}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: uid, Generation: 1, ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Spec: batchv1.JobSpec{
			Completions:  completions,
			Parallelism:  parallelism,
			BackoffLimit: ptr.To[int32](6),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
				},
			},
		},
	}
}

func indexed(j *batchv1.Job) *batchv1.Job {
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	return j
}

// podSpec describes a pod of a Job for newPod.
type podSpec struct {
	name     string
	phase    corev1.PodPhase
	ready    bool
	index    int  // -1: none
	orphan   bool // no controller reference
	noFinal  bool // without the tracking finalizer
	deleting bool
	finished time.Time // for terminal phases; zero: t0 - 1h
	exitCode int32
	node     string
}

// newPod is a pod of job.
func newPod(job *batchv1.Job, s podSpec) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNS, Name: s.name, UID: types.UID("uid-" + s.name), ResourceVersion: "1",
			Labels:            map[string]string{},
			Annotations:       map[string]string{},
			CreationTimestamp: metav1.NewTime(t0.Add(-2 * time.Hour)),
		},
		Spec:   *job.Spec.Template.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: s.phase},
	}
	p.Spec.NodeName = s.node
	for k, v := range job.Spec.Template.Labels {
		p.Labels[k] = v
	}
	if !s.orphan {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, controllerKind)}
	}
	if !s.noFinal {
		p.Finalizers = []string{batchv1.JobTrackingFinalizer}
	}
	if s.index >= 0 && isIndexed(job) {
		p.Annotations[batchv1.JobCompletionIndexAnnotation] = fmt.Sprint(s.index)
		p.Labels[batchv1.JobCompletionIndexAnnotation] = fmt.Sprint(s.index)
	}
	if s.deleting {
		p.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(-time.Minute)))
	}
	if s.ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if s.phase == corev1.PodSucceeded || s.phase == corev1.PodFailed {
		fin := s.finished
		if fin.IsZero() {
			fin = t0.Add(-time.Hour)
		}
		code := s.exitCode
		if s.phase == corev1.PodFailed && code == 0 {
			code = 1
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(fin)}}}}
	}
	return p
}

// pods builds several pods of job: n of each phase, named <prefix><i>.
func pods(job *batchv1.Job, prefix string, phase corev1.PodPhase, n int) []runtime.Object {
	var out []runtime.Object
	for i := range n {
		out = append(out, newPod(job, podSpec{name: fmt.Sprintf("%s%d", prefix, i), phase: phase, index: -1}))
	}
	return out
}

func objs(job *batchv1.Job, more ...[]runtime.Object) []runtime.Object {
	out := []runtime.Object{job}
	for _, m := range more {
		out = append(out, m...)
	}
	return out
}

// summary condenses the actions of a sync.
type summary struct {
	created  []*corev1.Pod
	deleted  []string
	patched  []string // pods whose finalizer was removed (or another patch)
	statuses []*batchv1.Job
	others   []string
}

func summarize(actions []clienttesting.Action) summary {
	var s summary
	for _, a := range actions {
		switch {
		case a.GetVerb() == "create" && a.GetResource().Resource == "pods":
			s.created = append(s.created, a.(clienttesting.CreateAction).GetObject().(*corev1.Pod))
		case a.GetVerb() == "delete" && a.GetResource().Resource == "pods":
			s.deleted = append(s.deleted, a.(clienttesting.DeleteAction).GetName())
		case a.GetVerb() == "patch" && a.GetResource().Resource == "pods":
			s.patched = append(s.patched, a.(clienttesting.PatchAction).GetName())
		case a.GetVerb() == "update" && a.GetSubresource() == "status":
			s.statuses = append(s.statuses, a.(clienttesting.UpdateAction).GetObject().(*batchv1.Job).DeepCopy())
		default:
			s.others = append(s.others, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	slices.Sort(s.deleted)
	slices.Sort(s.patched)
	return s
}

// last is the last status written.
func (s summary) last(t *testing.T) *batchv1.Job {
	t.Helper()
	if len(s.statuses) == 0 {
		t.Fatal("no status written")
	}
	return s.statuses[len(s.statuses)-1]
}

// conditions lists "Type=Status/Reason" of the Job's conditions.
func conditions(j *batchv1.Job) []string {
	var out []string
	for _, c := range j.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return out
}

// waitQueued reports whether key is queued within a short real time after
// the fake clock moved by d.
func (f *fixture) queuedAfter(key string, d time.Duration) bool {
	f.clock.Step(d)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if f.c.queue.Len() > 0 {
			got, _ := f.c.queue.Get()
			f.c.queue.Done(got)
			if got == key {
				return true
			}
			continue
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// drainQueue empties the queue (of the batched syncs the handlers added).
func (f *fixture) drainQueue() {
	f.clock.Step(time.Hour)
	time.Sleep(20 * time.Millisecond)
	for f.c.queue.Len() > 0 {
		k, _ := f.c.queue.Get()
		f.c.queue.Done(k)
	}
}
