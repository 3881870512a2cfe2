package network

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	current "github.com/containernetworking/cni/pkg/types/100"
	"golang.org/x/sys/unix"
)

// TestConflistWithRealPlugins attaches a network namespace through the
// conflist with the installed CNI plugins. The "host" side is a network
// namespace of the test's own (inNewNetns), so the bridge, addresses and
// iptables rules vanish with it; the pod side is a named namespace the test
// deletes.
func TestConflistWithRealPlugins(t *testing.T) {
	const binDir = "/usr/lib/cni"
	if _, err := os.Stat(filepath.Join(binDir, "bridge")); err != nil {
		t.Skip("CNI plugins not installed in " + binDir)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip not installed")
	}
	tmp := t.TempDir()
	confDir := filepath.Join(tmp, "net.d")
	if _, err := WriteConfig(confDir, CNIConfig{PodCIDR: mustCIDR(t, "10.99.3.0/24"), IPAMDataDir: filepath.Join(tmp, "ipam")}); err != nil {
		t.Fatal(err)
	}
	list, err := libcni.ConfListFromFile(filepath.Join(confDir, ConfFileName))
	if err != nil {
		t.Fatal(err)
	}
	nsName := fmt.Sprintf("k1s-test-%d", os.Getpid())
	var podIP, gw net.IP
	var pingErr, addErr, delErr error
	var ifaces string
	inNewNetns(t, func() {
		// The host's loopback, for the hostPort check.
		if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			addErr = fmt.Errorf("lo up: %v: %s", err, out)
			return
		}
		if out, err := exec.Command("ip", "netns", "add", nsName).CombinedOutput(); err != nil {
			addErr = fmt.Errorf("ip netns add: %v: %s", err, out)
			return
		}
		defer func() { _ = exec.Command("ip", "netns", "delete", nsName).Run() }()
		ctx := context.Background()
		cni := libcni.NewCNIConfigWithCacheDir([]string{binDir}, filepath.Join(tmp, "cache"), nil)
		rt := &libcni.RuntimeConf{
			ContainerID: "test-container", NetNS: "/run/netns/" + nsName, IfName: "eth0",
			CapabilityArgs: map[string]any{"portMappings": []map[string]any{{"hostPort": 18080, "containerPort": 80, "protocol": "tcp"}}},
		}
		res, err := cni.AddNetworkList(ctx, list, rt)
		if err != nil {
			addErr = err
			return
		}
		r, err := current.NewResultFromResult(res)
		if err != nil || len(r.IPs) != 1 {
			addErr = fmt.Errorf("result %v: %v", res, err)
			return
		}
		podIP, gw = r.IPs[0].Address.IP, r.IPs[0].Gateway
		out, _ := exec.Command("ip", "-o", "addr", "show", "cni0").CombinedOutput()
		ifaces = string(out)
		pingErr = serveInNetns("/run/netns/"+nsName, podIP, func() error {
			// Straight to the pod over the bridge, and through the
			// hostPort from the host's loopback (portmap with snat).
			for _, addr := range []string{net.JoinHostPort(podIP.String(), "80"), "127.0.0.1:18080"} {
				if err := roundTrip(addr); err != nil {
					return err
				}
			}
			return nil
		})
		delErr = cni.DelNetworkList(ctx, list, rt)
	})
	if addErr != nil {
		t.Fatalf("add: %v", addErr)
	}
	if !mustCIDR(t, "10.99.3.0/24").Contains(podIP) || gw.String() != "10.99.3.1" {
		t.Errorf("pod IP %s, gateway %s; want an address of 10.99.3.0/24 behind 10.99.3.1", podIP, gw)
	}
	if !strings.Contains(ifaces, "10.99.3.1/24") {
		t.Errorf("cni0 lacks the gateway address: %s", ifaces)
	}
	if pingErr != nil {
		t.Errorf("traffic to the pod: %v", pingErr)
	}
	if delErr != nil {
		t.Errorf("del: %v", delErr)
	}
	if _, err := os.Stat(filepath.Join(tmp, "ipam", "k1s", podIP.String())); !os.IsNotExist(err) {
		t.Errorf("address reservation left after DEL: %v", err)
	}
}

// serveInNetns listens on ip:80 inside the network namespace at nsPath,
// answering "pong" to each connection, while check runs.
func serveInNetns(nsPath string, ip net.IP, check func() error) error {
	ready := make(chan error, 1)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ready <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			ready <- err
			return
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "80"))
		if err != nil {
			ready <- err
			return
		}
		ready <- nil
		go func() {
			<-stop
			l.Close()
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("pong"))
			c.Close()
		}
	}()
	if err := <-ready; err != nil {
		return err
	}
	err := check()
	close(stop)
	<-done
	return err
}

func roundTrip(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "pong" {
		return fmt.Errorf("%s answered %q, %v", addr, b, err)
	}
	return nil
}
