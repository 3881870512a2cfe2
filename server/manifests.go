package server

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/deploy"
	"github.com/k1s/k1s/controllers/helm"
	"github.com/k1s/k1s/manifests"
)

// manifestsDir is the folder the deploy controller applies.
func (s *Server) manifestsDir() string { return filepath.Join(s.serverDir(), "manifests") }

// helmConfig is the helm controller's configuration for a data dir.
func helmConfig(dataDir string) helm.Config {
	server := filepath.Join(dataDir, "server")
	return helm.Config{
		ManifestsDir: filepath.Join(server, "manifests"),
		StaticDir:    filepath.Join(server, "static", "charts"),
		CacheDir:     filepath.Join(server, "helm"),
	}
}

// manifestVars are the values of the packaged manifests' %{NAME}%
// variables (k3s's names).
func (s *Server) manifestVars() map[string]string {
	vars := map[string]string{
		"CLUSTER_DNS":    s.cfg.ClusterDNS,
		"CLUSTER_DOMAIN": s.cfg.ClusterDomain,
		"KUBERNETES_API": net.JoinHostPort(s.p.advertise.String(), strconv.Itoa(s.cfg.HTTPSPort)),
	}
	for k, v := range s.localStorageVars() {
		vars[k] = v
	}
	return vars
}

// manifestsComponent stages the packaged manifests and runs the deploy
// controller with the admin's credentials, on every server (each applies
// its own folder; server-side apply makes the packaged ones agree).
type manifestsComponent struct {
	s      *Server
	config *rest.Config
}

func (m *manifestsComponent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	s := m.s
	var disabled []string
	for name := range s.p.disabled {
		disabled = append(disabled, name)
	}
	// The kube-dns Service needs its address inside the service range;
	// out of it the file is not written (the node DNS still answers).
	stageOff := map[string]bool{}
	for _, d := range disabled {
		stageOff[d] = true
	}
	if ip := net.ParseIP(s.cfg.ClusterDNS); ip == nil || !s.p.serviceCIDR.Contains(ip) {
		stageOff[ComponentCoreDNS] = true
	}
	if _, err := deploy.Stage(s.manifestsDir(), manifests.Packaged(), s.manifestVars(), stageOff); err != nil {
		logger.Error(err, "Writing the packaged manifests failed")
	}
	dyn, err := dynamic.NewForConfig(m.config)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(m.config)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	core, err := kubernetes.NewForConfig(m.config)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: core.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "deploy"})
	c, err := deploy.New(deploy.Config{Dir: s.manifestsDir(), Disabled: disabled, CRDs: manifests.CRDs()},
		deploy.NewObjects(dyn, disc), dyn, recorder, clock.RealClock{})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// packagedManifest reports whether name is a packaged manifest's, which
// --disable also accepts (k3s's rule: NAME.yaml).
func packagedManifest(name string) bool {
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		if _, err := fs.Stat(manifests.Packaged(), name+ext); err == nil {
			return true
		}
	}
	return false
}
