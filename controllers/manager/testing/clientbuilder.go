package testing

import (
	"fmt"
	"sync"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// ClientBuilder implements manager.ClientBuilder with fixed clients: every
// name gets the same ones. A nil client makes its method fail. Safe for
// concurrent use.
type ClientBuilder struct {
	Clientset kubernetes.Interface
	Metadata  metadata.Interface
	Dynamic   dynamic.Interface
	// Discovery defaults to Clientset.Discovery().
	Discovery discovery.DiscoveryInterface

	mu    sync.Mutex
	names []string
}

// Names returns the names clients were asked for, in order.
func (b *ClientBuilder) Names() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.names...)
}

func (b *ClientBuilder) record(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.names = append(b.names, name)
}

// Config returns an empty config with the name as user agent.
func (b *ClientBuilder) Config(name string) (*rest.Config, error) {
	b.record(name)
	return &rest.Config{UserAgent: name}, nil
}

// Client returns Clientset.
func (b *ClientBuilder) Client(name string) (kubernetes.Interface, error) {
	b.record(name)
	if b.Clientset == nil {
		return nil, fmt.Errorf("fake client builder: no clientset for %q", name)
	}
	return b.Clientset, nil
}

// MetadataClient returns Metadata.
func (b *ClientBuilder) MetadataClient(name string) (metadata.Interface, error) {
	b.record(name)
	if b.Metadata == nil {
		return nil, fmt.Errorf("fake client builder: no metadata client for %q", name)
	}
	return b.Metadata, nil
}

// DynamicClient returns Dynamic.
func (b *ClientBuilder) DynamicClient(name string) (dynamic.Interface, error) {
	b.record(name)
	if b.Dynamic == nil {
		return nil, fmt.Errorf("fake client builder: no dynamic client for %q", name)
	}
	return b.Dynamic, nil
}

// DiscoveryClient returns Discovery, or Clientset.Discovery().
func (b *ClientBuilder) DiscoveryClient(name string) (discovery.DiscoveryInterface, error) {
	b.record(name)
	switch {
	case b.Discovery != nil:
		return b.Discovery, nil
	case b.Clientset != nil:
		return b.Clientset.Discovery(), nil
	}
	return nil, fmt.Errorf("fake client builder: no discovery client for %q", name)
}
