// Package nodeipam gives every node a pod CIDR (spec.podCIDR and
// spec.podCIDRs) carved from the cluster CIDR (--cluster-cidr, a /24 per
// node by --node-cidr-mask-size), as upstream's range allocator does. A
// deleted node's range is free again as soon as the node is gone.
package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/internal/cachesync"
)

// Config is the allocator's range.
type Config struct {
	// ClusterCIDR is the pod range (--cluster-cidr). Default 10.42.0.0/16.
	ClusterCIDR *net.IPNet
	// NodeMaskSize is each node's prefix length (--node-cidr-mask-size). Default 24.
	NodeMaskSize int
}

func (c *Config) setDefaults() {
	if c.ClusterCIDR == nil {
		_, c.ClusterCIDR, _ = net.ParseCIDR("10.42.0.0/16")
	}
	if c.NodeMaskSize == 0 {
		c.NodeMaskSize = 24
	}
}

// Validate checks the mask fits the range, naming the flags.
func (c *Config) Validate() error {
	ones, bits := c.ClusterCIDR.Mask.Size()
	if c.NodeMaskSize < ones || c.NodeMaskSize > bits {
		return fmt.Errorf("--node-cidr-mask-size: %d must be between the --cluster-cidr prefix (%d) and %d", c.NodeMaskSize, ones, bits)
	}
	if c.NodeMaskSize-ones > 16 {
		return fmt.Errorf("--node-cidr-mask-size: %d gives more than 65536 node ranges in --cluster-cidr %s", c.NodeMaskSize, c.ClusterCIDR)
	}
	return nil
}

// Controller allocates node pod CIDRs.
type Controller struct {
	cfg      Config
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder

	mu sync.Mutex
	// pending are ranges handed out but not yet seen in the cache.
	pending map[string]string
}

// New returns the controller.
func New(cfg Config, client kubernetes.Interface, nodes coreinformers.NodeInformer, recorder record.EventRecorder) (*Controller, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		cfg: cfg, client: client, nodes: nodes.Lister(), synced: nodes.Informer().HasSynced, recorder: recorder,
		queue:   workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "nodeipam"}),
		pending: map[string]string{},
	}
	_, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(obj) },
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	return c, err
}

func (c *Controller) enqueue(obj any) {
	if n, ok := obj.(*corev1.Node); ok && n.Spec.PodCIDR == "" {
		c.queue.Add(n.Name)
	}
}

// Run allocates until ctx is cancelled.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	// A new node waits for its pod CIDR before it is Ready: look for the
	// synced caches more often than client-go does.
	if !cachesync.WaitForCacheSync(ctx, c.synced) {
		return nil
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for c.process(ctx) {
		}
	}, time.Second)
	<-ctx.Done()
	return nil
}

func (c *Controller) process(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Pod CIDR allocation failed", "node", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// ErrFull is returned when every node range is taken.
var ErrFull = errors.New("cluster CIDR is full")

func (c *Controller) sync(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if node.Spec.PodCIDR != "" {
		return nil
	}
	cidr, err := c.next(name)
	if err != nil {
		if c.recorder != nil {
			c.recorder.Eventf(&corev1.ObjectReference{Kind: "Node", Name: name, UID: node.UID}, corev1.EventTypeWarning, "CIDRNotAvailable",
				"Node %s status is now: CIDRNotAvailable", name)
		}
		return err
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidr, "podCIDRs": []string{cidr}}})
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		c.release(cidr)
		return fmt.Errorf("set pod CIDR of node %s: %w", name, err)
	}
	klog.FromContext(ctx).Info("Allocated pod CIDR", "node", name, "podCIDR", cidr)
	return nil
}

// next picks the lowest free node range.
func (c *Controller) next(nodeName string) (string, error) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return "", err
	}
	used := map[string]bool{}
	for _, n := range nodes {
		for _, cidr := range append([]string{n.Spec.PodCIDR}, n.Spec.PodCIDRs...) {
			if cidr != "" {
				used[cidr] = true
				c.mu.Lock()
				delete(c.pending, cidr)
				c.mu.Unlock()
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for cidr, owner := range c.pending {
		if owner == nodeName {
			return cidr, nil
		}
		used[cidr] = true
	}
	ones, bits := c.cfg.ClusterCIDR.Mask.Size()
	count := 1 << (c.cfg.NodeMaskSize - ones)
	base := new(big.Int).SetBytes(c.cfg.ClusterCIDR.IP.To16())
	step := new(big.Int).Lsh(big.NewInt(1), uint(bits-c.cfg.NodeMaskSize))
	for i := 0; i < count; i++ {
		n := new(big.Int).Add(base, new(big.Int).Mul(step, big.NewInt(int64(i))))
		ip := net.IP(n.FillBytes(make([]byte, 16)))
		if c.cfg.ClusterCIDR.IP.To4() != nil {
			ip = ip.To4()
		}
		cidr := (&net.IPNet{IP: ip, Mask: net.CIDRMask(c.cfg.NodeMaskSize, bits)}).String()
		if !used[cidr] {
			c.pending[cidr] = nodeName
			return cidr, nil
		}
	}
	return "", ErrFull
}

func (c *Controller) release(cidr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, cidr)
}

// Descriptor registers the controller with the manager.
func Descriptor(cfg Config) manager.Controller {
	return manager.Controller{
		Name:           "node-ipam-controller",
		Aliases:        []string{"nodeipam"},
		ServiceAccount: "node-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			c, err := New(cfg, client, cc.InformerFactory.Core().V1().Nodes(), cc.EventRecorder("node-ipam-controller"))
			if err != nil {
				return err
			}
			cc.Go(c.Run)
			return nil
		},
	}
}
