package apiserver

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/admission"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// admissionPlugin is a k1s admission plugin with its position in the chain.
type admissionPlugin struct {
	name    string
	factory admission.Factory
}

// applyAdmission builds the admission chain in upstream's order:
// NamespaceLifecycle, LimitRanger, ServiceAccount, NodeRestriction,
// PodSecurity, Priority, DefaultTolerationSeconds, DefaultStorageClass,
// StorageObjectInUseProtection, PersistentVolumeClaimResize, RuntimeClass,
// ClusterTrustBundleAttest, the mutating policies and webhooks, the validating policies and webhooks,
// ResourceQuota.
func (d *dependencies) applyAdmission(gc *genericapiserver.RecommendedConfig) error {
	opts := genericoptions.NewAdmissionOptions()
	before, after := d.admissionPlugins(gc.DrainedNotify())
	var order []string
	for _, p := range before {
		opts.Plugins.Register(p.name, p.factory)
	}
	for _, p := range after {
		opts.Plugins.Register(p.name, p.factory)
	}
	// opts.RecommendedPluginOrder starts with NamespaceLifecycle.
	order = append(order, opts.RecommendedPluginOrder[0])
	for _, p := range before {
		order = append(order, p.name)
	}
	order = append(order, opts.RecommendedPluginOrder[1:]...)
	for _, p := range after {
		order = append(order, p.name)
	}
	opts.RecommendedPluginOrder = order
	// Each plugin gets its entry of the AdmissionConfiguration file
	// (kube-apiserver's --admission-control-config-file); only
	// PodSecurity reads one.
	opts.ConfigFile = d.cfg.AdmissionControlConfigFile
	dyn, err := dynamic.NewForConfig(gc.LoopbackClientConfig)
	if err != nil {
		return fmt.Errorf("admission client: %w", err)
	}
	client, err := kubernetes.NewForConfig(holdFirstOpenAPIIndex(gc.LoopbackClientConfig, d.ready, openAPIPollPeriod, d.openAPIRead))
	if err != nil {
		return fmt.Errorf("admission client: %w", err)
	}
	webhooks := webhookinit.NewPluginInitializer(nil, clusterIPResolver{services: d.informers.Core().V1().Services().Lister()})
	if err := opts.ApplyTo(&gc.Config, d.informers, client, dyn, gc.FeatureGate, gc.EffectiveVersion, webhooks); err != nil {
		if opts.ConfigFile != "" {
			return fmt.Errorf("admission (--pod-security-admission-config-file %s): %w", opts.ConfigFile, err)
		}
		return fmt.Errorf("admission: %w", err)
	}
	return nil
}

// openAPIPollPeriod is how often the MutatingAdmissionPolicy plugin reads
// the /openapi/v3 index (upstream's fixed 5 s).
const openAPIPollPeriod = 5 * time.Second

// holdFirstOpenAPIIndex returns a copy of cfg whose first GET of the
// /openapi/v3 index waits until ready is closed and then period more; done
// is closed once that read has been answered (or has failed).
//
// The MutatingAdmissionPolicy plugin reads that index as soon as it starts
// and then every period, to learn which documents changed. The index holds
// every group-version document's hash, so its first read turns all of
// them into JSON: ~0.35 s of CPU on this kind of machine, spent while the
// server bootstraps and the node registers, on the way to node Ready.
// Held, the first read comes one poll period after start-up instead, as if
// the poll were not immediate. Only the first: a plugin that needs a
// document sooner (a policy on a custom resource) reads again, unheld.
// The server's last memory trim waits for done: the read's work would
// otherwise come after it and stay resident.
func holdFirstOpenAPIIndex(cfg *rest.Config, ready <-chan struct{}, period time.Duration, done chan<- struct{}) *rest.Config {
	out := rest.CopyConfig(cfg)
	var held atomic.Bool
	prev := out.WrapTransport
	out.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && req.URL.Path == "/openapi/v3" && held.CompareAndSwap(false, true) {
				defer close(done)
				select {
				case <-ready:
				case <-req.Context().Done():
					return nil, req.Context().Err()
				}
				t := time.NewTimer(period)
				select {
				case <-t.C:
				case <-req.Context().Done():
					t.Stop()
					return nil, req.Context().Err()
				}
			}
			return rt.RoundTrip(req)
		})
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
