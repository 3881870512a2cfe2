package kuberuntime

import (
	"context"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// makeEnvironment resolves a container's environment: service variables,
// envFrom sources, then env entries (which win), with $(VAR) expansion.
func (m *Manager) makeEnvironment(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIPs []string) ([]*runtimeapi.KeyValue, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	if m.env != nil {
		enableLinks := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
		svcs, err := m.env.ListServices(pod.Namespace)
		if err == nil {
			for _, kv := range serviceEnv(svcs, pod.Namespace, enableLinks) {
				set(kv[0], kv[1])
			}
		}
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			optional := from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional
			cm, err := m.getConfigMap(ctx, pod.Namespace, from.ConfigMapRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, fmt.Errorf("configmap %q: %w", from.ConfigMapRef.Name, err)
			}
			for _, k := range sortedKeys(cm.Data) {
				if name := from.Prefix + k; validEnvName(name) {
					set(name, cm.Data[k])
				}
			}
		case from.SecretRef != nil:
			optional := from.SecretRef.Optional != nil && *from.SecretRef.Optional
			sec, err := m.getSecret(ctx, pod.Namespace, from.SecretRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, fmt.Errorf("secret %q: %w", from.SecretRef.Name, err)
			}
			keys := make([]string, 0, len(sec.Data))
			for k := range sec.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if name := from.Prefix + k; validEnvName(name) {
					set(name, string(sec.Data[k]))
				}
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vars))
			continue
		}
		v, ok, err := m.envValueFrom(ctx, pod, c, e.ValueFrom, podIPs)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	out := make([]*runtimeapi.KeyValue, 0, len(order))
	for _, k := range order {
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: []byte(vars[k])})
	}
	return out, nil
}

// validEnvName accepts what can be an environment variable: upstream takes
// envFrom's prefixed keys as they are (the prefix may be any printable
// ASCII but '=', and start with a digit); only a name that cannot be
// written as NAME=value is left out.
func validEnvName(name string) bool { return name != "" && !strings.ContainsAny(name, "=\x00") }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (m *Manager) getConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if m.env == nil {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}
	return m.env.GetConfigMap(ctx, ns, name)
}

func (m *Manager) getSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	if m.env == nil {
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
	}
	return m.env.GetSecret(ctx, ns, name)
}

// envValueFrom resolves one valueFrom source; ok is false for an optional
// reference that does not exist.
func (m *Manager) envValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, src *corev1.EnvVarSource, podIPs []string) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := m.podField(pod, src.FieldRef.FieldPath, podIPs)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := resourceField(pod, c, src.ResourceFieldRef, m.nodeAllocatable())
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := m.getConfigMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("configmap %q: %w", ref.Name, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if b, isBinary := cm.BinaryData[ref.Key]; isBinary {
				return string(b), true, nil
			}
			if optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return v, true, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		sec, err := m.getSecret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("secret %q: %w", ref.Name, err)
		}
		v, ok := sec.Data[ref.Key]
		if !ok {
			if optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), true, nil
	}
	return "", false, fmt.Errorf("unsupported valueFrom")
}

// podField resolves a downward-API field path.
func (m *Manager) podField(pod *corev1.Pod, path string, podIPs []string) (string, error) {
	if strings.HasPrefix(path, "metadata.labels['") || strings.HasPrefix(path, "metadata.annotations['") {
		key := path[strings.Index(path, "['")+2 : len(path)-2]
		if strings.HasPrefix(path, "metadata.labels") {
			return pod.Labels[key], nil
		}
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return m.cfg.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		if len(m.cfg.NodeIPs) > 0 {
			return m.cfg.NodeIPs[0].String(), nil
		}
		return "", nil
	case "status.hostIPs":
		var ips []string
		for _, ip := range m.cfg.NodeIPs {
			ips = append(ips, ip.String())
		}
		return strings.Join(ips, ","), nil
	case "status.podIP":
		if pod.Spec.HostNetwork && len(m.cfg.NodeIPs) > 0 {
			return m.cfg.NodeIPs[0].String(), nil
		}
		if len(podIPs) > 0 {
			return podIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		if pod.Spec.HostNetwork {
			return m.podField(pod, "status.hostIPs", podIPs)
		}
		return strings.Join(podIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

func (m *Manager) nodeAllocatable() corev1.ResourceList {
	if m.allocatable == nil {
		return nil
	}
	return m.allocatable()
}

// resourceField resolves a resourceFieldRef of container c (or of the one
// the reference names) with its divisor, rounding up as upstream does. A
// limit the container does not set is the node's allocatable amount.
func resourceField(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				target = &pod.Spec.Containers[i]
			}
		}
		for i := range pod.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name == ref.ContainerName {
				target = &pod.Spec.InitContainers[i]
			}
		}
		if target == nil {
			return "", fmt.Errorf("container %q not found", ref.ContainerName)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var q resource.Quantity
	limit := func(name corev1.ResourceName) resource.Quantity {
		if q, ok := target.Resources.Limits[name]; ok && !q.IsZero() {
			return q
		}
		return allocatable[name]
	}
	switch ref.Resource {
	case "limits.cpu":
		q = limit(corev1.ResourceCPU)
	case "limits.memory":
		q = limit(corev1.ResourceMemory)
	case "limits.ephemeral-storage":
		q = limit(corev1.ResourceEphemeralStorage)
	case "requests.cpu":
		q = target.Resources.Requests[corev1.ResourceCPU]
	case "requests.memory":
		q = target.Resources.Requests[corev1.ResourceMemory]
	case "requests.ephemeral-storage":
		q = target.Resources.Requests[corev1.ResourceEphemeralStorage]
	default:
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	if strings.HasSuffix(ref.Resource, "cpu") {
		v := int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))
		return strconv.FormatInt(v, 10), nil
	}
	v := int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))
	return strconv.FormatInt(v, 10), nil
}

// serviceEnv returns the docker-link style variables of services: the
// kubernetes service from default always, the namespace's when links are
// enabled.
func serviceEnv(svcs []*corev1.Service, namespace string, links bool) [][2]string {
	var out [][2]string
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].Name < svcs[j].Name })
	for _, s := range svcs {
		ip := net.ParseIP(s.Spec.ClusterIP)
		if ip == nil || len(s.Spec.Ports) == 0 {
			continue
		}
		isKubernetes := s.Namespace == "default" && s.Name == "kubernetes"
		if !isKubernetes && (s.Namespace != namespace || !links) {
			continue
		}
		name := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		out = append(out, [2]string{name + "_SERVICE_HOST", s.Spec.ClusterIP})
		out = append(out, [2]string{name + "_SERVICE_PORT", strconv.Itoa(int(s.Spec.Ports[0].Port))})
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				out = append(out, [2]string{name + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), strconv.Itoa(int(p.Port))})
			}
		}
		host := net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(s.Spec.Ports[0].Port)))
		out = append(out, [2]string{name + "_PORT", strings.ToLower(string(s.Spec.Ports[0].Protocol)) + "://" + host})
		for _, p := range s.Spec.Ports {
			proto := strings.ToLower(string(p.Protocol))
			prefix := fmt.Sprintf("%s_PORT_%d_%s", name, p.Port, strings.ToUpper(proto))
			out = append(out,
				[2]string{prefix, proto + "://" + net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(p.Port)))},
				[2]string{prefix + "_PROTO", proto},
				[2]string{prefix + "_PORT", strconv.Itoa(int(p.Port))},
				[2]string{prefix + "_ADDR", s.Spec.ClusterIP},
			)
		}
	}
	return out
}

// expand replaces $(VAR) with its value; $$ escapes a dollar; unknown
// references are left as written, as upstream does.
func expand(in string, vars map[string]string) string {
	if !strings.Contains(in, "$") {
		return in
	}
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		if in[i] != '$' || i+1 >= len(in) {
			b.WriteByte(in[i])
			continue
		}
		switch in[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(in[i+2:], ')')
			if end < 0 {
				b.WriteString(in[i:])
				return b.String()
			}
			name := in[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(in[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func expandAll(in []string, vars map[string]string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, vars)
	}
	return out
}
