// Package nodestatus registers the agent's Node and keeps its status and
// Lease current: capacity and allocatable, addresses, node info,
// conditions (Ready and the pressure conditions), the agent's endpoint;
// the Lease is renewed every 10 s, the status posted when it changes and
// at least every 5 minutes, as upstream's kubelet does.
package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/apimachinery/lease"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	coreapi "github.com/k1s/k1s/internal/apis/core"
	"github.com/k1s/k1s/internal/nodeautonomy"
)

// Config describes the node.
type Config struct {
	// NodeName (--node-name). Required.
	NodeName string
	// NodeIPs are the InternalIP addresses (--node-ip). Required.
	NodeIPs []net.IP
	// ExternalIPs (--node-external-ip) and ExternalDNS
	// (--node-external-dns) are reported as ExternalIP and ExternalDNS
	// addresses, as k3s's cloud provider does. Default none.
	ExternalIPs []net.IP
	ExternalDNS []string
	// Hostname is reported as the Hostname address. Default os.Hostname().
	Hostname string
	// Labels are added at registration (--node-label) on top of the
	// well-known ones; ControlPlane adds node-role.kubernetes.io/control-plane.
	Labels       map[string]string
	ControlPlane bool
	// Taints are set at registration (--node-taint).
	Taints []corev1.Taint
	// EdgeAutonomy (--edge-autonomy) marks the Node autonomous at
	// registration: internal/nodeautonomy's annotation and label, which
	// keep the node-lifecycle controller from evicting its pods while it
	// is unreachable. false removes both. Default false.
	EdgeAutonomy bool
	// AgentPort is published in status.daemonEndpoints. Default 10250.
	AgentPort int32
	// MaxPods is the pods capacity. Default 110.
	MaxPods int64
	// DataDir's filesystem is the node's ephemeral storage.
	DataDir string
	// KubeletVersion is reported in nodeInfo.
	KubeletVersion string
	// Pressure reports the eviction manager's pressure conditions; nil:
	// never under pressure.
	Pressure Pressure
	// Allocatable computes allocatable from capacity (the container
	// manager's: capacity less reservations and hard eviction
	// thresholds). nil: allocatable is capacity.
	Allocatable func(capacity corev1.ResourceList) corev1.ResourceList
	// StatusUpdateFrequency is how often status is computed (10s);
	// StatusReportFrequency is the longest time between posts (5m).
	StatusUpdateFrequency, StatusReportFrequency time.Duration
	// LeaseDurationSeconds (40) and the renew interval (10s).
	LeaseDurationSeconds int32
	LeaseRenewInterval   time.Duration
}

func (c *Config) setDefaults() {
	if c.Hostname == "" {
		c.Hostname, _ = os.Hostname()
	}
	if c.AgentPort == 0 {
		c.AgentPort = 10250
	}
	if c.MaxPods == 0 {
		c.MaxPods = 110
	}
	if c.StatusUpdateFrequency == 0 {
		c.StatusUpdateFrequency = 10 * time.Second
	}
	if c.StatusReportFrequency == 0 {
		c.StatusReportFrequency = 5 * time.Minute
	}
	if c.LeaseDurationSeconds == 0 {
		c.LeaseDurationSeconds = 40
	}
	if c.LeaseRenewInterval == 0 {
		c.LeaseRenewInterval = 10 * time.Second
	}
}

// Pressure is what the MemoryPressure, DiskPressure and PIDPressure
// conditions report (the eviction manager).
type Pressure interface {
	IsUnderMemoryPressure() bool
	IsUnderDiskPressure() bool
	IsUnderPIDPressure() bool
}

// pressureConditions are the three pressure conditions, with upstream's
// reasons and messages.
func pressureConditions(p Pressure) []corev1.NodeCondition {
	mem := corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"}
	disk := corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"}
	pid := corev1.NodeCondition{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"}
	if p != nil && p.IsUnderMemoryPressure() {
		mem.Status, mem.Reason, mem.Message = corev1.ConditionTrue, "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"
	}
	if p != nil && p.IsUnderDiskPressure() {
		disk.Status, disk.Reason, disk.Message = corev1.ConditionTrue, "KubeletHasDiskPressure", "kubelet has disk pressure"
	}
	if p != nil && p.IsUnderPIDPressure() {
		pid.Status, pid.Reason, pid.Message = corev1.ConditionTrue, "KubeletHasInsufficientPID", "kubelet has insufficient PID available"
	}
	return []corev1.NodeCondition{mem, disk, pid}
}

// Health reports what the Ready condition depends on.
type Health interface {
	// RuntimeReady returns an error when the container runtime is not usable.
	RuntimeReady(ctx context.Context) error
	// NetworkReady returns an error when pods cannot get networking yet.
	NetworkReady() error
	// RuntimeVersion is e.g. "containerd://2.4.2".
	RuntimeVersion(ctx context.Context) string
}

// Manager owns the Node object of this agent.
type Manager struct {
	cfg    Config
	client kubernetes.Interface
	health Health
	clock  clock.Clock

	mu         sync.Mutex
	registered chan struct{}
	lastPost   time.Time
	lastStatus *corev1.NodeStatus
	ready      chan struct{}
	readyOnce  sync.Once
}

// New returns a node status manager.
func New(cfg Config, client kubernetes.Interface, health Health, clk clock.Clock) (*Manager, error) {
	cfg.setDefaults()
	if cfg.NodeName == "" {
		return nil, errors.New("--node-name: must not be empty")
	}
	if len(cfg.NodeIPs) == 0 {
		return nil, errors.New("--node-ip: no node address")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Manager{cfg: cfg, client: client, health: health, clock: clk, registered: make(chan struct{}), ready: make(chan struct{})}, nil
}

// Registered is closed once the Node exists.
func (m *Manager) Registered() <-chan struct{} { return m.registered }

// Ready is closed once the node has been reported Ready.
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// Run registers the node, then updates its status and renews its lease
// until ctx is cancelled.
func (m *Manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("nodestatus")
	ctx = klog.NewContext(ctx, logger)
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := m.register(ctx); err != nil {
			logger.Error(err, "Unable to register node, will retry")
			return false, nil
		}
		return true, nil
	}); err != nil {
		return nil
	}
	close(m.registered)
	logger.Info("Node registered", "node", m.cfg.NodeName)

	lc := lease.NewController(m.clock, m.client, m.cfg.NodeName, m.cfg.LeaseDurationSeconds, nil,
		m.cfg.LeaseRenewInterval, m.cfg.NodeName, corev1.NamespaceNodeLease, m.setLeaseOwner)
	go lc.Run(ctx)

	wait.JitterUntilWithContext(ctx, func(ctx context.Context) {
		if err := m.update(ctx); err != nil {
			logger.Error(err, "Unable to update node status")
		}
	}, m.cfg.StatusUpdateFrequency, 0.04, true)
	return nil
}

// TriggerUpdate asks for a status update now (e.g. when the network
// becomes ready).
func (m *Manager) TriggerUpdate(ctx context.Context) {
	if err := m.update(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Unable to update node status")
	}
}

func (m *Manager) setLeaseOwner(l *coordinationv1.Lease) error {
	if len(l.OwnerReferences) > 0 {
		return nil
	}
	node, err := m.client.CoreV1().Nodes().Get(context.Background(), m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	return nil
}

func (m *Manager) labels() map[string]string {
	l := map[string]string{
		corev1.LabelHostname:      m.cfg.NodeName,
		corev1.LabelOSStable:      runtime.GOOS,
		corev1.LabelArchStable:    runtime.GOARCH,
		"beta.kubernetes.io/os":   runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	if m.cfg.ControlPlane {
		l["node-role.kubernetes.io/control-plane"] = "true"
	}
	for k, v := range m.cfg.Labels {
		l[k] = v
	}
	return l
}

func (m *Manager) register(ctx context.Context) error {
	nodes := m.client.CoreV1().Nodes()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: m.cfg.NodeName, Labels: m.labels()},
		Spec:       corev1.NodeSpec{Taints: m.cfg.Taints},
	}
	m.markAutonomy(node)
	node.Status = m.status(ctx, nil)
	_, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", m.cfg.NodeName, err)
	}
	// Re-registration: keep the existing object, refresh the labels we own.
	existing, err := nodes.Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", m.cfg.NodeName, err)
	}
	updated := existing.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	for k, v := range m.labels() {
		updated.Labels[k] = v
	}
	m.markAutonomy(updated)
	if !apiequality.Semantic.DeepEqual(updated.Labels, existing.Labels) || !apiequality.Semantic.DeepEqual(updated.Annotations, existing.Annotations) {
		if _, err := nodes.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update node %s labels: %w", m.cfg.NodeName, err)
		}
	}
	return nil
}

// markAutonomy sets (--edge-autonomy) or removes the autonomy annotation
// and label of node.
func (m *Manager) markAutonomy(node *corev1.Node) {
	if !m.cfg.EdgeAutonomy {
		delete(node.Annotations, nodeautonomy.Annotation)
		delete(node.Labels, nodeautonomy.Label)
		return
	}
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Annotations[nodeautonomy.Annotation] = nodeautonomy.Value
	node.Labels[nodeautonomy.Label] = nodeautonomy.Value
}

// update computes the status and posts it when it changed or the report
// interval passed.
func (m *Manager) update(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	// As kubelet: a few immediate tries, each from a fresh read, rather
	// than waiting a whole status period after a failure.
	var err error
	for try := range statusUpdateTries {
		if err = m.tryUpdate(ctx, try); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// statusUpdateTries is how many times update tries (kubelet's
// nodeStatusUpdateRetry).
const statusUpdateTries = 5

// tryUpdate posts the node's status if it changed or is due. The status
// is sent as a strategic merge patch of nodes/status, as kubelet sends
// it: a patch carries only the status, so a concurrent change of the
// node's spec (the node-lifecycle controller adding or removing a taint)
// neither conflicts with it nor reads as the node changing its own taints,
// which the NodeRestriction admission plugin refuses.
//
// The first try reads the node from the apiserver's watch cache, the
// others from etcd, as kubelet's do.
func (m *Manager) tryUpdate(ctx context.Context, try int) error {
	opts := metav1.GetOptions{}
	if try == 0 {
		opts.ResourceVersion = "0"
	}
	node, err := m.client.CoreV1().Nodes().Get(ctx, m.cfg.NodeName, opts)
	if apierrors.IsNotFound(err) {
		// Deleted behind our back: register again.
		return m.register(ctx)
	}
	if err != nil {
		return fmt.Errorf("get node: %w", err)
	}
	st := m.status(ctx, &node.Status)
	now := m.clock.Now()
	if m.lastStatus != nil && statusEqual(m.lastStatus, &st) && now.Sub(m.lastPost) < m.cfg.StatusReportFrequency {
		return nil
	}
	updated := node.DeepCopy()
	updated.Status = st
	if _, _, err := nodeutil.PatchNodeStatus(m.client.CoreV1(), types.NodeName(node.Name), node, updated); err != nil {
		return fmt.Errorf("update node status: %w", err)
	}
	m.lastPost = now
	m.lastStatus = &st
	for _, c := range st.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			m.readyOnce.Do(func() { close(m.ready) })
		}
	}
	return nil
}

// statusEqual compares statuses ignoring heartbeat times.
func statusEqual(a, b *corev1.NodeStatus) bool {
	strip := func(s *corev1.NodeStatus) *corev1.NodeStatus {
		c := s.DeepCopy()
		for i := range c.Conditions {
			c.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return c
	}
	return apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

// status computes the node's status; old carries the previous conditions
// so transition times only move on change.
func (m *Manager) status(ctx context.Context, old *corev1.NodeStatus) corev1.NodeStatus {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memoryBytes(), resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(m.cfg.MaxPods, resource.DecimalSI),
	}
	if s, ok := diskBytes(m.cfg.DataDir); ok {
		capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(s, resource.BinarySI)
	}
	if old != nil {
		// Extended resources someone else advertises (a patch of the
		// node's status, as a device or an operator does) stay, and
		// count in allocatable as kubelet's keep them.
		for name, q := range old.Capacity {
			if _, set := capacity[name]; !set && coreapi.IsExtendedResourceName(name) {
				capacity[name] = q.DeepCopy()
			}
		}
	}
	st := corev1.NodeStatus{
		Capacity:        capacity,
		Allocatable:     capacity.DeepCopy(),
		Phase:           "",
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: m.cfg.AgentPort}},
		NodeInfo:        m.nodeInfo(ctx),
	}
	if m.cfg.Allocatable != nil {
		st.Allocatable = m.cfg.Allocatable(capacity.DeepCopy())
	}
	for _, ip := range m.cfg.NodeIPs {
		st.Addresses = append(st.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
	}
	for _, ip := range m.cfg.ExternalIPs {
		st.Addresses = append(st.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: ip.String()})
	}
	st.Addresses = append(st.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: m.cfg.Hostname})
	for _, name := range m.cfg.ExternalDNS {
		st.Addresses = append(st.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalDNS, Address: name})
	}

	now := metav1.NewTime(m.clock.Now())
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	var problems []string
	if m.health != nil {
		if err := m.health.RuntimeReady(ctx); err != nil {
			problems = append(problems, "container runtime is down: "+err.Error())
		}
		if err := m.health.NetworkReady(); err != nil {
			problems = append(problems, "container runtime network not ready: "+err.Error())
		}
	}
	if len(problems) > 0 {
		ready.Status, ready.Reason, ready.Message = corev1.ConditionFalse, "KubeletNotReady", strings.Join(problems, "; ")
	}
	conds := append(pressureConditions(m.cfg.Pressure), ready)
	for i := range conds {
		c := &conds[i]
		c.LastHeartbeatTime = now
		c.LastTransitionTime = now
		if old != nil {
			for _, oc := range old.Conditions {
				if oc.Type == c.Type && oc.Status == c.Status && !oc.LastTransitionTime.IsZero() {
					c.LastTransitionTime = oc.LastTransitionTime
				}
			}
		}
	}
	st.Conditions = conds
	if old != nil {
		st.Images = old.Images
		st.VolumesInUse = old.VolumesInUse
		st.VolumesAttached = old.VolumesAttached
	}
	return st
}

func (m *Manager) nodeInfo(ctx context.Context) corev1.NodeSystemInfo {
	info := corev1.NodeSystemInfo{
		MachineID:       readTrim("/etc/machine-id"),
		SystemUUID:      readTrim("/sys/class/dmi/id/product_uuid"),
		BootID:          readTrim("/proc/sys/kernel/random/boot_id"),
		KernelVersion:   readTrim("/proc/sys/kernel/osrelease"),
		OSImage:         osImage(),
		OperatingSystem: runtime.GOOS,
		Architecture:    runtime.GOARCH,
		KubeletVersion:  m.cfg.KubeletVersion,
	}
	if m.health != nil {
		info.ContainerRuntimeVersion = m.health.RuntimeVersion(ctx)
	}
	return info
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func osImage() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "Linux"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}

func memoryBytes() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			var kb int64
			fmt.Sscan(f[1], &kb)
			return kb * 1024
		}
	}
	return 0
}

// MemoryBytes is the machine's memory (for OOM score computation).
func MemoryBytes() int64 { return memoryBytes() }

func diskBytes(dir string) (int64, bool) {
	if dir == "" {
		return 0, false
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Blocks) * st.Bsize, true
}
