package manager

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Controller describes one controller the manager can run.
type Controller struct {
	// Name is the controller's canonical name in --controllers, as
	// kube-controller-manager spells it (e.g. "namespace-controller").
	Name string
	// Aliases are other names --controllers accepts for it (e.g. "namespace").
	Aliases []string
	// ServiceAccount is the service account in kube-system whose
	// credentials the controller uses when the manager runs with
	// UseServiceAccountCredentials; the default RBAC policy binds
	// system:controller:<ServiceAccount> to it.
	ServiceAccount string
	// DisabledByDefault keeps the controller off under "*"; only naming it
	// in --controllers turns it on.
	DisabledByDefault bool
	// Start builds the controller from cc and launches its long-running
	// work with cc.Go. It must return quickly and must not start the
	// informer factories: the manager starts them once every controller's
	// Start has returned, so informers requested here are included.
	Start func(ctx context.Context, cc ControllerContext) error
}

// ClientBuilder gives clients that act as a named identity: with service
// account credentials, the name is a service account in kube-system (created
// if missing) whose tokens the clients use; otherwise it is only the user
// agent and the manager's own credentials are used. Safe for concurrent use.
type ClientBuilder interface {
	// Config returns a new rest config; the caller may change it.
	Config(name string) (*rest.Config, error)
	Client(name string) (kubernetes.Interface, error)
	MetadataClient(name string) (metadata.Interface, error)
	DynamicClient(name string) (dynamic.Interface, error)
	DiscoveryClient(name string) (discovery.DiscoveryInterface, error)
}

// ControllerContext is what a controller's Start receives. The informer
// factories are shared by every controller of one leadership term.
type ControllerContext struct {
	// ServiceAccount is the controller's Controller.ServiceAccount; the
	// client methods of ControllerContext act as it.
	ServiceAccount string
	// ClientBuilder gives clients for any name.
	ClientBuilder ClientBuilder
	// InformerFactory is the shared informer factory, listing with the
	// manager's own credentials. The manager starts it after every Start.
	InformerFactory informers.SharedInformerFactory
	// MetadataInformerFactory is the shared factory of metadata-only
	// informers (any resource, including custom ones), started likewise.
	MetadataInformerFactory metadatainformer.SharedInformerFactory
	// InformersStarted is closed once the manager has started the
	// factories. A controller that asks for another informer later starts
	// the factory again itself (InformerFactory.Start(ctx.Done())) after it.
	InformersStarted <-chan struct{}
	// ResyncPeriod returns a random period between MinResyncPeriod and
	// twice it, for controllers that want their own resync.
	ResyncPeriod func() time.Duration
	// EventRecorder returns a recorder that reports events as component.
	EventRecorder func(component string) record.EventRecorder
	// Clock is the manager's clock; pass it to the controller.
	Clock clock.WithTicker
	// Go runs fn in a goroutine the manager waits for on shutdown. Call it
	// from Start or from a function it runs. fn must return nil when its
	// ctx is cancelled; any other error stops the manager (and every
	// controller) with that error.
	Go func(fn func(ctx context.Context) error)
}

// ClientConfig returns a rest config acting as cc.ServiceAccount.
func (cc ControllerContext) ClientConfig() (*rest.Config, error) {
	cfg, err := cc.ClientBuilder.Config(cc.ServiceAccount)
	if err != nil {
		return nil, fmt.Errorf("client config for %q: %w", cc.ServiceAccount, err)
	}
	return cfg, nil
}

// Client returns a clientset acting as cc.ServiceAccount.
func (cc ControllerContext) Client() (kubernetes.Interface, error) {
	c, err := cc.ClientBuilder.Client(cc.ServiceAccount)
	if err != nil {
		return nil, fmt.Errorf("client for %q: %w", cc.ServiceAccount, err)
	}
	return c, nil
}

// MetadataClient returns a metadata client acting as cc.ServiceAccount.
func (cc ControllerContext) MetadataClient() (metadata.Interface, error) {
	c, err := cc.ClientBuilder.MetadataClient(cc.ServiceAccount)
	if err != nil {
		return nil, fmt.Errorf("metadata client for %q: %w", cc.ServiceAccount, err)
	}
	return c, nil
}

// DynamicClient returns a dynamic client acting as cc.ServiceAccount.
func (cc ControllerContext) DynamicClient() (dynamic.Interface, error) {
	c, err := cc.ClientBuilder.DynamicClient(cc.ServiceAccount)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for %q: %w", cc.ServiceAccount, err)
	}
	return c, nil
}

// DiscoveryClient returns a discovery client acting as cc.ServiceAccount.
func (cc ControllerContext) DiscoveryClient() (discovery.DiscoveryInterface, error) {
	c, err := cc.ClientBuilder.DiscoveryClient(cc.ServiceAccount)
	if err != nil {
		return nil, fmt.Errorf("discovery client for %q: %w", cc.ServiceAccount, err)
	}
	return c, nil
}
