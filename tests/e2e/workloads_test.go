package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/k1s/k1s/tests/e2e/framework"
)

const testapp2 = "k1s.local/testapp:2"

// TestWorkloads drives the controllers and the scheduler through kubectl on
// a one-node server with real containers: a Deployment rolled out, scaled,
// updated and rolled back, a Job, a CronJob, and the two ways of deleting
// that must leave nothing behind in the container runtime.
func TestWorkloads(t *testing.T) {
	s := framework.NewNodeServer(t)
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	c := s.Client(t)
	ctx := context.Background()
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := s.Kubectl(ctx, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	// The CronJob goes first: it fires at the next minute boundary, while
	// the rest of the test runs.
	kubectl(t, "create", "cronjob", "tick", "--image="+busybox, "--schedule=* * * * *", "--", "sh", "-c", "echo tick")

	t.Run("deployment: rollout, scale, new image, undo", func(t *testing.T) {
		kubectl(t, "create", "deployment", "web", "--image="+testapp, "--replicas=3", "--port=8080")
		kubectl(t, "rollout", "status", "deployment/web", "--timeout=120s")
		pods := runningPods(t, c, "default", "app=web", 3)
		firstRS := podsReplicaSet(t, pods)
		for _, p := range pods {
			assertScheduled(t, c, p)
			assertVersion(t, p, "1")
		}

		kubectl(t, "scale", "deployment/web", "--replicas=5")
		kubectl(t, "rollout", "status", "deployment/web", "--timeout=120s")
		runningPods(t, c, "default", "app=web", 5)

		kubectl(t, "set", "image", "deployment/web", "testapp="+testapp2)
		kubectl(t, "rollout", "status", "deployment/web", "--timeout=180s")
		pods = runningPods(t, c, "default", "app=web", 5)
		for _, p := range pods {
			if p.Spec.Containers[0].Image != testapp2 {
				t.Fatalf("pod %s runs %s after the update, want %s", p.Name, p.Spec.Containers[0].Image, testapp2)
			}
			assertVersion(t, p, "2")
		}
		if rs := podsReplicaSet(t, pods); rs == firstRS {
			t.Fatalf("the update reused ReplicaSet %s", rs)
		}
		old, err := c.AppsV1().ReplicaSets("default").Get(ctx, firstRS, metav1.GetOptions{})
		if err != nil || old.Spec.Replicas == nil || *old.Spec.Replicas != 0 {
			t.Fatalf("old ReplicaSet %s after the update: %v %+v, want it kept at 0 replicas", firstRS, err, old)
		}

		kubectl(t, "rollout", "undo", "deployment/web")
		kubectl(t, "rollout", "status", "deployment/web", "--timeout=180s")
		pods = runningPods(t, c, "default", "app=web", 5)
		for _, p := range pods {
			assertVersion(t, p, "1")
		}
		if rs := podsReplicaSet(t, pods); rs != firstRS {
			t.Fatalf("undo runs the pods of ReplicaSet %s, want the original %s back", rs, firstRS)
		}
		d, err := c.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rev := d.Annotations["deployment.kubernetes.io/revision"]; rev != "3" {
			t.Fatalf("revision after undo = %q, want 3", rev)
		}
	})

	t.Run("job runs to completion", func(t *testing.T) {
		kubectl(t, "create", "job", "once", "--image="+busybox, "--", "sh", "-c", "echo job-done-42")
		kubectl(t, "wait", "--for=condition=complete", "job/once", "--timeout=120s")
		j, err := c.BatchV1().Jobs("default").Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Succeeded != 1 || j.Status.CompletionTime == nil {
			t.Fatalf("job status %+v, want one success and a completion time", j.Status)
		}
		if out := kubectl(t, "logs", "job/once"); strings.TrimSpace(out) != "job-done-42" {
			t.Fatalf("job logs %q", out)
		}
	})

	t.Run("deleting a namespace removes its pods and containers", func(t *testing.T) {
		kubectl(t, "create", "namespace", "doomed")
		waitServiceAccount(t, c, "doomed")
		kubectl(t, "-n", "doomed", "create", "deployment", "sleeper", "--image="+busybox, "--replicas=2",
			"--", "sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait")
		kubectl(t, "-n", "doomed", "rollout", "status", "deployment/sleeper", "--timeout=120s")
		runningPods(t, c, "doomed", "app=sleeper", 2)
		labels := map[string]string{"io.kubernetes.pod.namespace": "doomed"}
		if sb, ct := framework.RuntimeObjects(t, labels); sb != 2 || ct != 2 {
			t.Fatalf("runtime holds %d sandboxes and %d containers of namespace doomed, want 2 and 2", sb, ct)
		}
		kubectl(t, "delete", "namespace", "doomed", "--timeout=120s")
		if _, err := c.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("namespace doomed after delete: %v", err)
		}
		waitRuntimeEmpty(t, labels)
	})

	t.Run("deleting a deployment in the background removes its replica sets and pods", func(t *testing.T) {
		pods := runningPods(t, c, "default", "app=web", 5)
		kubectl(t, "delete", "deployment", "web", "--cascade=background")
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 120*time.Second, true, func(ctx context.Context) (bool, error) {
			rs, err := c.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, nil
			}
			ps, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, nil
			}
			return len(rs.Items) == 0 && len(ps.Items) == 0, nil
		})
		if err != nil {
			t.Fatalf("replica sets or pods of the deleted deployment remain: %v", err)
		}
		for _, p := range pods {
			waitRuntimeEmpty(t, map[string]string{"io.kubernetes.pod.uid": string(p.UID)})
		}
	})

	t.Run("cronjob fires", func(t *testing.T) {
		var job *batchv1.Job
		err := wait.PollUntilContextTimeout(ctx, time.Second, 150*time.Second, true, func(ctx context.Context) (bool, error) {
			jobs, err := c.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for i := range jobs.Items {
				j := &jobs.Items[i]
				if owner := metav1.GetControllerOf(j); owner != nil && owner.Kind == "CronJob" && owner.Name == "tick" && j.Status.Succeeded == 1 {
					job = j
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("no job of cronjob tick succeeded: %v", err)
		}
		if out := kubectl(t, "logs", "job/"+job.Name); strings.TrimSpace(out) != "tick" {
			t.Fatalf("logs of %s: %q", job.Name, out)
		}
		cj, err := c.BatchV1().CronJobs("default").Get(ctx, "tick", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cj.Status.LastScheduleTime == nil || cj.Status.LastScheduleTime.Second() != 0 {
			t.Fatalf("cronjob lastScheduleTime %v, want a minute boundary", cj.Status.LastScheduleTime)
		}
		kubectl(t, "delete", "cronjob", "tick")
	})
}

// runningPods waits until exactly n pods match selector, none terminating,
// all running and ready, and returns them sorted by name.
func runningPods(t *testing.T, c kubernetes.Interface, ns, selector string, n int) []corev1.Pod {
	t.Helper()
	var got []corev1.Pod
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 300*time.Millisecond, 120*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		got = got[:0]
		var states []string
		for _, p := range list.Items {
			states = append(states, fmt.Sprintf("%s:%s deleting=%v", p.Name, p.Status.Phase, p.DeletionTimestamp != nil))
			if p.DeletionTimestamp != nil || !framework.Running(&p) || !podReady(&p) {
				return false, nil
			}
			got = append(got, p)
		}
		last = strings.Join(states, " ")
		return len(got) == n, nil
	})
	if err != nil {
		t.Fatalf("want %d running pods %s in %s; have %s", n, selector, ns, last)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	return got
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podsReplicaSet is the one ReplicaSet controlling every pod.
func podsReplicaSet(t *testing.T, pods []corev1.Pod) string {
	t.Helper()
	name := ""
	for _, p := range pods {
		owner := metav1.GetControllerOf(&p)
		if owner == nil || owner.Kind != "ReplicaSet" {
			t.Fatalf("pod %s has no ReplicaSet controller: %+v", p.Name, p.OwnerReferences)
		}
		if name != "" && owner.Name != name {
			t.Fatalf("pods belong to ReplicaSets %s and %s", name, owner.Name)
		}
		name = owner.Name
	}
	return name
}

// assertScheduled checks that the scheduler, not the client, placed p.
func assertScheduled(t *testing.T, c kubernetes.Interface, p corev1.Pod) {
	t.Helper()
	if p.Spec.NodeName != framework.NodeName || p.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Fatalf("pod %s: node %q scheduler %q", p.Name, p.Spec.NodeName, p.Spec.SchedulerName)
	}
	scheduled := false
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
			scheduled = true
		}
	}
	if !scheduled {
		t.Fatalf("pod %s has no PodScheduled=True condition: %+v", p.Name, p.Status.Conditions)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 300*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := c.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.uid=" + string(p.UID) + ",reason=Scheduled",
		})
		if err != nil || len(events.Items) == 0 {
			return false, nil
		}
		e := events.Items[0]
		want := fmt.Sprintf("Successfully assigned %s/%s to %s", p.Namespace, p.Name, framework.NodeName)
		return e.Source.Component == corev1.DefaultSchedulerName && e.Message == want ||
			e.ReportingController == corev1.DefaultSchedulerName && e.Message == want, nil
	})
	if err != nil {
		t.Fatalf("no Scheduled event from %s for pod %s", corev1.DefaultSchedulerName, p.Name)
	}
}

// assertVersion checks which testapp image answers on the pod's IP.
func assertVersion(t *testing.T, p corev1.Pod, version string) {
	t.Helper()
	body := httpGet(t, fmt.Sprintf("http://%s:8080/env", p.Status.PodIP))
	if !strings.Contains(body, "TESTAPP_VERSION="+version+"\n") {
		t.Fatalf("pod %s (%s) answers /env with %q, want TESTAPP_VERSION=%s", p.Name, p.Status.PodIP, body, version)
	}
}

// waitServiceAccount waits for a new namespace's default service account,
// without which the ServiceAccount admission plugin refuses pods.
func waitServiceAccount(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no default service account in %s", ns)
	}
}

// waitRuntimeEmpty waits until the runtime holds no sandbox or container
// with labels.
func waitRuntimeEmpty(t *testing.T, labels map[string]string) {
	t.Helper()
	var sb, ct int
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		sb, ct = framework.RuntimeObjects(t, labels)
		return sb == 0 && ct == 0, nil
	})
	if err != nil {
		t.Fatalf("runtime still holds %d sandboxes and %d containers with %v", sb, ct, labels)
	}
}
