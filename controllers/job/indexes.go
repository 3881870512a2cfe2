package job

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/storage/names"
)

// completionIndexEnv is the environment variable that tells a container of
// an Indexed Job its completion index.
const completionIndexEnv = "JOB_COMPLETION_INDEX"

// noIndex stands for a pod without a valid completion index.
const noIndex = -1

// span is the closed range of indexes [first, last].
type span struct{ first, last int }

// indexSet is a set of completion indexes as sorted, disjoint,
// non-adjacent spans; its String is the status.completedIndexes format
// ("1,3-5,7").
type indexSet []span

// parseIndexSet reads s as written in status.completedIndexes or
// failedIndexes, keeping only indexes below completions. Malformed
// entries are skipped, as the controller must still make progress with a
// status someone else wrote.
func parseIndexSet(s string, completions int) indexSet {
	var out indexSet
	if s == "" {
		return out
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			continue
		}
		if first >= completions {
			break
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				continue
			}
			last = min(last, completions-1)
		}
		out = out.union(indexSet{{first, last}})
	}
	return out
}

// withIndexes returns the set with the indexes (any order) added.
func (s indexSet) withIndexes(ixs []int) indexSet {
	if len(ixs) == 0 {
		return s
	}
	sorted := slices.Clone(ixs)
	slices.Sort(sorted)
	add := make(indexSet, 0, len(sorted))
	for _, ix := range sorted {
		add = append(add, span{ix, ix})
	}
	return s.union(add)
}

// union returns the union of two sets.
func (s indexSet) union(o indexSet) indexSet {
	all := make([]span, 0, len(s)+len(o))
	all = append(all, s...)
	all = append(all, o...)
	slices.SortFunc(all, func(a, b span) int { return a.first - b.first })
	var out indexSet
	for _, sp := range all {
		if n := len(out); n > 0 && sp.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, sp.last)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// total is the number of indexes in the set.
func (s indexSet) total() int {
	n := 0
	for _, sp := range s {
		n += sp.last - sp.first + 1
	}
	return n
}

// has reports whether ix is in the set.
func (s indexSet) has(ix int) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i].last >= ix })
	return i < len(s) && s[i].first <= ix
}

// String writes the set as "0,2-4,6,7": ranges of three or more indexes
// with a dash, pairs as two entries.
func (s indexSet) String() string {
	var b strings.Builder
	for _, sp := range s {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sp.first))
		switch {
		case sp.last == sp.first+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(sp.last))
		case sp.last > sp.first:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(sp.last))
		}
	}
	return b.String()
}

// overlap counts the indexes two sets share.
func (s indexSet) overlap(o indexSet) int {
	n, i, j := 0, 0, 0
	for i < len(s) && j < len(o) {
		if d := min(s[i].last, o[j].last) - max(s[i].first, o[j].first) + 1; d > 0 {
			n += d
		}
		if s[i].last < o[j].last {
			i++
		} else {
			j++
		}
	}
	return n
}

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return job.Spec.BackoffLimitPerIndex != nil
}

// completionIndex is the pod's completion index annotation, or noIndex.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return noIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return noIndex
	}
	return ix
}

// validIndex returns the pod's index if it is one of the Job's, else
// noIndex.
func validIndex(job *batchv1.Job, p *corev1.Pod) int {
	ix := completionIndex(p)
	if ix == noIndex || job.Spec.Completions == nil || ix >= int(*job.Spec.Completions) {
		return noIndex
	}
	return ix
}

// indexesOf returns the valid-looking indexes of pods.
func indexesOf(pods []*corev1.Pod) map[int]bool {
	out := map[int]bool{}
	for _, p := range pods {
		if ix := completionIndex(p); ix != noIndex {
			out[ix] = true
		}
	}
	return out
}

func keys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sortByIndex orders pods by completion index, pods without one first.
func sortByIndex(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return completionIndex(pods[i]) < completionIndex(pods[j]) })
}

// annotationInt32 reads a non-negative int32 annotation, 0 when absent or
// malformed.
func annotationInt32(p *corev1.Pod, key string) int32 {
	v, ok := p.Annotations[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int32(n)
}

// indexFailures is the number of counted failures of the pod's index
// before this pod.
func indexFailures(p *corev1.Pod) int32 {
	return annotationInt32(p, batchv1.JobIndexFailureCountAnnotation)
}

// indexAllFailures also counts the failures the pod failure policy
// ignored.
func indexAllFailures(p *corev1.Pod) int32 {
	return indexFailures(p) + annotationInt32(p, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

// addIndexEnv gives every container the JOB_COMPLETION_INDEX variable, read
// from the pod's completion index label.
func addIndexEnv(t *corev1.PodTemplateSpec) {
	add := func(c *corev1.Container) {
		for _, e := range c.Env {
			if e.Name == completionIndexEnv {
				return
			}
		}
		c.Env = append(c.Env, corev1.EnvVar{
			Name: completionIndexEnv,
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation),
			}},
		})
	}
	for i := range t.Spec.InitContainers {
		add(&t.Spec.InitContainers[i])
	}
	for i := range t.Spec.Containers {
		add(&t.Spec.Containers[i])
	}
}

// setIndex marks the template with its completion index (annotation,
// label, hostname).
func setIndex(t *corev1.PodTemplateSpec, jobName string, ix int) {
	v := strconv.Itoa(ix)
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[batchv1.JobCompletionIndexAnnotation] = v
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[batchv1.JobCompletionIndexAnnotation] = v
	t.Spec.Hostname = fmt.Sprintf("%s-%d", jobName, ix)
}

// indexedGenerateName is "<job>-<index>-", the Job name shortened so that
// the generated name stays within limits.
func indexedGenerateName(jobName string, ix int) string {
	suffix := "-" + strconv.Itoa(ix) + "-"
	if len(jobName)+len(suffix) > names.MaxGeneratedNameLength {
		jobName = jobName[:names.MaxGeneratedNameLength-len(suffix)]
	}
	return jobName + suffix
}
