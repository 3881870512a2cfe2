package helm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
)

// Releaser installs, upgrades and uninstalls releases. Safe for
// concurrent use on different releases.
type Releaser interface {
	// Current returns the release's latest revision, or nil when there is none.
	Current(ctx context.Context, r ReleaseRef) (*release.Release, error)
	// Install installs a new release, Upgrade upgrades an existing one.
	Install(ctx context.Context, r ReleaseRef, ch *chart.Chart, vals map[string]any) (*release.Release, error)
	Upgrade(ctx context.Context, r ReleaseRef, ch *chart.Chart, vals map[string]any) (*release.Release, error)
	// Uninstall removes the release; a missing one is no error.
	Uninstall(ctx context.Context, r ReleaseRef) error
	// Fetch downloads a remote chart (spec.repo, or a URL).
	Fetch(ctx context.Context, ref, repo, version string, spec *HelmChartSpec) (*chart.Chart, error)
}

// ReleaseRef names a release and how to run it.
type ReleaseRef struct {
	Name, Namespace string
	// Driver stores the release: "secret" (default) or "configmap".
	Driver          string
	CreateNamespace bool
	TakeOwnership   bool
	Timeout         time.Duration
}

// sdkReleaser runs the Helm SDK in process with a rest config.
type sdkReleaser struct {
	config   *rest.Config
	cacheDir string
}

// NewReleaser returns a Releaser acting with config; remote charts are
// downloaded under cacheDir.
func NewReleaser(config *rest.Config, cacheDir string) Releaser {
	return &sdkReleaser{config: config, cacheDir: cacheDir}
}

func (s *sdkReleaser) action(ctx context.Context, r ReleaseRef) (*action.Configuration, error) {
	getter, err := newGetter(s.config, r.Namespace)
	if err != nil {
		return nil, err
	}
	driverName := r.Driver
	if driverName == "" {
		driverName = "secret"
	}
	logger := klog.FromContext(ctx).WithValues("release", r.Namespace+"/"+r.Name)
	cfg := &action.Configuration{}
	if err := cfg.Init(getter, r.Namespace, driverName, func(format string, v ...any) {
		logger.V(4).Info(fmt.Sprintf(format, v...))
	}); err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	if kc, ok := cfg.KubeClient.(*kube.Client); ok {
		kc.Namespace = r.Namespace
	}
	return cfg, nil
}

func (s *sdkReleaser) Current(ctx context.Context, r ReleaseRef) (*release.Release, error) {
	cfg, err := s.action(ctx, r)
	if err != nil {
		return nil, err
	}
	rel, err := cfg.Releases.Last(r.Name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	return rel, err
}

func (s *sdkReleaser) Install(ctx context.Context, r ReleaseRef, ch *chart.Chart, vals map[string]any) (*release.Release, error) {
	cfg, err := s.action(ctx, r)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = r.Name, r.Namespace
	in.CreateNamespace = r.CreateNamespace
	in.TakeOwnership = r.TakeOwnership
	in.Timeout = r.Timeout
	return in.RunWithContext(ctx, ch, vals)
}

func (s *sdkReleaser) Upgrade(ctx context.Context, r ReleaseRef, ch *chart.Chart, vals map[string]any) (*release.Release, error) {
	cfg, err := s.action(ctx, r)
	if err != nil {
		return nil, err
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = r.Namespace
	up.TakeOwnership = r.TakeOwnership
	up.Timeout = r.Timeout
	up.MaxHistory = 10
	return up.RunWithContext(ctx, r.Name, ch, vals)
}

func (s *sdkReleaser) Uninstall(ctx context.Context, r ReleaseRef) error {
	cfg, err := s.action(ctx, r)
	if err != nil {
		return err
	}
	un := action.NewUninstall(cfg)
	un.Timeout = r.Timeout
	if _, err := un.Run(r.Name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return err
	}
	return nil
}

// Fetch downloads a remote chart with the Helm SDK (a repository index, or
// a chart URL). k1s's tests never reach a repository.
func (s *sdkReleaser) Fetch(ctx context.Context, ref, repo, version string, spec *HelmChartSpec) (*chart.Chart, error) {
	settings := cli.New()
	settings.RepositoryCache = filepath.Join(s.cacheDir, "repository")
	settings.RepositoryConfig = filepath.Join(s.cacheDir, "repositories.yaml")
	settings.RegistryConfig = filepath.Join(s.cacheDir, "registry.json")
	if err := os.MkdirAll(settings.RepositoryCache, 0o700); err != nil {
		return nil, err
	}
	opts := action.ChartPathOptions{RepoURL: repo, Version: version, InsecureSkipTLSverify: spec.InsecureSkipTLSVerify, PlainHTTP: spec.PlainHTTP}
	if spec.RepoCA != "" {
		f := filepath.Join(s.cacheDir, "ca-"+ref2file(ref)+".pem")
		if err := os.WriteFile(f, []byte(spec.RepoCA), 0o600); err != nil {
			return nil, err
		}
		opts.CaFile = f
	}
	path, err := opts.LocateChart(ref, settings)
	if err != nil {
		return nil, fmt.Errorf("fetch chart %q: %w", ref, err)
	}
	return chartSource{path: path}.loadAny()
}

func ref2file(ref string) string {
	out := []rune{}
	for _, r := range ref {
		if r == '/' || r == ':' {
			r = '_'
		}
		out = append(out, r)
	}
	return string(out)
}

// loadAny loads a downloaded chart file or directory.
func (s chartSource) loadAny() (*chart.Chart, error) {
	fi, err := os.Stat(s.path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return chartSource{path: s.path}.load()
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return nil, err
	}
	return chartSource{archive: b}.load()
}

// getter is the Helm SDK's RESTClientGetter over a rest config, with a
// fixed namespace and a fresh discovery cache.
type getter struct {
	config    *rest.Config
	namespace string
	disc      discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

func newGetter(config *rest.Config, namespace string) (*getter, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	return &getter{config: config, namespace: namespace, disc: cached, mapper: mapper}, nil
}

func (g *getter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }
func (g *getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.disc, nil
}
func (g *getter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }
func (g *getter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}
