package priority

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	schedulingv1listers "k8s.io/client-go/listers/scheduling/v1"
)

const (
	// Name is the name of the plugin, as upstream registers it.
	Name = "Priority"

	// HighestUserDefinablePriority is the highest value a PriorityClass
	// not created by the system may have.
	HighestUserDefinablePriority int32 = 1_000_000_000
	// SystemCriticalPriority is the value of system-cluster-critical; only
	// system classes have values at or above it.
	SystemCriticalPriority int32 = 2 * HighestUserDefinablePriority
	// SystemPriorityClassPrefix starts the names reserved for system
	// classes.
	SystemPriorityClassPrefix = "system-"
	// SystemClusterCritical is the class of components the cluster needs,
	// which may move between nodes.
	SystemClusterCritical = SystemPriorityClassPrefix + "cluster-critical"
	// SystemNodeCritical is the class of components a node needs, which
	// must not be moved off it.
	SystemNodeCritical = SystemPriorityClassPrefix + "node-critical"
	// DefaultPriority is the priority of a pod naming no class when no
	// class is marked globalDefault.
	DefaultPriority int32 = 0
)

// SystemPriorityClasses returns fresh copies of the system priority
// classes, which the server creates at start: system-node-critical
// (2000001000) and system-cluster-critical (2000000000).
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{
			ObjectMeta:  metav1.ObjectMeta{Name: SystemNodeCritical},
			Value:       SystemCriticalPriority + 1000,
			Description: "For pods that a node cannot work without; they are never moved off their node.",
		},
		{
			ObjectMeta:  metav1.ObjectMeta{Name: SystemClusterCritical},
			Value:       SystemCriticalPriority,
			Description: "For pods that the cluster cannot work without; they may be moved to another node.",
		},
	}
}

// IsKnownSystemPriorityClass reports whether name is a system priority
// class and value and globalDefault are exactly its own; the error says
// what differs. PriorityClass validation uses it to keep the system- prefix
// and values above HighestUserDefinablePriority for the system classes.
func IsKnownSystemPriorityClass(name string, value int32, globalDefault bool) (bool, error) {
	for _, pc := range SystemPriorityClasses() {
		if pc.Name != name {
			continue
		}
		if pc.Value != value {
			return false, fmt.Errorf("value of %s PriorityClass must be %d", pc.Name, pc.Value)
		}
		if pc.GlobalDefault != globalDefault {
			return false, fmt.Errorf("globalDefault of %s PriorityClass must be %t", pc.Name, pc.GlobalDefault)
		}
		return true, nil
	}
	return false, fmt.Errorf("%s is not a known system priority class", name)
}

// Config tunes the plugin.
type Config struct {
	// SystemCriticalNamespaces, when not empty, lists the only namespaces
	// whose pods may use system-node-critical or system-cluster-critical
	// (Kubernetes up to 1.16 allowed only kube-system). Default: empty, any
	// namespace may, as upstream today, which leaves such limits to
	// ResourceQuota's limitedResources.
	SystemCriticalNamespaces []string
}

// Plugin is the Priority admission plugin. Safe for concurrent use. It
// reads PriorityClasses only from its informer, so requests it handles wait
// (up to 10 s, then fail) until that informer has synced.
type Plugin struct {
	*admission.Handler
	lister                   schedulingv1listers.PriorityClassLister
	systemCriticalNamespaces []string
}

var (
	_ admission.MutationInterface       = (*Plugin)(nil)
	_ admission.ValidationInterface     = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
)

// New returns the plugin reading PriorityClasses from the factory's
// informer (registering it, so the caller must start the factory after
// New). Its ready func reports that informer's sync.
func New(factory informers.SharedInformerFactory, cfg Config) (*Plugin, error) {
	if factory == nil {
		return nil, fmt.Errorf("%s admission needs an informer factory", Name)
	}
	informer := factory.Scheduling().V1().PriorityClasses()
	p := &Plugin{
		Handler:                  admission.NewHandler(admission.Create, admission.Update),
		lister:                   informer.Lister(),
		systemCriticalNamespaces: slices.Clone(cfg.SystemCriticalNamespaces),
	}
	p.SetReadyFunc(informer.Informer().HasSynced)
	return p, nil
}

// ValidateInitialization reports a missing lister.
func (p *Plugin) ValidateInitialization() error {
	if p.lister == nil {
		return errors.New("missing PriorityClass lister")
	}
	return nil
}

var (
	podsResource            = corev1.Resource("pods")
	priorityClassesResource = schedulingv1.Resource("priorityclasses")
)

// Admit resolves the priority of pods.
func (p *Plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || a.GetResource().GroupResource() != podsResource {
		return nil
	}
	switch a.GetOperation() {
	case admission.Create:
		return p.admitNewPod(a)
	case admission.Update:
		return keepResolvedPriority(a)
	}
	return nil
}

// Validate rejects a second globalDefault PriorityClass.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || a.GetResource().GroupResource() != priorityClassesResource {
		return nil
	}
	if op := a.GetOperation(); op != admission.Create && op != admission.Update {
		return nil
	}
	pc, ok := a.GetObject().(*schedulingv1.PriorityClass)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.PriorityClass but got %T", a.GetObject()))
	}
	if !pc.GlobalDefault {
		return nil
	}
	if err := p.waitReady(a); err != nil {
		return err
	}
	existing, err := p.defaultClass()
	if err != nil {
		return fmt.Errorf("get default priority class: %w", err)
	}
	if existing != nil && (a.GetOperation() == admission.Create || existing.Name != pc.Name) {
		return admission.NewForbidden(a, fmt.Errorf("PriorityClass %s is already marked as default. Only one default can exist", existing.Name))
	}
	return nil
}

func (p *Plugin) waitReady(a admission.Attributes) error {
	if !p.WaitForReady() {
		return admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	return nil
}

// keepResolvedPriority copies priority and preemptionPolicy, which the
// plugin set at create, from the stored pod when an update omits them.
// Validation forbids changing them, so nothing else needs checking.
func keepResolvedPriority(a admission.Attributes) error {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod but got %T", a.GetObject()))
	}
	old, ok := a.GetOldObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod as old object but got %T", a.GetOldObject()))
	}
	if pod.Spec.Priority == nil && old.Spec.Priority != nil {
		v := *old.Spec.Priority
		pod.Spec.Priority = &v
	}
	if pod.Spec.PreemptionPolicy == nil && old.Spec.PreemptionPolicy != nil {
		v := *old.Spec.PreemptionPolicy
		pod.Spec.PreemptionPolicy = &v
	}
	return nil
}

func (p *Plugin) admitNewPod(a admission.Attributes) error {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod but got %T", a.GetObject()))
	}
	if err := p.waitReady(a); err != nil {
		return err
	}

	className, priority, policy, err := p.resolve(a, pod.Spec.PriorityClassName)
	if err != nil {
		return err
	}
	if len(p.systemCriticalNamespaces) > 0 && (className == SystemNodeCritical || className == SystemClusterCritical) &&
		!slices.Contains(p.systemCriticalNamespaces, a.GetNamespace()) {
		return admission.NewForbidden(a, fmt.Errorf("pods with %s priorityClass is not permitted in %s namespace", className, a.GetNamespace()))
	}

	pod.Spec.PriorityClassName = className
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return admission.NewForbidden(a, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = &priority

	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return admission.NewForbidden(a, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		v := *policy
		pod.Spec.PreemptionPolicy = &v
	}
	return nil
}

// resolve returns the class name, priority and preemption policy for a pod
// naming className ("" for the default).
func (p *Plugin) resolve(a admission.Attributes, className string) (string, int32, *corev1.PreemptionPolicy, error) {
	if className == "" {
		pc, err := p.defaultClass()
		if err != nil {
			return "", 0, nil, fmt.Errorf("error occurred while retrieving default priority class: %w", err)
		}
		if pc == nil {
			policy := corev1.PreemptLowerPriority
			return "", DefaultPriority, &policy, nil
		}
		return pc.Name, pc.Value, pc.PreemptionPolicy, nil
	}
	pc, err := p.lister.Get(className)
	if apierrors.IsNotFound(err) {
		return "", 0, nil, admission.NewForbidden(a, fmt.Errorf("no PriorityClass with name %s was found", className))
	}
	if err != nil {
		return "", 0, nil, fmt.Errorf("failed to resolve PriorityClass with name %s: %w", className, err)
	}
	return className, pc.Value, pc.PreemptionPolicy, nil
}

// defaultClass returns the globalDefault class with the lowest value, or
// nil if no class is marked globalDefault.
func (p *Plugin) defaultClass() (*schedulingv1.PriorityClass, error) {
	all, err := p.lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var found *schedulingv1.PriorityClass
	for _, pc := range all {
		if pc.GlobalDefault && (found == nil || pc.Value < found.Value) {
			found = pc
		}
	}
	return found, nil
}
