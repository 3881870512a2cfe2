package network

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"
)

// Defaults and names of the conflist.
const (
	// ConfFileName is the conflist's file name in the CNI conf dir.
	ConfFileName = "10-k1s.conflist"
	// NetworkName is the CNI network's name.
	NetworkName = "k1s"
	// CNIVersion is the conflist's CNI spec version.
	CNIVersion = "1.0.0"
	// DefaultBridgeName is the bridge pods attach to.
	DefaultBridgeName = "cni0"
	// DefaultIPAMDataDir is where host-local keeps its address
	// reservations: <data-dir>/agent/cni/networks under the default data dir.
	DefaultIPAMDataDir = "/var/lib/k1s/agent/cni/networks"
)

// CNIConfig is what the conflist is made of.
type CNIConfig struct {
	// PodCIDR is the node's pod subnet (node.spec.podCIDR). Required.
	PodCIDR *net.IPNet
	// BridgeName is the bridge's interface name. Default cni0.
	BridgeName string
	// IPAMDataDir is host-local's state directory.
	// Default /var/lib/k1s/agent/cni/networks (<data-dir>/agent/cni/networks).
	IPAMDataDir string
	// MTU of the bridge and pod interfaces; 0 leaves the plugin's default.
	MTU int
}

type conflist struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []any  `json:"plugins"`
}

type bridgePlugin struct {
	Type         string `json:"type"`
	Bridge       string `json:"bridge"`
	IsGateway    bool   `json:"isGateway"`
	IPMasq       bool   `json:"ipMasq"`
	HairpinMode  bool   `json:"hairpinMode"`
	ForceAddress bool   `json:"forceAddress"`
	MTU          int    `json:"mtu,omitempty"`
	IPAM         ipam   `json:"ipam"`
}

type ipam struct {
	Type    string      `json:"type"`
	Ranges  [][]ipRange `json:"ranges"`
	Routes  []route     `json:"routes"`
	DataDir string      `json:"dataDir"`
}

type ipRange struct {
	Subnet string `json:"subnet"`
}

type route struct {
	Dst string `json:"dst"`
}

type portmapPlugin struct {
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities"`
	SNAT         bool            `json:"snat"`
}

// Conflist renders the conflist of cfg and checks it with libcni.
func Conflist(cfg CNIConfig) ([]byte, error) {
	if cfg.PodCIDR == nil {
		return nil, errors.New("cni config: pod CIDR is required")
	}
	if cfg.PodCIDR.IP.To4() == nil {
		return nil, fmt.Errorf("cni config: pod CIDR %s is not IPv4", cfg.PodCIDR)
	}
	if cfg.BridgeName == "" {
		cfg.BridgeName = DefaultBridgeName
	}
	if cfg.IPAMDataDir == "" {
		cfg.IPAMDataDir = DefaultIPAMDataDir
	}
	if !filepath.IsAbs(cfg.IPAMDataDir) {
		return nil, fmt.Errorf("cni config: IPAM data dir %q must be an absolute path", cfg.IPAMDataDir)
	}
	subnet := &net.IPNet{IP: cfg.PodCIDR.IP.Mask(cfg.PodCIDR.Mask), Mask: cfg.PodCIDR.Mask}
	list := conflist{
		CNIVersion: CNIVersion,
		Name:       NetworkName,
		Plugins: []any{
			bridgePlugin{
				Type:         "bridge",
				Bridge:       cfg.BridgeName,
				IsGateway:    true,
				IPMasq:       false,
				HairpinMode:  true,
				ForceAddress: true,
				MTU:          cfg.MTU,
				IPAM: ipam{
					Type:    "host-local",
					Ranges:  [][]ipRange{{{Subnet: subnet.String()}}},
					Routes:  []route{{Dst: "0.0.0.0/0"}},
					DataDir: cfg.IPAMDataDir,
				},
			},
			portmapPlugin{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}, SNAT: true},
		},
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cni config: %w", err)
	}
	data = append(data, '\n')
	parsed, err := libcni.ConfListFromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("cni config does not parse: %w", err)
	}
	if parsed.Name != NetworkName || len(parsed.Plugins) != 2 {
		return nil, fmt.Errorf("cni config parsed as network %q with %d plugins", parsed.Name, len(parsed.Plugins))
	}
	return data, nil
}

// WriteConfig writes the conflist of cfg as dir/10-k1s.conflist, creating
// dir. It replaces the file atomically (write, sync, rename) and only when
// its content changes, so the runtime never reads a partial file and is not
// woken for nothing. It reports whether the file changed. The agent calls it
// when its Node's spec.podCIDR appears or changes.
func WriteConfig(dir string, cfg CNIConfig) (changed bool, err error) {
	data, err := Conflist(cfg)
	if err != nil {
		return false, err
	}
	path := filepath.Join(dir, ConfFileName)
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create cni conf dir: %w", err)
	}
	if err := writeFileAtomic(path, data, 0o644); err != nil {
		return false, err
	}
	return true, nil
}

func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	// The temporary name must not end in .conflist, or the runtime could
	// load it.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	return nil
}
