package network

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestConflist(t *testing.T) {
	data, err := Conflist(CNIConfig{PodCIDR: mustCIDR(t, "10.42.3.0/24"), IPAMDataDir: "/data/agent/cni/networks", MTU: 1450})
	if err != nil {
		t.Fatal(err)
	}
	list, err := libcni.ConfListFromBytes(data)
	if err != nil {
		t.Fatalf("libcni: %v", err)
	}
	if list.Name != "k1s" || list.CNIVersion != "1.0.0" || len(list.Plugins) != 2 {
		t.Fatalf("list = %s %s with %d plugins", list.Name, list.CNIVersion, len(list.Plugins))
	}
	if list.Plugins[0].Network.Type != "bridge" || list.Plugins[0].Network.IPAM.Type != "host-local" {
		t.Errorf("first plugin = %+v", list.Plugins[0].Network)
	}
	if pm := list.Plugins[1].Network; pm.Type != "portmap" || !pm.Capabilities["portMappings"] {
		t.Errorf("second plugin = %+v", pm)
	}
	var bridge struct {
		Bridge       string `json:"bridge"`
		IsGateway    bool   `json:"isGateway"`
		IPMasq       *bool  `json:"ipMasq"`
		HairpinMode  bool   `json:"hairpinMode"`
		ForceAddress bool   `json:"forceAddress"`
		MTU          int    `json:"mtu"`
		IPAM         struct {
			Ranges  [][]map[string]string `json:"ranges"`
			Routes  []map[string]string   `json:"routes"`
			DataDir string                `json:"dataDir"`
		} `json:"ipam"`
	}
	if err := json.Unmarshal(list.Plugins[0].Bytes, &bridge); err != nil {
		t.Fatal(err)
	}
	if bridge.Bridge != "cni0" || !bridge.IsGateway || bridge.IPMasq == nil || *bridge.IPMasq || !bridge.HairpinMode || !bridge.ForceAddress || bridge.MTU != 1450 {
		t.Errorf("bridge = %+v", bridge)
	}
	if want := [][]map[string]string{{{"subnet": "10.42.3.0/24"}}}; !reflect.DeepEqual(bridge.IPAM.Ranges, want) {
		t.Errorf("ranges = %v, want %v", bridge.IPAM.Ranges, want)
	}
	if want := []map[string]string{{"dst": "0.0.0.0/0"}}; !reflect.DeepEqual(bridge.IPAM.Routes, want) {
		t.Errorf("routes = %v", bridge.IPAM.Routes)
	}
	if bridge.IPAM.DataDir != "/data/agent/cni/networks" {
		t.Errorf("dataDir = %q", bridge.IPAM.DataDir)
	}
	var portmap map[string]any
	if err := json.Unmarshal(list.Plugins[1].Bytes, &portmap); err != nil {
		t.Fatal(err)
	}
	if portmap["snat"] != true {
		t.Errorf("portmap = %v, want snat", portmap)
	}
}

func TestConflistDefaultsAndErrors(t *testing.T) {
	// A CIDR given with host bits is reduced to its network.
	data, err := Conflist(CNIConfig{PodCIDR: &net.IPNet{IP: net.ParseIP("10.42.0.5").To4(), Mask: net.CIDRMask(24, 32)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"subnet": "10.42.0.0/24"`, `"bridge": "cni0"`, `"dataDir": "/var/lib/k1s/agent/cni/networks"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("conflist lacks %s:\n%s", want, data)
		}
	}
	tests := []struct {
		name    string
		cfg     CNIConfig
		wantErr string
	}{
		{name: "no CIDR", cfg: CNIConfig{}, wantErr: "cni config: pod CIDR is required"},
		{name: "IPv6", cfg: CNIConfig{PodCIDR: mustCIDR(t, "fd00::/64")}, wantErr: "cni config: pod CIDR fd00::/64 is not IPv4"},
		{name: "relative data dir", cfg: CNIConfig{PodCIDR: mustCIDR(t, "10.42.0.0/24"), IPAMDataDir: "rel"}, wantErr: `cni config: IPAM data dir "rel" must be an absolute path`},
	}
	for _, tt := range tests {
		if _, err := Conflist(tt.cfg); err == nil || err.Error() != tt.wantErr {
			t.Errorf("%s: error = %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestWriteConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etc", "cni", "net.d")
	path := filepath.Join(dir, "10-k1s.conflist")
	cfg := CNIConfig{PodCIDR: mustCIDR(t, "10.42.0.0/24"), IPAMDataDir: "/d"}

	changed, err := WriteConfig(dir, cfg)
	if err != nil || !changed {
		t.Fatalf("first write: %v, %v", changed, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("conflist: %v, %v", info, err)
	}
	if _, err := libcni.ConfListFromFile(path); err != nil {
		t.Errorf("libcni reads the file: %v", err)
	}
	// Same config: not rewritten (the file keeps its modification time).
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	changed, err = WriteConfig(dir, cfg)
	if err != nil || changed {
		t.Errorf("same config: changed=%v err=%v, want unchanged", changed, err)
	}
	if info, _ := os.Stat(path); !info.ModTime().Equal(past) {
		t.Errorf("file rewritten for an unchanged config")
	}
	// A new pod CIDR rewrites it.
	cfg.PodCIDR = mustCIDR(t, "10.42.7.0/24")
	changed, err = WriteConfig(dir, cfg)
	if err != nil || !changed {
		t.Fatalf("new CIDR: %v, %v", changed, err)
	}
	list, err := libcni.ConfListFromFile(path)
	if err != nil || !strings.Contains(string(list.Plugins[0].Bytes), `"10.42.7.0/24"`) {
		t.Errorf("new conflist %v lacks the new subnet: %s", err, list.Plugins[0].Bytes)
	}
	// No temporary file is left behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("conf dir holds %d entries, want 1", len(entries))
	}
	// An invalid config writes nothing.
	if _, err := WriteConfig(dir, CNIConfig{}); err == nil {
		t.Errorf("invalid config written")
	}
}

func TestPodCIDRFromNode(t *testing.T) {
	tests := []struct {
		name    string
		spec    corev1.NodeSpec
		want    string
		wantErr string
		noCIDR  bool
	}{
		{name: "podCIDR", spec: corev1.NodeSpec{PodCIDR: "10.42.1.0/24"}, want: "10.42.1.0/24"},
		{name: "podCIDRs first IPv4", spec: corev1.NodeSpec{PodCIDR: "fd00::/64", PodCIDRs: []string{"fd00::/64", "10.42.2.0/24"}}, want: "10.42.2.0/24"},
		{name: "none", noCIDR: true, wantErr: `node "n1": node has no pod CIDR yet`},
		{name: "IPv6 only", spec: corev1.NodeSpec{PodCIDRs: []string{"fd00::/64"}}, noCIDR: true, wantErr: `node "n1": no IPv4 pod CIDR in [fd00::/64]: node has no pod CIDR yet`},
		{name: "invalid", spec: corev1.NodeSpec{PodCIDR: "10.42.1.0"}, wantErr: `node "n1": invalid pod CIDR "10.42.1.0": invalid CIDR address: 10.42.1.0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := PodCIDRFromNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: tt.spec})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if errors.Is(err, ErrNoPodCIDR) != tt.noCIDR {
					t.Errorf("errors.Is(ErrNoPodCIDR) = %v, want %v", !tt.noCIDR, tt.noCIDR)
				}
				return
			}
			if err != nil || n.String() != tt.want {
				t.Errorf("= %v, %v; want %s", n, err, tt.want)
			}
		})
	}
}

// call is one command a fake runner saw.
type call struct {
	stdin string
	cmd   string
}

func fakeRunner(calls *[]call, fail func(cmd string) bool) Runner {
	return func(_ context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
		cmd := name + " " + strings.Join(args, " ")
		*calls = append(*calls, call{stdin: string(stdin), cmd: cmd})
		if fail != nil && fail(cmd) {
			return nil, errors.New("exit status 1")
		}
		return nil, nil
	}
}

func TestEnsureMasquerade(t *testing.T) {
	wantRules := "*nat\n:K1S-POSTROUTING - [0:0]\n" +
		"-A K1S-POSTROUTING -s 10.42.0.0/24 -d 10.42.0.0/16 -m comment --comment \"k1s: pod to cluster, no masquerade\" -j RETURN\n" +
		"-A K1S-POSTROUTING -s 10.42.0.0/24 -d 224.0.0.0/4 -m comment --comment \"k1s: multicast, no masquerade\" -j RETURN\n" +
		"-A K1S-POSTROUTING -s 10.42.0.0/24 -m comment --comment \"k1s: pod to outside the cluster\" -j MASQUERADE\n" +
		"COMMIT\n"
	check := "iptables -w -t nat -C POSTROUTING -m comment --comment k1s pod masquerade -j K1S-POSTROUTING"
	add := "iptables -w -t nat -A POSTROUTING -m comment --comment k1s pod masquerade -j K1S-POSTROUTING"
	tests := []struct {
		name      string
		jumpThere bool
		want      []call
	}{
		{name: "fresh", want: []call{{stdin: wantRules, cmd: "iptables-restore -w --noflush"}, {cmd: check}, {cmd: add}}},
		{name: "jump already there", jumpThere: true, want: []call{{stdin: wantRules, cmd: "iptables-restore -w --noflush"}, {cmd: check}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []call
			run := fakeRunner(&calls, func(cmd string) bool { return cmd == check && !tt.jumpThere })
			if err := EnsureMasquerade(context.Background(), run, mustCIDR(t, "10.42.0.0/24"), mustCIDR(t, "10.42.0.0/16")); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(calls, tt.want) {
				t.Errorf("calls:\n%q\nwant:\n%q", calls, tt.want)
			}
		})
	}
	var calls []call
	run := fakeRunner(&calls, func(cmd string) bool { return strings.HasPrefix(cmd, "iptables-restore") })
	if err := EnsureMasquerade(context.Background(), run, mustCIDR(t, "10.42.0.0/24"), mustCIDR(t, "10.42.0.0/16")); err == nil ||
		err.Error() != "masquerade: write K1S-POSTROUTING: exit status 1" {
		t.Errorf("error = %v", err)
	}
}

func TestDeleteMasquerade(t *testing.T) {
	var calls []call
	deletes := 0
	run := fakeRunner(&calls, func(cmd string) bool {
		if strings.Contains(cmd, " -D POSTROUTING") {
			deletes++
			return deletes > 2 // two copies of the jump
		}
		return false
	})
	if err := DeleteMasquerade(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, c := range calls {
		cmds = append(cmds, c.cmd)
	}
	del := "iptables -w -t nat -D POSTROUTING -m comment --comment k1s pod masquerade -j K1S-POSTROUTING"
	want := []string{del, del, del,
		"iptables -w -t nat -S K1S-POSTROUTING", "iptables -w -t nat -F K1S-POSTROUTING", "iptables -w -t nat -X K1S-POSTROUTING"}
	if !reflect.DeepEqual(cmds, want) {
		t.Errorf("commands:\n%q\nwant:\n%q", cmds, want)
	}
}
