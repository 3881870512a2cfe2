package volume

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	etcHostsPath = "/etc/hosts"
	// hostnameMaxLen is the longest hostname a pod gets.
	hostnameMaxLen = 63
)

// ContainerOptions are the facts about a container instance that Mounts
// needs beyond the pod spec.
type ContainerOptions struct {
	// PodIPs are the pod's addresses as the sandbox reported them. Nil means
	// pod.Status.PodIPs. A pod without addresses (and not on the host
	// network) gets no /etc/hosts mount.
	PodIPs []string
	// Env is the container's environment once resolved (name → value),
	// which subPathExpr expands $(NAME) from.
	Env map[string]string
}

func (m *manager) Mounts(pod *corev1.Pod, container *corev1.Container, volumePaths map[string]string, opts ContainerOptions) ([]*runtimeapi.Mount, error) {
	ps := m.lockPod(pod.UID)
	defer ps.mu.Unlock()
	podDir := m.podDir(pod.UID)
	if err := os.MkdirAll(podDir, 0o750); err != nil {
		return nil, fmt.Errorf("create pod directory: %w", err)
	}
	podIPs := opts.PodIPs
	if podIPs == nil {
		for _, ip := range pod.Status.PodIPs {
			podIPs = append(podIPs, ip.IP)
		}
	}
	readOnlyVolumes := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		readOnlyVolumes[v.Name] = v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil ||
			v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly
	}

	wantHosts := len(podIPs) > 0 || pod.Spec.HostNetwork
	var mounts []*runtimeapi.Mount
	for i, vm := range container.VolumeMounts {
		if vm.MountPath == etcHostsPath {
			wantHosts = false
		}
		hostPath, ok := volumePaths[vm.Name]
		if !ok || hostPath == "" {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, container.Name)
		}
		subPath := vm.SubPath
		if vm.SubPathExpr != "" {
			var err error
			if subPath, err = expandSubPathExpr(vm.SubPathExpr, opts.Env); err != nil {
				return nil, fmt.Errorf("volumeMount %q of container %q: subPathExpr %q: %w", vm.Name, container.Name, vm.SubPathExpr, err)
			}
		}
		if subPath != "" {
			if path.IsAbs(subPath) || filepath.IsAbs(subPath) {
				return nil, fmt.Errorf("volumeMount %q of container %q: subPath %q must not be an absolute path", vm.Name, container.Name, subPath)
			}
			for _, part := range strings.Split(filepath.ToSlash(subPath), "/") {
				if part == ".." {
					return nil, fmt.Errorf("volumeMount %q of container %q: subPath %q must not contain '..'", vm.Name, container.Name, subPath)
				}
			}
			target := filepath.Join(podDir, "volume-subpaths", vm.Name, container.Name, fmt.Sprint(i))
			var err error
			if hostPath, err = m.prepareSubPath(hostPath, subPath, target); err != nil {
				return nil, fmt.Errorf("volumeMount %q of container %q: prepare subPath %q: %w", vm.Name, container.Name, subPath, err)
			}
		}
		propagation, err := propagationOf(vm.MountPropagation)
		if err != nil {
			return nil, err
		}
		readOnly := vm.ReadOnly || readOnlyVolumes[vm.Name]
		rro, err := m.recursiveReadOnly(vm, readOnly)
		if err != nil {
			return nil, fmt.Errorf("volumeMount %q of container %q: %w", vm.Name, container.Name, err)
		}
		containerPath := vm.MountPath
		if !path.IsAbs(containerPath) {
			containerPath = "/" + containerPath
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath:     containerPath,
			HostPath:          hostPath,
			Readonly:          readOnly,
			Propagation:       propagation,
			RecursiveReadOnly: rro,
			MountOptions:      vm.BindMountOptions,
		})
	}
	if wantHosts {
		p, err := m.writeHostsFile(pod, podIPs)
		if err != nil {
			return nil, fmt.Errorf("write /etc/hosts of pod: %w", err)
		}
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: p})
	}
	if container.TerminationMessagePath != "" {
		p, err := newTerminationLog(filepath.Join(podDir, "containers", container.Name))
		if err != nil {
			return nil, fmt.Errorf("create termination message file of container %q: %w", container.Name, err)
		}
		containerPath := container.TerminationMessagePath
		if !path.IsAbs(containerPath) {
			containerPath = "/" + containerPath
		}
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: containerPath, HostPath: p})
	}
	return mounts, nil
}

func propagationOf(mode *corev1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	switch {
	case mode == nil || *mode == corev1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case *mode == corev1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case *mode == corev1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("invalid mountPropagation %q", *mode)
}

func (m *manager) recursiveReadOnly(vm corev1.VolumeMount, readOnly bool) (bool, error) {
	if vm.RecursiveReadOnly == nil {
		return false, nil
	}
	switch *vm.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
		return false, nil
	case corev1.RecursiveReadOnlyIfPossible:
		return readOnly && m.cfg.RecursiveReadOnlySupported, nil
	case corev1.RecursiveReadOnlyEnabled:
		if !readOnly {
			return false, errors.New("recursiveReadOnly Enabled needs a read-only mount")
		}
		if !m.cfg.RecursiveReadOnlySupported {
			return false, errors.New("recursive read-only mounts are not supported by the container runtime")
		}
		return true, nil
	}
	return false, fmt.Errorf("invalid recursiveReadOnly %q", *vm.RecursiveReadOnly)
}

// expandSubPathExpr replaces $(NAME) in expr by env's value; $$ is a
// literal $. A name without a (non-empty) value is an error.
func expandSubPathExpr(expr string, env map[string]string) (string, error) {
	var b strings.Builder
	var missing []string
	for i := 0; i < len(expr); i++ {
		if expr[i] != '$' || i+1 == len(expr) {
			b.WriteByte(expr[i])
			continue
		}
		switch expr[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(expr[i+2:], ')')
			if end < 0 {
				b.WriteString(expr[i:])
				i = len(expr)
				continue
			}
			name := expr[i+2 : i+2+end]
			v := env[name]
			if v == "" {
				missing = append(missing, name)
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
	}
	return b.String(), nil
}

// PodHostnameAndDomain returns the hostname of pod (spec.hostnameOverride,
// spec.hostname or its name, cut to 63 characters) and its domain
// (<subdomain>.<namespace>.svc.<clusterDomain> when it has a subdomain).
// The agent uses them for the sandbox's hostname too.
func PodHostnameAndDomain(pod *corev1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod hostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, ";"))
		}
		h, err := truncateHostname(pod.Name, *o)
		return h, "", err
	}
	hostname = pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	if hostname, err = truncateHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if sd := pod.Spec.Subdomain; sd != "" {
		if msgs := validation.IsDNS1123Label(sd); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod subdomain %q is not a valid DNS label: %s", sd, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", sd, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

func truncateHostname(podName, hostname string) (string, error) {
	if len(hostname) <= hostnameMaxLen {
		return hostname, nil
	}
	cut := strings.TrimRight(hostname[:hostnameMaxLen], "-.")
	if cut == "" {
		return "", fmt.Errorf("hostname %q of pod %q is invalid once cut to %d characters", hostname, podName, hostnameMaxLen)
	}
	return cut, nil
}

// writeHostsFile writes the pod's hosts file (<pod-dir>/etc-hosts) and
// returns its path. The file is rewritten in place, not replaced, because
// running containers have it bind-mounted.
func (m *manager) writeHostsFile(pod *corev1.Pod, podIPs []string) (string, error) {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile(m.cfg.NodeHostsFile)
		if err != nil {
			return "", fmt.Errorf("read node hosts file: %w", err)
		}
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		b.Write(node)
	} else {
		hostname, domain, err := PodHostnameAndDomain(pod, m.cfg.ClusterDomain)
		if err != nil {
			return "", err
		}
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		for _, ip := range podIPs {
			if domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	p := filepath.Join(m.podDir(pod.UID), "etc-hosts")
	if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, b.Bytes()) {
		return p, nil
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		return "", err
	}
	return p, os.Chmod(p, 0o644)
}

// newTerminationLog creates an empty, world-writable file with a random
// name in dir, for one container instance's termination message.
func newTerminationLog(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	for range 10 {
		var id [4]byte
		if _, err := rand.Read(id[:]); err != nil {
			return "", err
		}
		p := filepath.Join(dir, hex.EncodeToString(id[:]))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
		// The umask applied at creation.
		return p, os.Chmod(p, 0o666)
	}
	return "", errors.New("no free file name")
}
