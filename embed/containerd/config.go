package containerd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/k1s/k1s/internal/registries"
)

const (
	// DefaultDataDir is k1s's default --data-dir.
	DefaultDataDir = "/var/lib/k1s"
	// DefaultState is containerd's default state directory (on tmpfs).
	DefaultState = "/run/k1s/containerd"
	// DefaultSandboxImage is the pod sandbox image k1s carries.
	DefaultSandboxImage = "k1s.local/pause:3.10"
	// DefaultSnapshotter is the snapshotter the CRI plugin unpacks images for.
	DefaultSnapshotter = "overlayfs"
	// DefaultEndpoint is the CRI endpoint of the embedded containerd with
	// the default state directory.
	DefaultEndpoint = "unix://" + DefaultState + "/containerd.sock"

	// maxStateLen keeps the shim socket directory, <State>/s, within the
	// 38 characters the agent's design allows (containerd's own limit is
	// 42; a socket path is the directory, "/" and 64 hex digits).
	maxStateLen = 36
)

// DefaultCNIBinDirs are the CNI plugin directories used when CNIBinDirs is
// empty: Debian's containernetworking-plugins, then /opt/cni/bin if it
// exists.
func DefaultCNIBinDirs() []string {
	dirs := []string{"/usr/lib/cni"}
	if st, err := os.Stat("/opt/cni/bin"); err == nil && st.IsDir() {
		dirs = append(dirs, "/opt/cni/bin")
	}
	return dirs
}

// Config configures the embedded containerd. Paths must be absolute.
type Config struct {
	// DataDir is k1s's data directory (--data-dir). Default /var/lib/k1s.
	// The extracted executables go to <DataDir>/data/<hash>/bin.
	DataDir string
	// Root is containerd's persistent root (content, snapshots, metadata).
	// Default <DataDir>/agent/containerd.
	Root string
	// State is containerd's state directory, on tmpfs. Default
	// /run/k1s/containerd. Shim sockets go to <State>/s, runc state to
	// <State>/runc and pod network namespaces to
	// <State>/io.containerd.grpc.v1.cri/netns, so
	// everything containerd keeps while running is under it. At most 36
	// characters (unix socket paths are short).
	State string
	// Socket is containerd's gRPC socket (the CRI endpoint). Default
	// <State>/containerd.sock.
	Socket string
	// ConfigFile is where the generated containerd config is written on
	// every start. Default <DataDir>/agent/etc/containerd/config.toml.
	ConfigFile string
	// LogFile receives containerd's output (appended). Default
	// <DataDir>/agent/containerd.log.
	LogFile string
	// PidFile records the containerd child's pid for `k1s killall`.
	// Default <State>/containerd.pid.
	PidFile string
	// SandboxImage is the pod sandbox (pause) image. Default
	// k1s.local/pause:3.10, which k1s carries and imports itself.
	SandboxImage string
	// Snapshotter is the snapshotter of the CRI plugin. Default overlayfs.
	Snapshotter string
	// CNIConfDir is where the CRI plugin reads the CNI network config.
	// Default <DataDir>/agent/etc/cni/net.d.
	CNIConfDir string
	// CNIBinDirs are searched for CNI plugins. Default /usr/lib/cni, and
	// /opt/cni/bin when it exists.
	CNIBinDirs []string
	// ImagesDir holds image tarballs imported at start. Default
	// <DataDir>/agent/images.
	ImagesDir string
	// LogLevel is containerd's log level. Default "info".
	LogLevel string
	// Executable is the program started as `<Executable> containerd
	// --config <ConfigFile>`. Default the running k1s binary.
	Executable string
	// BinDir, when set, holds containerd-shim-runc-v2 and is used instead
	// of extracting the executables carried in the k1s binary. Default
	// empty (extract).
	BinDir string
	// ReadyTimeout bounds the wait for the CRI API to answer after start.
	// Default 1 minute.
	ReadyTimeout time.Duration
	// StopTimeout is how long containerd gets after SIGTERM before
	// SIGKILL. Default 10 seconds.
	StopTimeout time.Duration
	// PrivateRegistry is k3s's registries.yaml (--private-registry):
	// mirrors and TLS go to hosts.toml files under HostsDir, credentials
	// to the CRI's registry configs. Default empty: no registry is
	// configured, so pulling an image that is not present fails at once.
	// A file that does not exist configures nothing either.
	PrivateRegistry string
	// HostsDir is the CRI's registry config_path, rewritten on every
	// start from PrivateRegistry. Default <DataDir>/agent/etc/containerd/certs.d.
	HostsDir string
}

// SetDefaults fills empty fields with their documented defaults.
func (c *Config) SetDefaults() {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	agent := filepath.Join(c.DataDir, "agent")
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&c.Root, filepath.Join(agent, "containerd"))
	def(&c.State, DefaultState)
	def(&c.Socket, filepath.Join(c.State, "containerd.sock"))
	def(&c.ConfigFile, filepath.Join(agent, "etc", "containerd", "config.toml"))
	def(&c.HostsDir, filepath.Join(agent, "etc", "containerd", "certs.d"))
	def(&c.LogFile, filepath.Join(agent, "containerd.log"))
	def(&c.PidFile, filepath.Join(c.State, "containerd.pid"))
	def(&c.SandboxImage, DefaultSandboxImage)
	def(&c.Snapshotter, DefaultSnapshotter)
	def(&c.CNIConfDir, filepath.Join(agent, "etc", "cni", "net.d"))
	def(&c.ImagesDir, filepath.Join(agent, "images"))
	def(&c.LogLevel, "info")
	if len(c.CNIBinDirs) == 0 {
		c.CNIBinDirs = DefaultCNIBinDirs()
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = time.Minute
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 10 * time.Second
	}
}

// Validate reports configuration errors, naming the k1s flag where there
// is one. Call SetDefaults first (New does).
func (c Config) Validate() error {
	var errs []error
	abs := func(flag, what, p string) {
		if p == "" || !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("%s: %s %q must be an absolute path", flag, what, p))
		}
	}
	abs("--data-dir", "data directory", c.DataDir)
	abs("--data-dir", "containerd root", c.Root)
	abs("containerd state", "state directory", c.State)
	abs("containerd socket", "socket", c.Socket)
	abs("--data-dir", "containerd config file", c.ConfigFile)
	abs("--data-dir", "containerd log file", c.LogFile)
	abs("containerd pid file", "pid file", c.PidFile)
	abs("--data-dir", "CNI config directory", c.CNIConfDir)
	abs("--data-dir", "images directory", c.ImagesDir)
	abs("--data-dir", "registry hosts directory", c.HostsDir)
	if c.PrivateRegistry != "" {
		abs("--private-registry", "registries file", c.PrivateRegistry)
	}
	for _, d := range c.CNIBinDirs {
		abs("CNI bin dirs", "CNI plugin directory", d)
	}
	if c.BinDir != "" {
		abs("containerd bin dir", "bin directory", c.BinDir)
	}
	if len(filepath.Clean(c.State)) > maxStateLen {
		errs = append(errs, fmt.Errorf("containerd state directory %q is longer than %d characters: shim socket paths under it would not fit a unix socket address", c.State, maxStateLen))
	}
	// 108 bytes of sun_path including the terminating NUL.
	if len(c.Socket) > 107 {
		errs = append(errs, fmt.Errorf("containerd socket %q is longer than 107 characters", c.Socket))
	}
	if c.SandboxImage == "" {
		errs = append(errs, errors.New("--pause-image: sandbox image must not be empty"))
	}
	if c.Snapshotter == "" {
		errs = append(errs, errors.New("--snapshotter: must not be empty"))
	}
	switch c.LogLevel {
	case "trace", "debug", "info", "warn", "warning", "error", "fatal", "panic":
	default:
		errs = append(errs, fmt.Errorf("containerd log level %q: want trace, debug, info, warn, error, fatal or panic", c.LogLevel))
	}
	if c.ReadyTimeout < 0 || c.StopTimeout < 0 {
		errs = append(errs, errors.New("containerd ready and stop timeouts must not be negative"))
	}
	return errors.Join(errs...)
}

// Endpoint is the CRI endpoint, "unix://<Socket>".
func (c Config) Endpoint() string { return "unix://" + c.Socket }

// ShimSocketDir is where shims create their sockets, <State>/s.
func (c Config) ShimSocketDir() string { return filepath.Join(c.State, "s") }

// RuncRoot is runc's state root for containers of this containerd.
func (c Config) RuncRoot() string { return filepath.Join(c.State, "runc") }

// NetNSDir is where the CRI plugin mounts pod network namespaces: its
// own state directory's netns (netns_mounts_under_state_dir).
func (c Config) NetNSDir() string {
	return filepath.Join(c.State, "io.containerd.grpc.v1.cri", "netns")
}

// disabledPlugins are containerd plugins k1s does not use. Some would
// otherwise claim machine-wide paths another containerd may use (the NRI
// socket, /opt/containerd, /opt/containerd/image-verifier), the others
// only cost memory and start time.
var disabledPlugins = []string{
	"io.containerd.nri.v1.nri",
	"io.containerd.internal.v1.opt",
	"io.containerd.internal.v1.tracing",
	"io.containerd.tracing.processor.v1.otlp",
	"io.containerd.snapshotter.v1.blockfile",
	"io.containerd.snapshotter.v1.erofs",
	"io.containerd.differ.v1.erofs",
	"io.containerd.mount-handler.v1.erofs",
	"io.containerd.image-verifier.v1.bindir",
	"io.containerd.monitor.container.v1.restart",
}

// renderConfig returns containerd's config file for c.
//
// The CRI plugin gets: the runc runtime through io.containerd.runc.v2
// with cgroupfs (SystemdCgroup=false) and runc state under the state
// directory; restrict_oom_score_adj (this machine withholds
// CAP_SYS_RESOURCE, without which runc cannot raise a container's OOM
// score); no CDI spec directories (CDI cannot be switched off in
// containerd 2, so it is given nothing to read); the streaming server
// (exec, attach, port-forward) on 127.0.0.1 with a random port; the
// sandbox image pinned; no registry configuration at all when reg is nil,
// so pulling an image that is not present fails at once, else reg's
// (--private-registry): the hosts directory as the registry config_path
// and the hosts' credentials as registry configs (deprecated in
// containerd 2 but still read by its CRI, which has no other place for
// static credentials: hosts.toml has none); pod network namespaces under
// its state directory (not the machine-wide /var/run/netns); CPU usage
// sampled every 10 s rather than every second (each sample is a call into
// every shim); a pod's lo brought up by containerd itself rather than by
// running the CNI loopback plugin for every pod.
func renderConfig(c Config, reg *registries.Registry) string {
	q := tomlString
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Written by k1s on every start: change k1s's flags, not this file.")
	if reg == nil {
		w("# No registry is configured: pulling an image that is not present fails.")
	}
	w("version = 4")
	w("root = %s", q(c.Root))
	w("state = %s", q(c.State))
	w("imports = []")
	w("disabled_plugins = %s", tomlList(disabledPlugins))
	w("")
	w("[debug]")
	w("  level = %s", q(c.LogLevel))
	w("")
	w("[plugins]")
	w("  [plugins.'io.containerd.server.v1.grpc']")
	w("    address = %s", q(c.Socket))
	w("")
	w("  [plugins.'io.containerd.server.v1.ttrpc']")
	w("    address = %s", q(c.Socket+".ttrpc"))
	w("")
	w("  [plugins.'io.containerd.grpc.v1.cri']")
	w("    disable_tcp_service = true")
	w("    stream_server_address = '127.0.0.1'")
	w("    stream_server_port = '0'")
	w("    enable_tls_streaming = false")
	w("")
	w("  [plugins.'io.containerd.cri.v1.runtime']")
	w("    restrict_oom_score_adj = true")
	w("    enable_selinux = false")
	w("    cdi_spec_dirs = []")
	w("    netns_mounts_under_state_dir = true")
	w("    stats_collect_period = '10s'")
	w("    [plugins.'io.containerd.cri.v1.runtime'.containerd]")
	w("      default_runtime_name = 'runc'")
	w("      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]")
	w("        runtime_type = 'io.containerd.runc.v2'")
	w("        snapshotter = %s", q(c.Snapshotter))
	w("        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]")
	w("          SystemdCgroup = false")
	w("          Root = %s", q(c.RuncRoot()))
	w("    [plugins.'io.containerd.cri.v1.runtime'.cni]")
	w("      conf_dir = %s", q(c.CNIConfDir))
	w("      bin_dirs = %s", tomlList(c.CNIBinDirs))
	w("      use_internal_loopback = true")
	w("")
	w("  [plugins.'io.containerd.cri.v1.images']")
	w("    snapshotter = %s", q(c.Snapshotter))
	w("    [plugins.'io.containerd.cri.v1.images'.pinned_images]")
	w("      sandbox = %s", q(c.SandboxImage))
	if reg != nil {
		w("    [plugins.'io.containerd.cri.v1.images'.registry]")
		w("      config_path = %s", q(c.HostsDir))
		creds := reg.Credentials()
		for _, host := range registries.CredentialHosts(creds) {
			a := creds[host]
			w("      [plugins.'io.containerd.cri.v1.images'.registry.configs.%s.auth]", q(host))
			for _, kv := range [][2]string{{"username", a.Username}, {"password", a.Password}, {"auth", a.Auth}, {"identitytoken", a.IdentityToken}} {
				if kv[1] != "" {
					w("        %s = %s", kv[0], q(kv[1]))
				}
			}
		}
	}
	w("")
	w("  [plugins.'io.containerd.shim.v1.manager']")
	w("    socket_dir = %s", q(c.ShimSocketDir()))
	return b.String()
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
