package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/k1s/k1s/controllers/manager"
)

// Defaults of Config.
const (
	DefaultSchedulerName                     = "default-scheduler"
	DefaultParallelism                       = 16
	DefaultPodInitialBackoff                 = time.Second
	DefaultPodMaxBackoff                     = 10 * time.Second
	DefaultPodMaxInUnschedulablePodsDuration = 60 * time.Second
	DefaultKubeAPIQPS                        = 5000
	DefaultKubeAPIBurst                      = 10000
)

// Config configures the scheduler. The zero value is usable: every field
// has a default. The fields mirror KubeSchedulerConfiguration's; k1s
// server exposes none of them as flags yet, so Validate names the fields.
type Config struct {
	// SchedulerName is the spec.schedulerName of the pods this scheduler
	// places; pods naming another scheduler are left alone, so several
	// schedulers can share a cluster. Default "default-scheduler".
	SchedulerName string
	// PercentageOfNodesToScore: once this share of the nodes is found
	// feasible, filtering stops and only those are scored. 0 means
	// adaptive, as upstream: 50% less 1% per 125 nodes, at least 5%. At
	// least 100 nodes are always looked for. Default 0.
	PercentageOfNodesToScore int32
	// Parallelism is the number of goroutines filtering and scoring nodes
	// (never more than GOMAXPROCS: on a small machine extra goroutines only
	// add overhead). Default 16.
	Parallelism int
	// PodInitialBackoff is the wait before retrying a pod after its first
	// failed attempt; it doubles per attempt up to PodMaxBackoff. Defaults
	// 1s and 10s.
	PodInitialBackoff time.Duration
	PodMaxBackoff     time.Duration
	// PodMaxInUnschedulablePodsDuration is the longest a pod waits among
	// the unschedulable ones for an event that may help before it is tried
	// again anyway. Default 60s (upstream: 5m).
	PodMaxInUnschedulablePodsDuration time.Duration
	// KubeAPIQPS and KubeAPIBurst limit the scheduler's own client
	// (bindings, status updates, preemption). Defaults 5000 and 10000:
	// well above kube-scheduler's 50 and 100, because bindings are what
	// limits throughput and k1s's scheduler talks to the apiserver of its
	// own process.
	KubeAPIQPS   float32
	KubeAPIBurst int
}

// SetDefaults fills unset (zero) fields.
func (c *Config) SetDefaults() {
	if c.SchedulerName == "" {
		c.SchedulerName = DefaultSchedulerName
	}
	if c.Parallelism == 0 {
		c.Parallelism = DefaultParallelism
	}
	if c.PodInitialBackoff == 0 {
		c.PodInitialBackoff = DefaultPodInitialBackoff
	}
	if c.PodMaxBackoff == 0 {
		c.PodMaxBackoff = max(DefaultPodMaxBackoff, c.PodInitialBackoff)
	}
	if c.PodMaxInUnschedulablePodsDuration == 0 {
		c.PodMaxInUnschedulablePodsDuration = DefaultPodMaxInUnschedulablePodsDuration
	}
	if c.KubeAPIQPS == 0 {
		c.KubeAPIQPS = DefaultKubeAPIQPS
	}
	if c.KubeAPIBurst == 0 {
		c.KubeAPIBurst = DefaultKubeAPIBurst
	}
}

// Validate checks c after SetDefaults; errors name the field and are joined.
func (c *Config) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(c.SchedulerName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("schedulerName: %q: %v", c.SchedulerName, msgs))
	}
	if c.PercentageOfNodesToScore < 0 || c.PercentageOfNodesToScore > 100 {
		errs = append(errs, fmt.Errorf("percentageOfNodesToScore: %d must be between 0 and 100", c.PercentageOfNodesToScore))
	}
	if c.Parallelism < 1 {
		errs = append(errs, fmt.Errorf("parallelism: %d must be positive", c.Parallelism))
	}
	if c.PodInitialBackoff <= 0 {
		errs = append(errs, fmt.Errorf("podInitialBackoff: %v must be positive", c.PodInitialBackoff))
	}
	if c.PodMaxBackoff < c.PodInitialBackoff {
		errs = append(errs, fmt.Errorf("podMaxBackoff: %v must be at least podInitialBackoff %v", c.PodMaxBackoff, c.PodInitialBackoff))
	}
	if c.PodMaxInUnschedulablePodsDuration <= 0 {
		errs = append(errs, fmt.Errorf("podMaxInUnschedulablePodsDuration: %v must be positive", c.PodMaxInUnschedulablePodsDuration))
	}
	if c.KubeAPIQPS < 0 {
		errs = append(errs, fmt.Errorf("kubeAPIQPS: %v must not be negative", c.KubeAPIQPS))
	}
	if c.KubeAPIBurst < 0 {
		errs = append(errs, fmt.Errorf("kubeAPIBurst: %d must not be negative", c.KubeAPIBurst))
	}
	return errors.Join(errs...)
}

// ControllerName is the scheduler's name in --controllers.
const ControllerName = "scheduler"

// ServiceAccount is the kube-system service account the scheduler acts
// as; the default RBAC policy binds system:kube-scheduler and
// system:volume-scheduler to it.
const ServiceAccount = "kube-scheduler"

// Descriptor returns the scheduler as a controller of the manager, named
// "scheduler" (upstream runs it as its own binary, so it has no
// kube-controller-manager name). It runs under the leader election of the
// manager, with its own client limited by cfg's QPS and burst.
func Descriptor(cfg Config) manager.Controller {
	return manager.Controller{
		Name:           ControllerName,
		ServiceAccount: ServiceAccount,
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			cfg.SetDefaults()
			rc, err := cc.ClientConfig()
			if err != nil {
				return err
			}
			rc = rest.AddUserAgent(rc, "kube-scheduler")
			rc.QPS, rc.Burst = cfg.KubeAPIQPS, cfg.KubeAPIBurst
			// Protobuf, as kube-scheduler's client: cheaper bindings.
			rc.ContentType = runtime.ContentTypeProtobuf
			rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return fmt.Errorf("scheduler client: %w", err)
			}
			s, err := New(cfg, client, cc.InformerFactory, cc.EventRecorder(cfg.SchedulerName), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(s.Run)
			return nil
		},
	}
}
