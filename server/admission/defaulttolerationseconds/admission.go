package defaulttolerationseconds

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
)

// Name is the name of the plugin, as upstream registers it.
const Name = "DefaultTolerationSeconds"

// DefaultSeconds is the default grace period, in seconds, of both added
// tolerations.
const DefaultSeconds int64 = 300

// Config holds the grace periods of the tolerations the plugin adds.
type Config struct {
	// NotReadyTolerationSeconds is the tolerationSeconds of the toleration
	// for node.kubernetes.io/not-ready:NoExecute added to pods that lack one.
	// Flag --default-not-ready-toleration-seconds; default 300.
	NotReadyTolerationSeconds int64
	// UnreachableTolerationSeconds is the tolerationSeconds of the
	// toleration for node.kubernetes.io/unreachable:NoExecute added to pods
	// that lack one. Flag --default-unreachable-toleration-seconds; default 300.
	UnreachableTolerationSeconds int64
}

// DefaultConfig returns the Config with the upstream defaults (300 s each).
func DefaultConfig() Config {
	return Config{
		NotReadyTolerationSeconds:    DefaultSeconds,
		UnreachableTolerationSeconds: DefaultSeconds,
	}
}

// Validate reports a negative grace period, naming its flag.
func (c Config) Validate() error {
	if c.NotReadyTolerationSeconds < 0 {
		return fmt.Errorf("--default-not-ready-toleration-seconds must not be negative, got %d", c.NotReadyTolerationSeconds)
	}
	if c.UnreachableTolerationSeconds < 0 {
		return fmt.Errorf("--default-unreachable-toleration-seconds must not be negative, got %d", c.UnreachableTolerationSeconds)
	}
	return nil
}

// Plugin adds the default not-ready and unreachable tolerations to pods.
// It has no dependencies, is always ready and is safe for concurrent use.
type Plugin struct {
	*admission.Handler
	notReady    corev1.Toleration
	unreachable corev1.Toleration
}

var _ admission.MutationInterface = (*Plugin)(nil)

// New returns the plugin for cfg, or an error if cfg is invalid.
func New(cfg Config) (*Plugin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s admission: %w", Name, err)
	}
	notReady, unreachable := cfg.NotReadyTolerationSeconds, cfg.UnreachableTolerationSeconds
	return &Plugin{
		Handler: admission.NewHandler(admission.Create, admission.Update),
		notReady: corev1.Toleration{
			Key:               corev1.TaintNodeNotReady,
			Operator:          corev1.TolerationOpExists,
			Effect:            corev1.TaintEffectNoExecute,
			TolerationSeconds: &notReady,
		},
		unreachable: corev1.Toleration{
			Key:               corev1.TaintNodeUnreachable,
			Operator:          corev1.TolerationOpExists,
			Effect:            corev1.TaintEffectNoExecute,
			TolerationSeconds: &unreachable,
		},
	}, nil
}

// Admit appends the missing default tolerations to a pod. Requests for
// other resources and for pod subresources are left alone.
func (p *Plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != corev1.Resource("pods") || a.GetSubresource() != "" {
		return nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod but got %T", a.GetObject()))
	}

	var hasNotReady, hasUnreachable bool
	for _, t := range pod.Spec.Tolerations {
		if tolerates(t, corev1.TaintNodeNotReady) {
			hasNotReady = true
		}
		if tolerates(t, corev1.TaintNodeUnreachable) {
			hasUnreachable = true
		}
	}
	if !hasNotReady {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, copyToleration(p.notReady))
	}
	if !hasUnreachable {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, copyToleration(p.unreachable))
	}
	return nil
}

// tolerates reports whether t covers the NoExecute taint with the given
// key: an empty key matches every key and an empty effect every effect.
func tolerates(t corev1.Toleration, key string) bool {
	keyMatches := t.Key == "" || t.Key == key
	effectMatches := t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute
	return keyMatches && effectMatches
}

// copyToleration returns t with its own TolerationSeconds, so pods never
// share the plugin's pointer.
func copyToleration(t corev1.Toleration) corev1.Toleration {
	out := t
	if t.TolerationSeconds != nil {
		s := *t.TolerationSeconds
		out.TolerationSeconds = &s
	}
	return out
}
