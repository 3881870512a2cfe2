package runtimeclass

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	nodev1listers "k8s.io/client-go/listers/node/v1"
)

// Name is the name of the plugin, as upstream registers it.
const Name = "RuntimeClass"

// Plugin is the RuntimeClass admission plugin. Safe for concurrent use.
type Plugin struct {
	*admission.Handler
	lister nodev1listers.RuntimeClassLister
	// get reads a class the informer does not hold yet.
	get func(ctx context.Context, name string) (*nodev1.RuntimeClass, error)
}

var (
	_ admission.MutationInterface       = (*Plugin)(nil)
	_ admission.ValidationInterface     = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
)

// New returns the plugin reading RuntimeClasses from the factory's
// informer (registering it, so the caller must start the factory after
// New), and from client when the informer lacks a class.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory) (*Plugin, error) {
	if client == nil || factory == nil {
		return nil, fmt.Errorf("%s admission needs a client and an informer factory", Name)
	}
	informer := factory.Node().V1().RuntimeClasses()
	p := &Plugin{
		Handler: admission.NewHandler(admission.Create),
		lister:  informer.Lister(),
		get: func(ctx context.Context, name string) (*nodev1.RuntimeClass, error) {
			return client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
		},
	}
	p.SetReadyFunc(informer.Informer().HasSynced)
	return p, nil
}

// ValidateInitialization reports a missing lister.
func (p *Plugin) ValidateInitialization() error {
	if p.lister == nil || p.get == nil {
		return errors.New("missing RuntimeClass lister or client")
	}
	return nil
}

var podsResource = corev1.Resource("pods")

func ignore(a admission.Attributes) bool {
	return a.GetSubresource() != "" || a.GetResource().GroupResource() != podsResource
}

// Admit sets the pod's overhead and merges its class's scheduling.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if ignore(a) {
		return nil
	}
	pod, rc, err := p.objects(ctx, a)
	if err != nil || rc == nil {
		return err
	}
	if rc.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return admission.NewForbidden(a, errors.New("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if s := rc.Scheduling; s != nil {
		selector := pod.Spec.NodeSelector
		if selector == nil {
			selector = make(map[string]string, len(s.NodeSelector))
		}
		for k, v := range s.NodeSelector {
			if pv, ok := selector[k]; ok && pv != v {
				return admission.NewForbidden(a, fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, pv))
			}
			selector[k] = v
		}
		if len(selector) > 0 {
			pod.Spec.NodeSelector = selector
		}
		pod.Spec.Tolerations = MergeTolerations(pod.Spec.Tolerations, s.Tolerations)
	}
	return nil
}

// Validate refuses a pod whose overhead is not its class's.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if ignore(a) {
		return nil
	}
	pod, rc, err := p.objects(ctx, a)
	if err != nil {
		return err
	}
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return admission.NewForbidden(a, errors.New("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
		}
	} else if pod.Spec.Overhead != nil {
		return admission.NewForbidden(a, errors.New("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"))
	}
	return nil
}

// objects returns the pod and its RuntimeClass (nil when it names none).
func (p *Plugin) objects(ctx context.Context, a admission.Attributes) (*corev1.Pod, *nodev1.RuntimeClass, error) {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return nil, nil, apierrors.NewBadRequest("Resource was marked with kind Pod but was unable to be converted")
	}
	if pod.Spec.RuntimeClassName == nil {
		return pod, nil, nil
	}
	name := *pod.Spec.RuntimeClassName
	rc, err := p.lister.Get(name)
	if apierrors.IsNotFound(err) {
		rc, err = p.get(ctx, name)
	}
	if apierrors.IsNotFound(err) {
		return pod, nil, admission.NewForbidden(a, fmt.Errorf("pod rejected: RuntimeClass %q not found", name))
	}
	if err != nil {
		return pod, nil, err
	}
	return pod, rc, nil
}

// MergeTolerations returns first and second without tolerations another
// one of them already covers (upstream's pkg/util/tolerations).
func MergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := append(append([]corev1.Toleration(nil), first...), second...)
	var merged []corev1.Toleration
next:
	for i, t := range all {
		for _, m := range merged {
			if isSuperset(m, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(&t, &later) && isSuperset(later, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// isSuperset reports whether ss tolerates everything t does.
func isSuperset(ss, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(&t, &ss) {
		return true
	}
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != corev1.TolerationOpExists) {
		return false
	}
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == corev1.TaintEffectNoExecute && ss.TolerationSeconds != nil {
		if t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds {
			return false
		}
	}
	switch ss.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == ss.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}
