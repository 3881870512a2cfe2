package metricsapi

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// point is one sample of a node or container.
type point struct {
	// at is the sample's timestamp.
	at time.Time
	// cpu is the cumulative CPU time in nanoseconds.
	cpu uint64
	// memory is the working set in bytes.
	memory uint64
	// started is the container's start time (zero for a node).
	started time.Time
}

// nodeBatch is what one scrape of a node read.
type nodeBatch struct {
	node       *point
	containers map[containerKey]point
}

type containerKey struct {
	namespace, pod, container string
}

type podKey struct{ namespace, name string }

// series keeps the last two points of one node or container.
type series struct{ prev, last point }

// storage keeps the last two points of every node and container and
// turns them into metrics. Safe for concurrent use.
type storage struct {
	mu         sync.RWMutex
	nodes      map[string]*series
	containers map[containerKey]*series
	// containersOf lists each node's containers of its last scrape, so a
	// node's batch replaces what it reported before.
	containersOf map[string][]containerKey
	// lastScrape is each node's previous scrape time: a container started
	// after it is new, its previous point is its start with no CPU used.
	lastScrape map[string]time.Time
}

func newStorage() *storage {
	return &storage{
		nodes:        map[string]*series{},
		containers:   map[containerKey]*series{},
		containersOf: map[string][]containerKey{},
		lastScrape:   map[string]time.Time{},
	}
}

// store records one node's scrape taken at scrapedAt.
func (s *storage) store(node string, b nodeBatch, scrapedAt time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.node != nil {
		if old, ok := s.nodes[node]; ok && b.node.at.After(old.last.at) {
			s.nodes[node] = &series{prev: old.last, last: *b.node}
		} else if !ok {
			s.nodes[node] = &series{last: *b.node}
		}
	} else {
		delete(s.nodes, node)
	}
	before := s.lastScrape[node]
	for _, k := range s.containersOf[node] {
		if _, still := b.containers[k]; !still {
			delete(s.containers, k)
		}
	}
	keys := make([]containerKey, 0, len(b.containers))
	for k, p := range b.containers {
		keys = append(keys, k)
		old, ok := s.containers[k]
		switch {
		case ok && !old.last.started.Equal(p.started):
			// Restarted: its counter began again.
			s.containers[k] = &series{last: p}
			if !p.started.IsZero() && p.started.Before(p.at) {
				s.containers[k].prev = point{at: p.started, started: p.started}
			}
		case ok && p.at.After(old.last.at):
			s.containers[k] = &series{prev: old.last, last: p}
		case ok:
			// The same sample again: keep the window.
		case !before.IsZero() && !p.started.IsZero() && p.started.After(before) && p.started.Before(p.at):
			// New since the node's previous scrape: it used its CPU since
			// it started.
			s.containers[k] = &series{prev: point{at: p.started, started: p.started}, last: p}
		default:
			s.containers[k] = &series{last: p}
		}
	}
	s.containersOf[node] = keys
	s.lastScrape[node] = scrapedAt
}

// forget drops the nodes not in keep.
func (s *storage) forget(keep map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := range s.lastScrape {
		if keep[n] {
			continue
		}
		for _, k := range s.containersOf[n] {
			delete(s.containers, k)
		}
		delete(s.containersOf, n)
		delete(s.lastScrape, n)
		delete(s.nodes, n)
	}
}

// rate is the CPU used between two points as a quantity of cores, with
// the window; ok false when the points do not make a rate.
func rate(sr *series) (cpu resource.Quantity, window time.Duration, ok bool) {
	window = sr.last.at.Sub(sr.prev.at)
	if sr.prev.at.IsZero() || window <= 0 || sr.last.cpu < sr.prev.cpu {
		return resource.Quantity{}, 0, false
	}
	nano := uint64(float64(sr.last.cpu-sr.prev.cpu) / window.Seconds())
	return *resource.NewScaledQuantity(int64(nano), -9), window, true
}

// nodeMetrics returns the metrics of the given nodes that have two points.
func (s *storage) nodeMetrics(nodes []*corev1.Node) []metricsv1beta1.NodeMetrics {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []metricsv1beta1.NodeMetrics{}
	nodes = append([]*corev1.Node(nil), nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		sr, ok := s.nodes[n.Name]
		if !ok {
			continue
		}
		cpu, window, ok := rate(sr)
		if !ok {
			continue
		}
		out = append(out, metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: metav1.NewTime(time.Now())},
			Timestamp:  metav1.NewTime(sr.last.at),
			Window:     metav1.Duration{Duration: window},
			Usage: corev1.ResourceList{
				corev1.ResourceCPU:    cpu,
				corev1.ResourceMemory: *resource.NewQuantity(int64(sr.last.memory), resource.BinarySI),
			},
		})
	}
	return out
}

// podMetrics returns the metrics of the given pods whose containers
// each have two points; the pod's timestamp and window are its latest
// container's.
func (s *storage) podMetrics(pods []*corev1.Pod) []metricsv1beta1.PodMetrics {
	s.mu.RLock()
	defer s.mu.RUnlock()
	byPod := map[podKey][]containerKey{}
	for k := range s.containers {
		pk := podKey{k.namespace, k.pod}
		byPod[pk] = append(byPod[pk], k)
	}
	out := []metricsv1beta1.PodMetrics{}
	pods = append([]*corev1.Pod(nil), pods...)
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	for _, p := range pods {
		keys := byPod[podKey{p.Namespace, p.Name}]
		if len(keys) == 0 {
			continue
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].container < keys[j].container })
		pm := metricsv1beta1.PodMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: metav1.NewTime(time.Now())},
		}
		complete := true
		for _, k := range keys {
			sr := s.containers[k]
			cpu, window, ok := rate(sr)
			if !ok {
				complete = false
				break
			}
			if sr.last.at.After(pm.Timestamp.Time) {
				pm.Timestamp, pm.Window = metav1.NewTime(sr.last.at), metav1.Duration{Duration: window}
			}
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{
				Name: k.container,
				Usage: corev1.ResourceList{
					corev1.ResourceCPU:    cpu,
					corev1.ResourceMemory: *resource.NewQuantity(int64(sr.last.memory), resource.BinarySI),
				},
			})
		}
		if complete {
			out = append(out, pm)
		}
	}
	return out
}
