package scheduler

import (
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeInfo is a node with the pods on it and what they take. The cache
// owns and mutates its nodeInfos under its lock; a snapshot holds clones
// that the scheduling cycle reads (and preemption clones again to try
// removing pods).
type nodeInfo struct {
	name string
	node *corev1.Node // nil while pods name a node the cache has not seen
	pods []*podInfo
	// withAffinity are the pods with pod (anti-)affinity; withReqAnti those
	// with required anti-affinity terms.
	withAffinity []*podInfo
	withReqAnti  []*podInfo

	allocatable resources
	// requested sums the pods' requests; nonZeroCPU/Mem their requests with
	// defaults for containers asking for nothing.
	requested              resources
	nonZeroCPU, nonZeroMem int64
	ports                  []usedPort

	generation int64
}

func newNodeInfo(name string) *nodeInfo { return &nodeInfo{name: name} }

func (n *nodeInfo) setNode(node *corev1.Node) {
	n.node = node
	if node != nil {
		n.allocatable = newResources(node.Status.Allocatable)
	} else {
		n.allocatable = resources{}
	}
}

func (n *nodeInfo) addPod(p *podInfo) {
	n.pods = append(n.pods, p)
	if p.hasPodAffinity() {
		n.withAffinity = append(n.withAffinity, p)
	}
	if len(p.reqAnti) > 0 {
		n.withReqAnti = append(n.withReqAnti, p)
	}
	n.requested.add(&p.req, 1)
	n.nonZeroCPU += p.nonZeroCPU
	n.nonZeroMem += p.nonZeroMem
	for _, hp := range p.ports {
		n.ports = append(n.ports, newUsedPort(hp))
	}
}

// removePod removes the pod with uid; it reports whether it was there.
func (n *nodeInfo) removePod(uid types.UID) bool {
	idx := -1
	for i, p := range n.pods {
		if p.pod.UID == uid {
			idx = i
			break
		}
	}
	if idx < 0 {
		return false
	}
	p := n.pods[idx]
	n.pods = removeAt(n.pods, idx)
	n.withAffinity = removeUID(n.withAffinity, uid)
	n.withReqAnti = removeUID(n.withReqAnti, uid)
	n.requested.add(&p.req, -1)
	n.nonZeroCPU -= p.nonZeroCPU
	n.nonZeroMem -= p.nonZeroMem
	if len(p.ports) > 0 {
		n.ports = n.ports[:0:0]
		for _, q := range n.pods {
			for _, hp := range q.ports {
				n.ports = append(n.ports, newUsedPort(hp))
			}
		}
	}
	return true
}

// removeAt removes s[i] keeping the order, without touching the backing
// array a clone may share.
func removeAt(s []*podInfo, i int) []*podInfo {
	out := make([]*podInfo, 0, len(s)-1)
	out = append(out, s[:i]...)
	return append(out, s[i+1:]...)
}

func removeUID(s []*podInfo, uid types.UID) []*podInfo {
	for i, p := range s {
		if p.pod.UID == uid {
			return removeAt(s, i)
		}
	}
	return s
}

// clone copies n so that adding or removing pods on either leaves the
// other alone (the podInfos themselves are immutable and shared).
func (n *nodeInfo) clone() *nodeInfo {
	c := *n
	c.pods = append([]*podInfo(nil), n.pods...)
	c.withAffinity = append([]*podInfo(nil), n.withAffinity...)
	c.withReqAnti = append([]*podInfo(nil), n.withReqAnti...)
	c.ports = append([]usedPort(nil), n.ports...)
	c.requested = n.requested.clone()
	return &c
}

// podState is the cache's record of a pod on a node.
type podState struct {
	info *podInfo
	// assumed pods were placed by this scheduler and are not yet seen
	// bound in the informer.
	assumed bool
}

type nodeItem struct {
	info       *nodeInfo
	prev, next *nodeItem
}

// schedCache holds every node and the pods assigned (or assumed) to them.
// Safe for concurrent use.
type schedCache struct {
	mu    sync.Mutex
	nodes map[string]*nodeItem
	// head is the most recently changed node; generations decrease along
	// next, so a snapshot copies only the nodes changed since its own.
	head *nodeItem
	pods map[types.UID]*podState
	gen  int64
	// nodeSetGen changes whenever a node appears in or leaves the set of
	// schedulable nodeInfos (those with a Node).
	nodeSetGen int64
}

func newSchedCache() *schedCache {
	return &schedCache{nodes: map[string]*nodeItem{}, pods: map[types.UID]*podState{}}
}

// touch moves the node's item to the head with a new generation.
func (c *schedCache) touch(name string) *nodeInfo {
	it, ok := c.nodes[name]
	if !ok {
		it = &nodeItem{info: newNodeInfo(name)}
		c.nodes[name] = it
	} else if c.head != it {
		c.unlink(it)
	}
	if c.head != it {
		it.next = c.head
		if c.head != nil {
			c.head.prev = it
		}
		c.head = it
	}
	c.gen++
	it.info.generation = c.gen
	return it.info
}

func (c *schedCache) unlink(it *nodeItem) {
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	if c.head == it {
		c.head = it.next
	}
	it.prev, it.next = nil, nil
}

// dropIfEmpty forgets a nodeInfo with neither a Node nor pods.
func (c *schedCache) dropIfEmpty(name string) {
	if it, ok := c.nodes[name]; ok && it.info.node == nil && len(it.info.pods) == 0 {
		c.unlink(it)
		delete(c.nodes, name)
	}
}

func (c *schedCache) addNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.touch(node.Name)
	if n.node == nil {
		c.nodeSetGen++
	}
	n.setNode(node)
}

func (c *schedCache) removeNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodes[name]; !ok {
		return
	}
	n := c.touch(name)
	n.setNode(nil)
	c.nodeSetGen++
	c.dropIfEmpty(name)
}

// addPod records an assigned pod seen in the informer; an assumed pod is
// confirmed (and moved if it landed elsewhere).
func (c *schedCache) addPod(pod *corev1.Pod) {
	pi := newPodInfo(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setPodLocked(pi, false)
}

// setPodLocked places pi on its node, replacing what the cache had for
// the same UID.
func (c *schedCache) setPodLocked(pi *podInfo, assumed bool) {
	uid := pi.pod.UID
	if old, ok := c.pods[uid]; ok {
		name := old.info.pod.Spec.NodeName
		c.touch(name).removePod(uid)
		c.dropIfEmpty(name)
	}
	c.touch(pi.pod.Spec.NodeName).addPod(pi)
	c.pods[uid] = &podState{info: pi, assumed: assumed}
}

// removePod forgets a pod that was deleted or finished.
func (c *schedCache) removePod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removePodLocked(pod.UID)
}

func (c *schedCache) removePodLocked(uid types.UID) {
	st, ok := c.pods[uid]
	if !ok {
		return
	}
	name := st.info.pod.Spec.NodeName
	c.touch(name).removePod(uid)
	c.dropIfEmpty(name)
	delete(c.pods, uid)
}

// assume counts pi (whose spec.nodeName is set) on its node before the
// binding is confirmed by the informer.
func (c *schedCache) assume(pi *podInfo) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pi.pod.UID]; ok {
		return fmt.Errorf("pod %s/%s is already in the scheduler cache", pi.pod.Namespace, pi.pod.Name)
	}
	c.setPodLocked(pi, true)
	return nil
}

// forget undoes assume after a failed binding; a pod the informer has
// already confirmed is kept.
func (c *schedCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.pods[uid]; ok && st.assumed {
		c.removePodLocked(uid)
	}
}

// isAssumed reports whether the pod is assumed and not yet confirmed.
func (c *schedCache) isAssumed(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.pods[uid]
	return ok && st.assumed
}

// hasPod reports whether the pod is in the cache, assumed or confirmed.
func (c *schedCache) hasPod(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pods[uid]
	return ok
}

// snapshot is a consistent copy of the cache's nodes for one scheduling
// cycle. Not safe for concurrent mutation; readers may share it.
type snapshot struct {
	byName map[string]*nodeInfo
	// list is every node with a Node object, in name order.
	list []*nodeInfo
	// withAffinity and withReqAnti are the nodes holding pods with pod
	// (anti-)affinity, and with required anti-affinity.
	withAffinity []*nodeInfo
	withReqAnti  []*nodeInfo
	index        map[string]int
	gen          int64
	nodeSetGen   int64
}

func newSnapshot() *snapshot {
	return &snapshot{byName: map[string]*nodeInfo{}, index: map[string]int{}, nodeSetGen: -1}
}

// newSnapshotFrom builds a snapshot of the given nodeInfos (for tests and
// preemption dry runs).
func newSnapshotFrom(nodes ...*nodeInfo) *snapshot {
	s := newSnapshot()
	for _, n := range nodes {
		s.byName[n.name] = n
	}
	s.rebuildList()
	return s
}

// update brings s up to date with the cache, copying only the nodes that
// changed since the last update.
func (c *schedCache) update(s *snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := false
	for it := c.head; it != nil && it.info.generation > s.gen; it = it.next {
		changed = true
		if it.info.node == nil {
			delete(s.byName, it.info.name)
			continue
		}
		cl := it.info.clone()
		s.byName[it.info.name] = cl
		if i, ok := s.index[it.info.name]; ok && s.nodeSetGen == c.nodeSetGen {
			s.list[i] = cl
		}
	}
	s.gen = c.gen
	if s.nodeSetGen != c.nodeSetGen {
		for name := range s.byName {
			if it, ok := c.nodes[name]; !ok || it.info.node == nil {
				delete(s.byName, name)
			}
		}
		s.nodeSetGen = c.nodeSetGen
		s.rebuildList()
		return
	}
	if changed {
		s.rebuildAffinityLists()
	}
}

func (s *snapshot) rebuildList() {
	s.list = s.list[:0]
	for _, n := range s.byName {
		if n.node != nil {
			s.list = append(s.list, n)
		}
	}
	sort.Slice(s.list, func(i, j int) bool { return s.list[i].name < s.list[j].name })
	clear(s.index)
	for i, n := range s.list {
		s.index[n.name] = i
	}
	s.rebuildAffinityLists()
}

func (s *snapshot) rebuildAffinityLists() {
	s.withAffinity, s.withReqAnti = s.withAffinity[:0], s.withReqAnti[:0]
	for _, n := range s.list {
		if len(n.withAffinity) > 0 {
			s.withAffinity = append(s.withAffinity, n)
		}
		if len(n.withReqAnti) > 0 {
			s.withReqAnti = append(s.withReqAnti, n)
		}
	}
}
