package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// maxBindingsInFlight bounds the concurrent binding (and status) requests;
// the scheduling loop waits for a slot. It stays well below the
// apiserver's limit of concurrent mutating requests (200 by default),
// beyond which requests are refused with 429 and retried a second later.
const maxBindingsInFlight = 64

// Scheduler places the pending pods of its scheduler name on nodes.
// Create it with New and call Run once.
type Scheduler struct {
	cfg      Config
	client   kubernetes.Interface
	recorder record.EventRecorder
	clock    clock.WithTicker

	pods   corelisters.PodLister
	pdbs   policylisters.PodDisruptionBudgetLister
	ns     namespaceLister
	owners *ownerSelector
	synced []cache.InformerSynced

	cache     *schedCache
	queue     *schedulingQueue
	nominator *nominator
	// volumes is the VolumeBinding plugin (nil in tests without it).
	volumes *volumeBinder

	// Used by the scheduling loop only.
	snap *snapshot
	// cycleVolumes is the VolumeBinding state of the current cycle.
	cycleVolumes *volumeState
	par          parallelizer
	rnd          *rand.Rand
	nextStart    int
	buf          cycleBuffers

	inFlight chan struct{}
	wg       sync.WaitGroup
}

// New returns a scheduler fed by the factory's informers (pods, nodes,
// namespaces, PodDisruptionBudgets, the services, replication
// controllers, replica sets and stateful sets that default spreading
// looks at, and the PersistentVolumes, PersistentVolumeClaims and
// StorageClasses of volume binding). It registers event handlers and
// starts nothing.
func New(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, clk clock.WithTicker) (*Scheduler, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	core := factory.Core().V1()
	s := &Scheduler{
		cfg: cfg, client: client, recorder: recorder, clock: clk,
		pods: core.Pods().Lister(),
		pdbs: factory.Policy().V1().PodDisruptionBudgets().Lister(),
		ns:   nsLister{core.Namespaces().Lister()},
		owners: &ownerSelector{
			services: core.Services().Lister(), rcs: core.ReplicationControllers().Lister(),
			replicaSets: factory.Apps().V1().ReplicaSets().Lister(), statefulSets: factory.Apps().V1().StatefulSets().Lister(),
		},
		cache:     newSchedCache(),
		queue:     newSchedulingQueue(clk, cfg.PodInitialBackoff, cfg.PodMaxBackoff, cfg.PodMaxInUnschedulablePodsDuration),
		nominator: newNominator(),
		snap:      newSnapshot(),
		par:       newParallelizer(cfg.Parallelism),
		rnd:       rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		inFlight:  make(chan struct{}, maxBindingsInFlight),
		volumes: newVolumeBinder(client, clk, core.PersistentVolumeClaims().Lister(), core.PersistentVolumes().Lister(),
			factory.Storage().V1().StorageClasses().Lister()),
	}
	volumeHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.volumeChanged() },
		UpdateFunc: func(_, _ any) { s.volumeChanged() },
		DeleteFunc: func(any) { s.volumes.notify() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		core.PersistentVolumeClaims().Informer(), core.PersistentVolumes().Informer(), factory.Storage().V1().StorageClasses().Informer(),
	} {
		reg, err := inf.AddEventHandler(volumeHandler)
		if err != nil {
			return nil, fmt.Errorf("scheduler: volume handler: %w", err)
		}
		s.synced = append(s.synced, reg.HasSynced)
	}
	for _, inf := range []cache.SharedIndexInformer{
		core.Namespaces().Informer(), factory.Policy().V1().PodDisruptionBudgets().Informer(),
		core.Services().Informer(), core.ReplicationControllers().Informer(),
		factory.Apps().V1().ReplicaSets().Informer(), factory.Apps().V1().StatefulSets().Informer(),
	} {
		s.synced = append(s.synced, inf.HasSynced)
	}
	reg, err := core.Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.nodeAdded,
		UpdateFunc: s.nodeUpdated,
		DeleteFunc: s.nodeDeleted,
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: node handler: %w", err)
	}
	s.synced = append(s.synced, reg.HasSynced)
	reg, err = core.Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.podAdded,
		UpdateFunc: s.podUpdated,
		DeleteFunc: s.podDeleted,
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: pod handler: %w", err)
	}
	s.synced = append(s.synced, reg.HasSynced)
	return s, nil
}

// nsLister adapts a namespace lister.
type nsLister struct{ l corelisters.NamespaceLister }

func (n nsLister) labelsOf(name string) labels.Set {
	ns, err := n.l.Get(name)
	if err != nil {
		return nil
	}
	return labels.Set(ns.Labels)
}

func (n nsLister) matching(sel labels.Selector) []string {
	list, err := n.l.List(sel)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, ns := range list {
		out = append(out, ns.Name)
	}
	return out
}

// Run schedules pods until ctx is cancelled, then waits for the bindings
// in flight and returns nil.
func (s *Scheduler) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return nil
	}
	logger.Info("Starting scheduler", "schedulerName", s.cfg.SchedulerName)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.queue.run(ctx, s.clock)
	}()
	for {
		qp := s.queue.pop()
		if qp == nil {
			break
		}
		s.scheduleOne(ctx, qp)
	}
	<-done
	s.wg.Wait()
	return nil
}

func assigned(p *corev1.Pod) bool { return p.Spec.NodeName != "" }

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// pending reports whether the pod is this scheduler's to place now.
func (s *Scheduler) pending(p *corev1.Pod) bool {
	return !assigned(p) && !terminal(p) && p.DeletionTimestamp == nil &&
		p.Spec.SchedulerName == s.cfg.SchedulerName && len(p.Spec.SchedulingGates) == 0
}

func podFrom(obj any) *corev1.Pod {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

func (s *Scheduler) podAdded(obj any) {
	pod := podFrom(obj)
	if pod == nil {
		return
	}
	switch {
	case assigned(pod):
		if terminal(pod) {
			return
		}
		s.cache.addPod(pod)
		s.queue.delete(pod.UID)
		s.nominator.delete(pod.UID)
		s.queue.onEvent(evAssignedPodAdd)
	case s.pending(pod):
		s.setNomination(pod)
		if !s.cache.hasPod(pod.UID) {
			s.queue.add(pod)
		}
	}
}

func (s *Scheduler) setNomination(pod *corev1.Pod) {
	if pod.Status.NominatedNodeName == "" {
		s.nominator.delete(pod.UID)
		return
	}
	s.nominator.set(newPodInfo(pod), pod.Status.NominatedNodeName)
}

func (s *Scheduler) podUpdated(oldObj, newObj any) {
	old, pod := podFrom(oldObj), podFrom(newObj)
	if old == nil || pod == nil {
		return
	}
	switch {
	case assigned(pod) && terminal(pod):
		if s.cache.hasPod(pod.UID) {
			s.cache.removePod(pod)
			s.queue.onEvent(evAssignedPodDelete)
		}
	case assigned(pod):
		s.cache.addPod(pod)
		if !assigned(old) {
			s.queue.delete(pod.UID)
			s.nominator.delete(pod.UID)
			s.queue.onEvent(evAssignedPodAdd)
		} else if !equality.Semantic.DeepEqual(old.Labels, pod.Labels) {
			s.queue.onEvent(evAssignedPodUpdate)
		}
	case s.pending(pod):
		s.setNomination(pod)
		// An assumed pod's binding is in flight: leave it to the binder.
		if !s.cache.hasPod(pod.UID) {
			s.queue.update(pod)
		}
	default:
		s.queue.delete(pod.UID)
		s.nominator.delete(pod.UID)
	}
}

func (s *Scheduler) podDeleted(obj any) {
	pod := podFrom(obj)
	if pod == nil {
		return
	}
	s.queue.delete(pod.UID)
	s.nominator.delete(pod.UID)
	if s.cache.hasPod(pod.UID) {
		s.cache.removePod(pod)
		s.queue.onEvent(evAssignedPodDelete)
	}
}

func nodeFrom(obj any) *corev1.Node {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	n, _ := obj.(*corev1.Node)
	return n
}

func (s *Scheduler) nodeAdded(obj any) {
	if n := nodeFrom(obj); n != nil {
		s.cache.addNode(n)
		s.queue.onEvent(evNodeAdd)
	}
}

func (s *Scheduler) nodeUpdated(oldObj, newObj any) {
	old, n := nodeFrom(oldObj), nodeFrom(newObj)
	if old == nil || n == nil {
		return
	}
	s.cache.addNode(n)
	if !equality.Semantic.DeepEqual(old.Status.Allocatable, n.Status.Allocatable) {
		s.queue.onEvent(evNodeAllocatable)
	}
	if !equality.Semantic.DeepEqual(old.Labels, n.Labels) {
		s.queue.onEvent(evNodeLabel)
	}
	if old.Spec.Unschedulable != n.Spec.Unschedulable || !equality.Semantic.DeepEqual(old.Spec.Taints, n.Spec.Taints) {
		s.queue.onEvent(evNodeTaint)
	}
}

// volumeChanged wakes the bindings waiting for claims and retries the
// pods that volume binding turned away.
func (s *Scheduler) volumeChanged() {
	s.volumes.notify()
	s.queue.onEvent(evVolumeChange)
}

func (s *Scheduler) nodeDeleted(obj any) {
	if n := nodeFrom(obj); n != nil {
		s.cache.removeNode(n.Name)
	}
}

// errNoNodes is the failure when the cluster has no nodes at all.
var errNoNodes = errors.New(msgNoNodes)

// scheduleOne runs one scheduling cycle for qp: filter, score, assume,
// and bind in the background; or preempt and report the failure.
func (s *Scheduler) scheduleOne(ctx context.Context, qp *queuedPod) {
	pod := qp.pod
	logger := klog.FromContext(ctx)
	if pod.DeletionTimestamp != nil || s.cache.hasPod(pod.UID) {
		s.queue.done(pod.UID)
		return
	}
	s.cache.update(s.snap)
	if len(s.snap.list) == 0 {
		s.fail(ctx, qp, errNoNodes, 0, preemptionResult{})
		return
	}
	nominated := s.nominator.snapshot()
	node, fe, err := s.findNode(qp.info, nominated)
	if err != nil {
		s.fail(ctx, qp, err, 0, preemptionResult{})
		return
	}
	if fe != nil {
		var pr preemptionResult
		if fe.cs != nil {
			pr = s.preempt(ctx, fe.cs, fe.fitError, nominated)
		} else {
			pr = s.preempt(ctx, &cycleState{pi: qp.info, pod: pod}, fe.fitError, nominated)
		}
		fe.postFilterMsg = pr.message
		s.fail(ctx, qp, fe.fitError, fe.rejectedBy(), pr)
		return
	}

	// Reserve the chosen volumes, assume: count the pod on the node now,
	// and bind (volumes first) in the background.
	var volumes *podVolumes
	var nodeObj *corev1.Node
	if pv := s.cycleVolumes.forNode(node); !pv.empty() {
		volumes = pv
		nodeObj = s.snap.byName[node].node
	}
	ap := *pod
	ap.Spec.NodeName = node
	api := *qp.info
	api.pod = &ap
	if err := s.cache.assume(&api); err != nil {
		s.fail(ctx, qp, err, 0, preemptionResult{})
		return
	}
	if volumes != nil {
		s.volumes.assume(volumes)
	}
	s.nominator.delete(pod.UID)
	s.queue.done(pod.UID)
	logger.V(4).Info("Assumed pod on node", "pod", klog.KObj(pod), "node", node)
	select {
	case s.inFlight <- struct{}{}:
	case <-ctx.Done():
		s.cache.forget(pod.UID)
		if volumes != nil {
			s.volumes.release(volumes)
		}
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.inFlight }()
		if volumes != nil {
			err := s.volumes.bind(ctx, &ap, nodeObj, volumes)
			s.volumes.release(volumes)
			if err != nil {
				s.bindFailed(ctx, qp, &ap, err)
				return
			}
		}
		s.bind(ctx, qp, &ap)
	}()
}

// failure is a fit error with the cycle state it came from (nil when the
// pod was rejected before filtering).
type failure struct {
	*fitError
	cs *cycleState
}

// findNode filters the nodes, scores the feasible ones and returns the
// best; or a failure saying why none fits.
func (s *Scheduler) findNode(pi *podInfo, nominated map[string][]*podInfo) (string, *failure, error) {
	all := s.snap.list
	s.cycleVolumes = nil
	cs, st := newCycleState(pi, s.snap, s.ns)
	if st == nil && s.volumes != nil {
		var vs *volumeState
		if vs, st = s.volumes.preFilter(pi.pod); st == nil {
			cs.volumes, cs.vb, s.cycleVolumes = vs, s.volumes, vs
		} else if st.code == codeError {
			return "", nil, errors.New(st.reasons[0])
		}
	}
	if st != nil {
		return "", &failure{fitError: &fitError{numAllNodes: len(all), statuses: map[string]*status{}, absent: st, preFilterMsg: st.reasons[0]}}, nil
	}
	// A node nominated by an earlier preemption is tried first.
	if nnn := pi.pod.Status.NominatedNodeName; nnn != "" {
		if n := s.snap.byName[nnn]; n != nil && (cs.nodeNames == nil || cs.nodeNames.Has(nnn)) && filterWithNominated(cs, n, nominated).ok() {
			return nnn, nil, nil
		}
	}
	nodes := all
	fe := &fitError{numAllNodes: len(all), statuses: map[string]*status{}}
	if cs.nodeNames != nil {
		nodes = make([]*nodeInfo, 0, cs.nodeNames.Len())
		for _, name := range sets.List(cs.nodeNames) {
			if n := s.snap.byName[name]; n != nil {
				nodes = append(nodes, n)
			}
		}
		fe.absent = newStatus(codeUnresolvable, plNodeAffinity, "node(s) didn't satisfy plugin(s) [NodeAffinity]")
	}
	if len(nodes) == 0 {
		return "", &failure{fitError: fe, cs: cs}, nil
	}
	want := numFeasibleNodesToFind(s.cfg.PercentageOfNodesToScore, len(nodes))
	feasible := reuse(&s.buf.feasible, want)
	statuses := reuse(&s.buf.statuses, len(nodes))
	var mu sync.Mutex
	found, processed := 0, 0
	start := s.nextStart % len(nodes)
	s.par.until(len(nodes), func(i int) bool {
		n := nodes[(start+i)%len(nodes)]
		st := filterWithNominated(cs, n, nominated)
		mu.Lock()
		defer mu.Unlock()
		if found >= want {
			return false
		}
		processed++
		if st.ok() {
			feasible[found] = n
			found++
			return found < want
		}
		statuses[i] = st
		return true
	})
	s.nextStart = (start + processed) % len(all)
	feasible = feasible[:found]
	if found == 0 {
		for i, st := range statuses {
			if st != nil {
				fe.statuses[nodes[(start+i)%len(nodes)].name] = st
			}
		}
		return "", &failure{fitError: fe, cs: cs}, nil
	}
	if found == 1 {
		return feasible[0].name, nil, nil
	}
	plugins, err := scorePlugins(cs, feasible, s.snap, s.ns, s.owners)
	if err != nil {
		return "", nil, err
	}
	return selectHost(feasible, prioritize(plugins, feasible, s.par, &s.buf.scores), s.rnd).name, nil, nil
}

// cycleBuffers are a scheduling cycle's scratch slices, kept from one
// cycle to the next: with a thousand nodes they were most of what a cycle
// allocated. Cycles run one at a time and nothing keeps these slices past
// its cycle.
type cycleBuffers struct {
	feasible []*nodeInfo
	statuses []*status
	scores   []int64
}

// reuse returns (*buf)[:n] zeroed, growing *buf first when it is too short.
func reuse[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	s := (*buf)[:n]
	clear(s)
	return s
}

// numFeasibleNodesToFind is how many feasible nodes are enough to stop
// filtering: all of fewer than 100 nodes; else pct% of them (adaptive
// when pct is 0: 50% less 1% per 125 nodes, at least 5%), at least 100.
func numFeasibleNodesToFind(pct int32, nodes int) int {
	if nodes < 100 {
		return nodes
	}
	p := int(pct)
	if p == 0 {
		p = max(50-nodes/125, 5)
	}
	return max(nodes*p/100, 100)
}

// bind binds the assumed pod ap; on failure the pod is forgotten and
// retried after a backoff.
func (s *Scheduler) bind(ctx context.Context, qp *queuedPod, ap *corev1.Pod) {
	logger := klog.FromContext(ctx)
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ap.Namespace, Name: ap.Name, UID: ap.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: ap.Spec.NodeName},
	}
	err := retry.OnError(retry.DefaultBackoff, retriable, func() error {
		return s.client.CoreV1().Pods(ap.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	})
	if err == nil {
		logger.V(2).Info("Bound pod", "pod", klog.KObj(ap), "node", ap.Spec.NodeName)
		s.recorder.Eventf(ap, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %v/%v to %v", ap.Namespace, ap.Name, ap.Spec.NodeName)
		return
	}
	s.bindFailed(ctx, qp, ap, fmt.Errorf("binding rejected: %w", err))
}

// bindFailed forgets the assumed pod ap and retries it after a backoff.
func (s *Scheduler) bindFailed(ctx context.Context, qp *queuedPod, ap *corev1.Pod, err error) {
	s.cache.forget(ap.UID)
	s.queue.onEvent(evAssignedPodDelete)
	if ctx.Err() != nil {
		return
	}
	klog.FromContext(ctx).V(1).Info("Failed to bind pod", "pod", klog.KObj(ap), "node", ap.Spec.NodeName, "err", err)
	// This goroutine holds a slot already: report without taking another.
	s.report(ctx, qp, err, 0, preemptionResult{}, false)
}

func retriable(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || utilnet.IsConnectionRefused(err)
}

// fail puts the pod back in the queue and reports why it was not placed:
// a FailedScheduling event and the PodScheduled condition (status
// subresource, only when it changes), with the nominated node preemption
// chose. The status is written in the background.
func (s *Scheduler) fail(ctx context.Context, qp *queuedPod, err error, rejectedBy pluginSet, pr preemptionResult) {
	s.report(ctx, qp, err, rejectedBy, pr, true)
}

// report is fail, writing the status in the background when async is set
// (from the scheduling loop) or before it returns.
func (s *Scheduler) report(ctx context.Context, qp *queuedPod, err error, rejectedBy pluginSet, pr preemptionResult, async bool) {
	logger := klog.FromContext(ctx)
	pod := qp.pod
	var fe *fitError
	unschedulable := errors.As(err, &fe) || errors.Is(err, errNoNodes)
	cur, lerr := s.pods.Pods(pod.Namespace).Get(pod.Name)
	switch {
	case lerr != nil:
		logger.V(3).Info("Pod disappeared while scheduling", "pod", klog.KObj(pod))
		s.queue.delete(pod.UID)
		return
	case cur.UID != pod.UID:
		s.queue.delete(pod.UID)
		return
	case assigned(cur):
		s.queue.done(pod.UID)
		return
	}
	s.queue.requeue(qp, cur, rejectedBy, !unschedulable)
	if pr.nominate != nil {
		if *pr.nominate == "" {
			s.nominator.delete(cur.UID)
		} else {
			s.nominator.set(qp.info, *pr.nominate)
		}
	}
	msg := err.Error()
	if unschedulable {
		logger.V(2).Info("Unable to schedule pod; no fit; waiting", "pod", klog.KObj(cur), "err", msg)
	} else {
		logger.Error(err, "Error scheduling pod; retrying", "pod", klog.KObj(cur))
	}
	if len(msg) > noteLengthLimit {
		msg = msg[:noteLengthLimit-4] + " ..."
	}
	s.recorder.Event(cur, corev1.EventTypeWarning, "FailedScheduling", msg)
	reason := corev1.PodReasonUnschedulable
	if !unschedulable {
		reason = corev1.PodReasonSchedulerError
	}
	cond := &corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: err.Error(), ObservedGeneration: cur.Generation}
	write := func() {
		if err := s.patchStatus(ctx, cur, cond, pr.nominate); err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			logger.Error(err, "Cannot update the pod's scheduling status", "pod", klog.KObj(cur))
		}
	}
	if !async {
		write()
		return
	}
	select {
	case s.inFlight <- struct{}{}:
	case <-ctx.Done():
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.inFlight }()
		write()
	}()
}

// setCondition sets cond in st, keeping the transition time when the
// status does not change; it reports whether anything changed.
func setCondition(st *corev1.PodStatus, cond *corev1.PodCondition, now metav1.Time) bool {
	c := *cond
	c.LastTransitionTime = now
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		same := old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message &&
			old.ObservedGeneration == c.ObservedGeneration && old.LastProbeTime.Equal(&c.LastProbeTime)
		*old = c
		return !same
	}
	st.Conditions = append(st.Conditions, c)
	return true
}

// patchStatus patches the pod's status with cond and, when nominate is
// not nil, status.nominatedNodeName; nothing is sent when neither changes.
func (s *Scheduler) patchStatus(ctx context.Context, pod *corev1.Pod, cond *corev1.PodCondition, nominate *string) error {
	next := pod.Status.DeepCopy()
	changed := false
	if cond != nil {
		changed = setCondition(next, cond, metav1.NewTime(s.clock.Now()))
	}
	if nominate != nil && next.NominatedNodeName != *nominate {
		next.NominatedNodeName = *nominate
		changed = true
	}
	if !changed {
		return nil
	}
	oldJSON, err := json.Marshal(corev1.Pod{Status: pod.Status})
	if err != nil {
		return err
	}
	newJSON, err := json.Marshal(corev1.Pod{Status: *next})
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("status patch for %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}
