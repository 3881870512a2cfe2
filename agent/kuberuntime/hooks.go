package kuberuntime

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// runHook runs a lifecycle handler (exec, httpGet, tcpSocket or sleep)
// within timeout; it returns a message fit for an event on failure.
func (m *Manager) runHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, containerID string, podIPs []string, h *corev1.LifecycleHandler, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		stdout, stderr, err := m.runtime.ExecSync(ctx, containerID, h.Exec.Command, timeout)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, pod.Namespace+"/"+pod.Name, err, string(stdout)+string(stderr)), err
		}
	case h.HTTPGet != nil:
		host := h.HTTPGet.Host
		if host == "" {
			host = m.podIP(pod, podIPs)
		}
		port, err := resolvePort(h.HTTPGet.Port, c)
		if err != nil {
			return err.Error(), err
		}
		scheme := "http"
		if h.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), h.HTTPGet.Path)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err.Error(), err
		}
		for _, hd := range h.HTTPGet.HTTPHeaders {
			req.Header.Add(hd.Name, hd.Value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, pod.Namespace+"/"+pod.Name, err), err
		}
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			err := fmt.Errorf("HTTP lifecycle hook returned status %d", resp.StatusCode)
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, pod.Namespace+"/"+pod.Name, err), err
		}
	case h.TCPSocket != nil:
		port, err := resolvePort(h.TCPSocket.Port, c)
		if err != nil {
			return err.Error(), err
		}
		host := h.TCPSocket.Host
		if host == "" {
			host = m.podIP(pod, podIPs)
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err.Error(), err
		}
		conn.Close()
	case h.Sleep != nil:
		select {
		case <-m.clock.After(time.Duration(h.Sleep.Seconds) * time.Second):
		case <-ctx.Done():
		}
	}
	return "", nil
}

func (m *Manager) podIP(pod *corev1.Pod, podIPs []string) string {
	if len(podIPs) > 0 {
		return podIPs[0]
	}
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	if len(m.cfg.NodeIPs) > 0 {
		return m.cfg.NodeIPs[0].String()
	}
	return "127.0.0.1"
}

// resolvePort turns a named or numbered port into a number.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("couldn't find port %q in container %s", p.StrVal, c.Name)
}

// event records an event on the pod about container c (c may be nil).
func (m *Manager) event(pod *corev1.Pod, typ, reason string, c *corev1.Container, msg string) {
	if m.recorder == nil || pod == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, APIVersion: "v1", ResourceVersion: pod.ResourceVersion}
	if c != nil {
		ref.FieldPath = fieldPath(pod, c.Name)
	}
	m.recorder.Event(ref, typ, reason, msg)
}

func (m *Manager) podEvent(pod *corev1.Pod, typ, reason, msg string) {
	m.event(pod, typ, reason, nil, msg)
}

func fieldPath(pod *corev1.Pod, name string) string {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return fmt.Sprintf("spec.initContainers{%s}", name)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return fmt.Sprintf("spec.ephemeralContainers{%s}", name)
		}
	}
	return fmt.Sprintf("spec.containers{%s}", name)
}

func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}
