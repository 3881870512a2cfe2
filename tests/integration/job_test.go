package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/cronjob"
	"github.com/k1s/k1s/controllers/job"
	"github.com/k1s/k1s/controllers/ttlafterfinished"
	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/tests/integration/framework"
)

// batchControllers are the controllers these tests exercise.
var batchControllers = []string{"job-controller", "cronjob-controller", "ttl-after-finished-controller"}

// batchControllersInServer reports whether k1s server registers the batch
// controllers itself: a --controllers list naming them validates.
func batchControllersInServer(t *testing.T) bool {
	t.Helper()
	dir := t.TempDir()
	_, err := server.New(server.Config{
		DataDir:           filepath.Join(dir, "data"),
		NodeIP:            "127.0.0.1",
		AdvertiseAddress:  "127.0.0.1",
		DisableAgent:      true,
		ControllerManager: framework.Controllers(batchControllers...),
	})
	if err != nil && !strings.Contains(err.Error(), "unknown controller") {
		t.Fatalf("server config: %v", err)
	}
	return err == nil
}

// startBatch starts a control plane with the Job and TTL controllers (the
// server's own once it registers them, else started here) and a CronJob
// controller of this test on a fake clock, which it returns.
func startBatch(t *testing.T) (*framework.Server, kubernetes.Interface, *testingclock.FakeClock) {
	t.Helper()
	inServer := batchControllersInServer(t)
	dir := t.TempDir()
	cfg := server.Config{
		DataDir:          filepath.Join(dir, "data"),
		BindAddress:      "127.0.0.1",
		HTTPSPort:        framework.FreePort(t),
		NodeIP:           "127.0.0.1",
		WriteKubeconfig:  filepath.Join(dir, "kubeconfig.yaml"),
		EtcdClientPort:   framework.FreePort(t),
		EtcdPeerPort:     framework.FreePort(t),
		AdvertiseAddress: "127.0.0.1",
		DisableAgent:     true,
	}
	if inServer {
		// The server's CronJob controller reads the real clock; this
		// test's replaces it.
		cfg.ControllerManager = framework.Controllers("*", "-cronjob-controller")
	}
	s := framework.StartWith(t, cfg)
	client := s.Client(t)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	factory := informers.NewSharedInformerFactory(client, 0)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := func(component string) record.EventRecorder {
		return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	}
	var runs []func(context.Context) error
	fakeClock := testingclock.NewFakeClock(time.Now())
	cj, err := cronjob.New(client, factory.Batch().V1().Jobs(), factory.Batch().V1().CronJobs(), recorder(cronjob.ControllerName), fakeClock)
	if err != nil {
		t.Fatal(err)
	}
	runs = append(runs, func(ctx context.Context) error { return cj.Run(ctx, 2) })
	if !inServer {
		jc, err := job.New(client, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), recorder(job.ControllerName), clock.RealClock{})
		if err != nil {
			t.Fatal(err)
		}
		tc, err := ttlafterfinished.New(client, factory.Batch().V1().Jobs(), clock.RealClock{})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, func(ctx context.Context) error { return jc.Run(ctx, 2) },
			func(ctx context.Context) error { return tc.Run(ctx, 2) })
	}
	done := make(chan error, len(runs))
	for _, run := range runs {
		go func() { done <- run(ctx) }()
	}
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		for range runs {
			if err := <-done; err != nil {
				t.Errorf("controller: %v", err)
			}
		}
		factory.Shutdown()
		broadcaster.Shutdown()
	})
	return s, client, fakeClock
}

func batchPoll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 45*time.Second, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// testJob is a Job running busybox with the given completions and
// parallelism.
func batchTestJob(name string, completions, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Completions: ptr.To(completions),
			Parallelism: ptr.To(parallelism),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "work", Image: "busybox"}},
			}},
		},
	}
}

// jobPods lists the pods of the Job (by its job-name label).
func batchJobPods(ctx context.Context, c kubernetes.Interface, ns, name string) ([]corev1.Pod, error) {
	l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// finishPod plays the kubelet: the pod's only container ended with code
// (phase Succeeded for 0, Failed otherwise) at finished.
func batchFinishPod(ctx context.Context, t *testing.T, c kubernetes.Interface, p *corev1.Pod, code int32, finished time.Time) {
	t.Helper()
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		cur, err := c.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cur.Status.Phase = phase
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  "work",
			Image: "busybox",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, StartedAt: metav1.NewTime(finished.Add(-time.Second)), FinishedAt: metav1.NewTime(finished)}},
		}}
		_, err = c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("finish pod %s: %v", p.Name, err)
	}
}

func batchJobCondition(j *batchv1.Job, ct batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == ct && j.Status.Conditions[i].Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func batchNamespace(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestBatchControllers runs the Job, CronJob and TTL-after-finished
// controllers against a real apiserver, the test playing the kubelet.
func TestBatchControllers(t *testing.T) {
	_, c, fakeClock := startBatch(t)
	ctx := context.Background()

	t.Run("completions 3, parallelism 2", func(t *testing.T) {
		ns := "job-complete"
		batchNamespace(ctx, t, c, ns)
		if _, err := c.BatchV1().Jobs(ns).Create(ctx, batchTestJob("work", 3, 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		finished := map[string]bool{}
		batchPoll(t, "job complete", func(ctx context.Context) (bool, error) {
			pods, err := batchJobPods(ctx, c, ns, "work")
			if err != nil {
				return false, err
			}
			running := 0
			for i := range pods {
				p := &pods[i]
				if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
					continue
				}
				running++
				if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
					t.Errorf("pod %s lacks the tracking finalizer", p.Name)
				}
				if !finished[p.Name] {
					finished[p.Name] = true
					batchFinishPod(ctx, t, c, p, 0, time.Now())
				}
			}
			if running > 2 {
				t.Errorf("%d pods running at once, parallelism is 2", running)
			}
			j, err := c.BatchV1().Jobs(ns).Get(ctx, "work", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return batchJobCondition(j, batchv1.JobComplete) != nil, nil
		})
		j, err := c.BatchV1().Jobs(ns).Get(ctx, "work", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Succeeded != 3 || j.Status.Failed != 0 || j.Status.Active != 0 || j.Status.CompletionTime == nil || j.Status.StartTime == nil {
			t.Errorf("status %+v", j.Status)
		}
		if batchJobCondition(j, batchv1.JobSuccessCriteriaMet) == nil {
			t.Errorf("no SuccessCriteriaMet condition: %+v", j.Status.Conditions)
		}
		batchPoll(t, "finalizers removed", func(ctx context.Context) (bool, error) {
			pods, err := batchJobPods(ctx, c, ns, "work")
			if err != nil {
				return false, err
			}
			if len(pods) != 3 {
				return false, fmt.Errorf("%d pods, want 3", len(pods))
			}
			for _, p := range pods {
				if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
					return false, nil
				}
			}
			return true, nil
		})
	})

	t.Run("indexed", func(t *testing.T) {
		ns := "job-indexed"
		batchNamespace(ctx, t, c, ns)
		j := batchTestJob("idx", 3, 3)
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		if _, err := c.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pods []corev1.Pod
		batchPoll(t, "three indexed pods", func(ctx context.Context) (bool, error) {
			var err error
			pods, err = batchJobPods(ctx, c, ns, "idx")
			return len(pods) == 3, err
		})
		var indexes []string
		for i := range pods {
			p := &pods[i]
			ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
			indexes = append(indexes, ix)
			if p.Labels[batchv1.JobCompletionIndexAnnotation] != ix || p.Spec.Hostname != "idx-"+ix || !strings.HasPrefix(p.Name, "idx-"+ix+"-") {
				t.Errorf("pod %s of index %s: label %q hostname %q", p.Name, ix, p.Labels[batchv1.JobCompletionIndexAnnotation], p.Spec.Hostname)
			}
			if ix != "1" {
				batchFinishPod(ctx, t, c, p, 0, time.Now())
			}
		}
		slices.Sort(indexes)
		if !slices.Equal(indexes, []string{"0", "1", "2"}) {
			t.Errorf("indexes %v", indexes)
		}
		batchPoll(t, "completedIndexes 0,2", func(ctx context.Context) (bool, error) {
			j, err := c.BatchV1().Jobs(ns).Get(ctx, "idx", metav1.GetOptions{})
			return err == nil && j.Status.CompletedIndexes == "0,2" && j.Status.Succeeded == 2, err
		})
	})

	t.Run("backoff limit", func(t *testing.T) {
		ns := "job-backoff"
		batchNamespace(ctx, t, c, ns)
		j := batchTestJob("flaky", 1, 1)
		j.Spec.BackoffLimit = ptr.To[int32](1)
		if _, err := c.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		failed := map[string]bool{}
		batchPoll(t, "job failed", func(ctx context.Context) (bool, error) {
			pods, err := batchJobPods(ctx, c, ns, "flaky")
			if err != nil {
				return false, err
			}
			for i := range pods {
				p := &pods[i]
				if !failed[p.Name] && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
					failed[p.Name] = true
					// The failure is reported a minute late, so the
					// 10 s back-off before the retry has passed.
					batchFinishPod(ctx, t, c, p, 1, time.Now().Add(-time.Minute))
				}
			}
			j, err := c.BatchV1().Jobs(ns).Get(ctx, "flaky", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return batchJobCondition(j, batchv1.JobFailed) != nil, nil
		})
		j, err := c.BatchV1().Jobs(ns).Get(ctx, "flaky", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cond := batchJobCondition(j, batchv1.JobFailed)
		if cond.Reason != batchv1.JobReasonBackoffLimitExceeded || batchJobCondition(j, batchv1.JobFailureTarget) == nil {
			t.Errorf("conditions %+v", j.Status.Conditions)
		}
		if j.Status.Failed != 2 || j.Status.Active != 0 || j.Status.CompletionTime != nil {
			t.Errorf("status %+v", j.Status)
		}
		if len(failed) != 2 {
			t.Errorf("%d pods ran, want 2 (one retry)", len(failed))
		}
	})

	t.Run("ttl after finished", func(t *testing.T) {
		ns := "job-ttl"
		batchNamespace(ctx, t, c, ns)
		j := batchTestJob("brief", 1, 1)
		// Long enough for the poll below to see the job complete before it
		// goes, on a loaded machine too.
		j.Spec.TTLSecondsAfterFinished = ptr.To[int32](3)
		if _, err := c.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pods []corev1.Pod
		batchPoll(t, "pod", func(ctx context.Context) (bool, error) {
			var err error
			pods, err = batchJobPods(ctx, c, ns, "brief")
			return len(pods) == 1, err
		})
		batchFinishPod(ctx, t, c, &pods[0], 0, time.Now())
		batchPoll(t, "complete", func(ctx context.Context) (bool, error) {
			j, err := c.BatchV1().Jobs(ns).Get(ctx, "brief", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("deleted before it was seen complete")
			}
			if err != nil {
				return false, err
			}
			return batchJobCondition(j, batchv1.JobComplete) != nil, nil
		})
		batchPoll(t, "job deleted", func(ctx context.Context) (bool, error) {
			_, err := c.BatchV1().Jobs(ns).Get(ctx, "brief", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})

	t.Run("cronjob", func(t *testing.T) {
		ns := "cron"
		batchNamespace(ctx, t, c, ns)
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: "tick"},
			Spec: batchv1.CronJobSpec{
				Schedule:                   "*/1 * * * *",
				SuccessfulJobsHistoryLimit: ptr.To[int32](1),
				JobTemplate:                batchv1.JobTemplateSpec{Spec: batchTestJob("", 1, 1).Spec},
			},
		}
		created, err := c.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Nothing before the next minute.
		time.Sleep(500 * time.Millisecond)
		if l, err := c.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
			t.Fatalf("jobs before the schedule: %v %v", l, err)
		}
		// Move the controller's clock just past the next minute.
		first := created.CreationTimestamp.Time.Truncate(time.Minute).Add(time.Minute)
		fakeClock.SetTime(first.Add(200 * time.Millisecond))
		name := fmt.Sprintf("tick-%d", first.Unix()/60)
		batchPoll(t, "job "+name, func(ctx context.Context) (bool, error) {
			_, err := c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
		batchPoll(t, "cronjob status active", func(ctx context.Context) (bool, error) {
			cur, err := c.BatchV1().CronJobs(ns).Get(ctx, "tick", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return len(cur.Status.Active) == 1 && cur.Status.Active[0].Name == name &&
				cur.Status.LastScheduleTime != nil && cur.Status.LastScheduleTime.Time.Equal(first), nil
		})
		// Run the Job to completion: it leaves status.active.
		var pods []corev1.Pod
		batchPoll(t, "pod of "+name, func(ctx context.Context) (bool, error) {
			var err error
			pods, err = batchJobPods(ctx, c, ns, name)
			return len(pods) == 1, err
		})
		batchFinishPod(ctx, t, c, &pods[0], 0, time.Now())
		batchPoll(t, "cronjob saw the job complete", func(ctx context.Context) (bool, error) {
			cur, err := c.BatchV1().CronJobs(ns).Get(ctx, "tick", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return len(cur.Status.Active) == 0 && cur.Status.LastSuccessfulTime != nil, nil
		})
		// The next minute brings the next Job; the history limit of one
		// removes the first.
		second := first.Add(time.Minute)
		fakeClock.SetTime(second.Add(200 * time.Millisecond))
		next := fmt.Sprintf("tick-%d", second.Unix()/60)
		batchPoll(t, "job "+next, func(ctx context.Context) (bool, error) {
			_, err := c.BatchV1().Jobs(ns).Get(ctx, next, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
		batchPoll(t, "next job's pod", func(ctx context.Context) (bool, error) {
			var err error
			pods, err = batchJobPods(ctx, c, ns, next)
			return len(pods) == 1, err
		})
		batchFinishPod(ctx, t, c, &pods[0], 0, time.Now())
		batchPoll(t, "first job removed by the history limit", func(ctx context.Context) (bool, error) {
			_, err := c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
}
