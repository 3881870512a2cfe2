package manager

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/controller-manager/pkg/clientbuilder"
)

// restClientBuilder adapts a clientbuilder.ControllerClientBuilder (whose
// ...OrDie methods exit the process) to ClientBuilder, which only returns
// errors.
type restClientBuilder struct {
	b clientbuilder.ControllerClientBuilder
	// inProcess rewrites the service-account configs, which are built
	// from root's anonymous copy and so lose its transport.
	inProcess func(*rest.Config) (*rest.Config, error)
}

// newClientBuilder returns the builder for the controllers. With service
// account credentials, configs drop root's own credentials (an x509 client
// certificate would otherwise authenticate first) and carry short-lived
// tokens of the kube-system service account named, obtained through the
// TokenRequest API with root's client.
func newClientBuilder(root *rest.Config, rootCore kubernetes.Interface, useServiceAccounts bool, namespace string, inProcess func(*rest.Config) (*rest.Config, error)) ClientBuilder {
	if !useServiceAccounts {
		return restClientBuilder{b: clientbuilder.SimpleControllerClientBuilder{ClientConfig: root}}
	}
	return restClientBuilder{b: clientbuilder.NewDynamicClientBuilder(rest.AnonymousClientConfig(root), rootCore.CoreV1(), namespace), inProcess: inProcess}
}

func (r restClientBuilder) Config(name string) (*rest.Config, error) {
	cfg, err := r.b.Config(name)
	if err != nil {
		return nil, fmt.Errorf("credentials for %q: %w", name, err)
	}
	if r.inProcess != nil {
		if cfg, err = r.inProcess(cfg); err != nil {
			return nil, fmt.Errorf("in-process client for %q: %w", name, err)
		}
	}
	return cfg, nil
}

func (r restClientBuilder) Client(name string) (kubernetes.Interface, error) {
	cfg, err := r.Config(name)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func (r restClientBuilder) MetadataClient(name string) (metadata.Interface, error) {
	cfg, err := r.Config(name)
	if err != nil {
		return nil, err
	}
	return metadata.NewForConfig(cfg)
}

func (r restClientBuilder) DynamicClient(name string) (dynamic.Interface, error) {
	cfg, err := r.Config(name)
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

func (r restClientBuilder) DiscoveryClient(name string) (discovery.DiscoveryInterface, error) {
	if r.inProcess == nil {
		d, err := r.b.DiscoveryClient(name)
		if err != nil {
			return nil, fmt.Errorf("discovery client for %q: %w", name, err)
		}
		return d, nil
	}
	cfg, err := r.Config(name)
	if err != nil {
		return nil, err
	}
	// As the client builders do: discovery makes many requests, rarely.
	cfg.QPS, cfg.Burst = 20, 200
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client for %q: %w", name, err)
	}
	return d, nil
}
