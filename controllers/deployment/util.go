package deployment

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Annotations the controller keeps on Deployments and ReplicaSets.
const (
	// RevisionAnnotation numbers a ReplicaSet's rollout; the Deployment
	// carries its new ReplicaSet's.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists the earlier revisions a ReplicaSet
	// served (it is rolled back to again and again).
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's spec.replicas when the
	// ReplicaSet was last sized, to tell scaling from rolling out.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is spec.replicas + maxSurge when the ReplicaSet
	// was last sized, the base of proportional scaling.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
)

// Condition reasons and event reasons, as upstream's.
const (
	ReplicaSetUpdatedReason    = "ReplicaSetUpdated"
	FailedRSCreateReason       = "ReplicaSetCreateError"
	NewReplicaSetReason        = "NewReplicaSetCreated"
	FoundNewRSReason           = "FoundNewReplicaSet"
	NewRSAvailableReason       = "NewReplicaSetAvailable"
	TimedOutReason             = "ProgressDeadlineExceeded"
	PausedDeployReason         = "DeploymentPaused"
	ResumedDeployReason        = "DeploymentResumed"
	MinimumReplicasAvailable   = "MinimumReplicasAvailable"
	MinimumReplicasUnavailable = "MinimumReplicasUnavailable"

	RollbackRevisionNotFound  = "DeploymentRollbackRevisionNotFound"
	RollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged"
	RollbackDone              = "DeploymentRollback"
)

// maxRevHistoryLengthInChars bounds the revision-history annotation.
const maxRevHistoryLengthInChars = 2000

// annotationsToSkip are the Deployment annotations not copied to its
// ReplicaSets (and kept on the Deployment when rolling back).
var annotationsToSkip = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true,
	RevisionAnnotation:                 true,
	RevisionHistoryAnnotation:          true,
	DesiredReplicasAnnotation:          true,
	MaxReplicasAnnotation:              true,
	appsv1.DeprecatedRollbackTo:        true,
}

func replicasOf(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

func desired(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// revision parses obj's revision annotation; absent is 0.
func revision(obj metav1.Object) (int64, error) {
	v, ok := obj.GetAnnotations()[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// maxRevision is the highest parsable revision among rss.
func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		if v, err := revision(rs); err == nil && v > m {
			m = v
		}
	}
	return m
}

// lastRevision is the second highest revision among rss (the one before
// the current), 0 if there is none.
func lastRevision(rss []*appsv1.ReplicaSet) int64 {
	var first, second int64
	for _, rs := range rss {
		v, err := revision(rs)
		if err != nil {
			continue
		}
		if v >= first {
			second, first = first, v
		} else if v > second {
			second = v
		}
	}
	return second
}

// equalIgnoreHash compares two templates, ignoring the pod-template-hash
// label.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return apiequality.Semantic.DeepEqual(a, b)
}

// byCreation sorts ReplicaSets oldest first, by name on a tie.
type byCreation []*appsv1.ReplicaSet

func (o byCreation) Len() int      { return len(o) }
func (o byCreation) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byCreation) Less(i, j int) bool {
	if o[i].CreationTimestamp.Equal(&o[j].CreationTimestamp) {
		return o[i].Name < o[j].Name
	}
	return o[i].CreationTimestamp.Before(&o[j].CreationTimestamp)
}

// bySizeOlder sorts largest first, older first among equals.
type bySizeOlder []*appsv1.ReplicaSet

func (o bySizeOlder) Len() int      { return len(o) }
func (o bySizeOlder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeOlder) Less(i, j int) bool {
	if replicasOf(o[i]) == replicasOf(o[j]) {
		return byCreation(o).Less(i, j)
	}
	return replicasOf(o[i]) > replicasOf(o[j])
}

// bySizeNewer sorts largest first, newer first among equals.
type bySizeNewer []*appsv1.ReplicaSet

func (o bySizeNewer) Len() int      { return len(o) }
func (o bySizeNewer) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeNewer) Less(i, j int) bool {
	if replicasOf(o[i]) == replicasOf(o[j]) {
		return byCreation(o).Less(j, i)
	}
	return replicasOf(o[i]) > replicasOf(o[j])
}

// byRevision sorts lowest revision first, by creation on a tie or parse
// failure.
type byRevision []*appsv1.ReplicaSet

func (o byRevision) Len() int      { return len(o) }
func (o byRevision) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byRevision) Less(i, j int) bool {
	a, err1 := revision(o[i])
	b, err2 := revision(o[j])
	if err1 != nil || err2 != nil || a == b {
		return byCreation(o).Less(i, j)
	}
	return a < b
}

// findNewReplicaSet returns the oldest ReplicaSet whose template is the
// Deployment's, or nil. It sorts rsList.
func findNewReplicaSet(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sort.Sort(byCreation(rsList))
	for _, rs := range rsList {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOldReplicaSets returns the ReplicaSets other than the new one: those
// with replicas, and all of them.
func findOldReplicaSets(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (withReplicas, all []*appsv1.ReplicaSet) {
	newRS := findNewReplicaSet(d, rsList)
	for _, rs := range rsList {
		if newRS != nil && rs.UID == newRS.UID {
			continue
		}
		all = append(all, rs)
		if replicasOf(rs) != 0 {
			withReplicas = append(withReplicas, rs)
		}
	}
	return withReplicas, all
}

// filterActive keeps the non-nil ReplicaSets with replicas.
func filterActive(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && replicasOf(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// findActiveOrLatest returns the only ReplicaSet with replicas; with none,
// the new one or else the newest old one; with several, nil.
func findActiveOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	sort.Sort(sort.Reverse(byCreation(oldRSs)))
	active := filterActive(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return oldRSs[0]
	case 1:
		return active[0]
	}
	return nil
}

func sumReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += replicasOf(rs)
	}
	return n
}

func sumStatus(rss []*appsv1.ReplicaSet, field func(*appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += field(&rs.Status)
		}
	}
	return n
}

func actualReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sumStatus(rss, func(s *appsv1.ReplicaSetStatus) int32 { return s.Replicas })
}

func readyReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sumStatus(rss, func(s *appsv1.ReplicaSetStatus) int32 { return s.ReadyReplicas })
}

func availableReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sumStatus(rss, func(s *appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
}

// terminatingReplicas sums the ReplicaSets' terminating pods; nil when a
// ReplicaSet the controller has synced does not report them.
func terminatingReplicas(rss []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range rss {
		switch {
		case rs == nil:
		case rs.Status.ObservedGeneration == 0 && rs.Status.TerminatingReplicas == nil:
			// Never synced: contributes nothing.
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			n += *rs.Status.TerminatingReplicas
		}
	}
	return &n
}

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// resolveFenceposts turns maxSurge and maxUnavailable into counts for
// desiredReplicas: surge rounds up, unavailable down, and when both come
// to 0 unavailable is 1 so that the rollout can move.
func resolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desiredReplicas int32) (int32, int32, error) {
	zero := intstr.FromInt32(0)
	surge, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxSurge, zero), int(desiredReplicas), true)
	if err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, zero), int(desiredReplicas), false)
	if err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return int32(surge), int32(unavailable), nil
}

func rollingParams(d *appsv1.Deployment) (*intstr.IntOrString, *intstr.IntOrString) {
	if d.Spec.Strategy.RollingUpdate == nil {
		return nil, nil
	}
	return d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable
}

// maxUnavailable is how many pods a rolling update may lack (0 for
// Recreate or no replicas), never more than spec.replicas.
func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || desired(d) == 0 {
		return 0
	}
	s, u := rollingParams(d)
	_, n, _ := resolveFenceposts(s, u, desired(d))
	return min(n, desired(d))
}

// maxSurge is how many pods above spec.replicas a rolling update may run.
func maxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	s, u := rollingParams(d)
	n, _, _ := resolveFenceposts(s, u, desired(d))
	return n
}

// newRSNewReplicas is the size the new ReplicaSet may grow to now.
func newRSNewReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	switch d.Spec.Strategy.Type {
	case appsv1.RollingUpdateDeploymentStrategyType:
		s, _ := rollingParams(d)
		surge, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(s, intstr.FromInt32(0)), int(desired(d)), true)
		if err != nil {
			return 0, fmt.Errorf("maxSurge: %w", err)
		}
		current := sumReplicas(allRSs)
		maxTotal := desired(d) + int32(surge)
		if current >= maxTotal {
			return replicasOf(newRS), nil
		}
		up := min(maxTotal-current, desired(d)-replicasOf(newRS))
		return replicasOf(newRS) + up, nil
	case appsv1.RecreateDeploymentStrategyType:
		return desired(d), nil
	}
	return 0, fmt.Errorf("deployment strategy %q is not supported", d.Spec.Strategy.Type)
}

// isSaturated reports whether rs holds and has available all of the
// Deployment's replicas, and was sized for this spec.replicas.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	want, err := strconv.Atoi(rs.Annotations[DesiredReplicasAnnotation])
	if err != nil {
		return false
	}
	return replicasOf(rs) == desired(d) && int32(want) == desired(d) && rs.Status.AvailableReplicas == desired(d)
}

// annotationInt32 reads a non-negative int32 annotation.
func annotationInt32(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n > math.MaxInt32 {
		return 0, false
	}
	return int32(n), true
}

// setReplicasAnnotations records the desired and max replicas on rs and
// reports whether they changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desiredReplicas, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range map[string]string{
		DesiredReplicasAnnotation: strconv.Itoa(int(desiredReplicas)),
		MaxReplicasAnnotation:     strconv.Itoa(int(maxReplicas)),
	} {
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desiredReplicas, maxReplicas int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(desiredReplicas)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(maxReplicas))
}

// copyDeploymentAnnotations copies the Deployment's annotations (except
// annotationsToSkip) onto rs and reports whether any changed.
func copyDeploymentAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.Annotations {
		if annotationsToSkip[k] {
			continue
		}
		if cur, ok := rs.Annotations[k]; ok && cur == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// setNewReplicaSetAnnotations brings the new ReplicaSet's annotations up to
// date: the Deployment's annotations, the revision (raised to newRevision,
// the old one going to the history), and for a ReplicaSet about to be
// created the replicas annotations. It reports whether anything changed.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision int64, exists bool) bool {
	changed := copyDeploymentAnnotations(d, rs)
	oldStr, had := rs.Annotations[RevisionAnnotation]
	old, err := strconv.ParseInt(oldStr, 10, 64)
	if err != nil {
		if oldStr != "" {
			return false
		}
		old = 0
	}
	if old < newRevision {
		rs.Annotations[RevisionAnnotation] = strconv.FormatInt(newRevision, 10)
		changed = true
		if had {
			appendRevisionHistory(rs, oldStr)
		}
	}
	if !exists && setReplicasAnnotations(rs, desired(d), desired(d)+maxSurge(d)) {
		changed = true
	}
	return changed
}

// appendRevisionHistory adds rev to the revision-history annotation,
// dropping the oldest entries to stay within maxRevHistoryLengthInChars.
func appendRevisionHistory(rs *appsv1.ReplicaSet, rev string) {
	hist := rs.Annotations[RevisionHistoryAnnotation]
	if hist == "" {
		rs.Annotations[RevisionHistoryAnnotation] = rev
		return
	}
	entries := strings.Split(hist, ",")
	total := len(hist) + len(rev) + 1
	start := 0
	for total > maxRevHistoryLengthInChars && start < len(entries) {
		total -= len(entries[start]) + 1
		start++
	}
	if total <= maxRevHistoryLengthInChars {
		rs.Annotations[RevisionHistoryAnnotation] = strings.Join(append(entries[start:], rev), ",")
	}
}

// setDeploymentRevision sets the Deployment's revision annotation and
// reports whether it changed.
func setDeploymentRevision(d *appsv1.Deployment, rev string) bool {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	if d.Annotations[RevisionAnnotation] == rev {
		return false
	}
	d.Annotations[RevisionAnnotation] = rev
	return true
}

// setAnnotationsFromReplicaSet gives the Deployment rs's annotations,
// keeping only its own annotationsToSkip (rolling back to rs).
func setAnnotationsFromReplicaSet(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	kept := map[string]string{}
	for k, v := range d.Annotations {
		if annotationsToSkip[k] {
			kept[k] = v
		}
	}
	for k, v := range rs.Annotations {
		if !annotationsToSkip[k] {
			kept[k] = v
		}
	}
	d.Annotations = kept
}

// replicaSetProportion is how many replicas rs gains (or loses, negative)
// when toAdd replicas are spread and added have been given out already.
func replicaSetProportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || replicasOf(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := replicaSetFraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// replicaSetFraction is rs's share of a resize: its size scaled from the
// max-replicas it was sized for to the Deployment's current maximum.
func replicaSetFraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if desired(d) == 0 {
		return -replicasOf(rs)
	}
	maxNow := desired(d) + maxSurge(d)
	maxBefore, ok := annotationInt32(rs, MaxReplicasAnnotation)
	if !ok || maxBefore == 0 {
		maxBefore = d.Status.Replicas
		if maxBefore == 0 {
			return 0
		}
	}
	size := float64(replicasOf(rs)*maxNow) / float64(maxBefore)
	return int32(math.Round(size)) - replicasOf(rs)
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

func hasRevisionHistoryLimit(d *appsv1.Deployment) bool {
	return d.Spec.RevisionHistoryLimit != nil && *d.Spec.RevisionHistoryLimit != math.MaxInt32
}

// deploymentComplete: every desired replica is updated and available and
// no old pods remain, for the current generation.
func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	n := desired(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

// deploymentProgressing: compared with the recorded status, more pods are
// updated, ready or available, or fewer old pods remain.
func deploymentProgressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

// getCondition returns a copy of the condition of type t, or nil.
func getCondition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

// setCondition puts c into st unless one of its type has the same status
// and reason; the transition time is kept when the status does not change.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

// replicaSetName is "<deployment>-<hash>", the deployment name cut so the
// whole stays within 253 characters.
func replicaSetName(deployment, hash string) string {
	maxLen := 253 - 1 - len(hash)
	if len(deployment) > maxLen && maxLen > 0 {
		deployment = deployment[:maxLen]
	}
	return deployment + "-" + hash
}
