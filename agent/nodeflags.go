package agent

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ParseTaints reads --node-taint values: key[=value]:Effect.
func ParseTaints(specs []string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, spec := range specs {
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("--node-taint: %q is not key[=value]:Effect", spec)
		}
		switch corev1.TaintEffect(effect) {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("--node-taint: %q has effect %q, want NoSchedule, PreferNoSchedule or NoExecute", spec, effect)
		}
		key, value, _ := strings.Cut(kv, "=")
		out = append(out, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)})
	}
	return out, nil
}

// DefaultNodeIP is the address of the interface that holds the default
// route, or 127.0.0.1 when there is none.
func DefaultNodeIP() net.IP {
	ip, err := utilnet.ResolveBindAddress(net.IPv4zero)
	if err != nil || ip == nil {
		return net.IPv4(127, 0, 0, 1)
	}
	return ip
}
