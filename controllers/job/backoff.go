package job

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/k1s/k1s/controllers/controllerutil"
)

// backoffRecord is what decides when a Job may replace failed pods: the
// pod failures since its last success and when the latest happened.
type backoffRecord struct {
	failuresAfterLastSuccess int32
	lastFailure              time.Time // zero: none
}

// backoffStore holds the backoff record of each Job key. It lives in memory
// only, as upstream's: after a restart every Job starts afresh. Safe for
// concurrent use.
type backoffStore struct {
	mu sync.Mutex
	m  map[string]backoffRecord
}

func newBackoffStore() *backoffStore {
	return &backoffStore{m: map[string]backoffRecord{}}
}

func (s *backoffStore) get(key string) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

func (s *backoffStore) set(key string, r backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = r
}

func (s *backoffStore) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// next returns the record after the newly finished pods: failures add up;
// a success resets the count to the failures that finished after the
// latest success.
func (r backoffRecord) next(succeeded, failed []*corev1.Pod) backoffRecord {
	if len(failed) == 0 {
		if len(succeeded) > 0 {
			return backoffRecord{}
		}
		return r
	}
	failTimes := finishTimes(failed)
	if len(succeeded) == 0 {
		return backoffRecord{
			failuresAfterLastSuccess: r.failuresAfterLastSuccess + int32(len(failed)),
			lastFailure:              failTimes[len(failTimes)-1],
		}
	}
	successTimes := finishTimes(succeeded)
	lastSuccess := successTimes[len(successTimes)-1]
	var out backoffRecord
	for i := len(failTimes) - 1; i >= 0 && failTimes[i].After(lastSuccess); i-- {
		if out.lastFailure.IsZero() {
			out.lastFailure = failTimes[i]
		}
		out.failuresAfterLastSuccess++
	}
	return out
}

// remaining is how long the Job must still wait before creating pods.
func (r backoffRecord) remaining(now time.Time, base, maxDelay time.Duration) time.Duration {
	return remainingBackoff(now, base, maxDelay, r.failuresAfterLastSuccess, r.lastFailure)
}

// remainingBackoff is the time left, at now, of the back-off after
// failures failures, the latest at last: base doubled for each failure
// after the first, capped at maxDelay.
func remainingBackoff(now time.Time, base, maxDelay time.Duration, failures int32, last time.Time) time.Duration {
	if failures <= 0 {
		return 0
	}
	delay := base
	for i := int32(1); i < failures && delay < maxDelay; i++ {
		delay *= 2
	}
	delay = min(delay, maxDelay)
	elapsed := now.Sub(last)
	if elapsed > delay {
		return 0
	}
	return delay - elapsed
}

// finishTimes returns the pods' finish times, sorted.
func finishTimes(pods []*corev1.Pod) []time.Time {
	out := make([]time.Time, 0, len(pods))
	for _, p := range pods {
		out = append(out, finishTime(p))
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// finishTime estimates when the pod finished: the latest termination of
// its containers (and sidecars) when all have terminated, else when it
// stopped being ready, else when its deletion began (less its grace
// period), else its creation.
func finishTime(p *corev1.Pod) time.Time {
	if t, ok := containersFinished(p); ok {
		return t
	}
	if c := controllerutil.GetPodReadyCondition(p.Status); c != nil && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	if p.DeletionTimestamp != nil {
		var grace int64
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// containersFinished returns the latest finish time of the pod's regular
// containers and restartable init containers, if every one of them has
// terminated with a finish time.
func containersFinished(p *corev1.Pod) (time.Time, bool) {
	var latest time.Time
	ok := true
	consider := func(s corev1.ContainerStatus) {
		t := s.State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			ok = false
			return
		}
		if t.FinishedAt.After(latest) {
			latest = t.FinishedAt.Time
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		consider(s)
	}
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, s := range p.Status.InitContainerStatuses {
		if sidecars[s.Name] {
			consider(s)
		}
	}
	if !ok || latest.IsZero() {
		return time.Time{}, false
	}
	return latest, true
}
