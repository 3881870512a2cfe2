package limitranger

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

const (
	// Name is the name of the plugin, as upstream registers it.
	Name = "LimitRanger"

	// AnnotationKey is the pod annotation listing the requests and limits
	// the plugin filled in.
	AnnotationKey = "kubernetes.io/limit-ranger"

	// liveLookupTTL is how long a live list of a namespace's LimitRanges
	// is reused.
	liveLookupTTL = 30 * time.Second
	// liveLookupEntries bounds the namespaces remembered.
	liveLookupEntries = 10000
)

// Plugin is the LimitRanger admission plugin. Safe for concurrent use. It
// is ready once its LimitRange informer has synced, but answers before
// that too by listing from the API.
type Plugin struct {
	*admission.Handler

	client kubernetes.Interface
	lister corev1listers.LimitRangeLister
	clock  clock.PassiveClock

	// live remembers recent API lists for namespaces the cache had nothing
	// for; group collapses concurrent lists of one namespace.
	live  *lru.Cache
	group singleflight.Group
}

type liveEntry struct {
	expiry time.Time
	items  []*corev1.LimitRange
}

var (
	_ admission.MutationInterface       = (*Plugin)(nil)
	_ admission.ValidationInterface     = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
)

// New returns the plugin reading LimitRanges from the factory's informer
// (registering it, so the caller must start the factory after New) and,
// on a cache miss, from client. Its ready func reports the informer's sync.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory) (*Plugin, error) {
	if client == nil || factory == nil {
		return nil, fmt.Errorf("%s admission needs a client and an informer factory", Name)
	}
	informer := factory.Core().V1().LimitRanges()
	p := &Plugin{
		Handler: admission.NewHandler(admission.Create, admission.Update),
		client:  client,
		lister:  informer.Lister(),
		clock:   clock.RealClock{},
		live:    lru.New(liveLookupEntries),
	}
	p.SetReadyFunc(informer.Informer().HasSynced)
	return p, nil
}

// ValidateInitialization reports a missing dependency.
func (p *Plugin) ValidateInitialization() error {
	if p.client == nil {
		return errors.New("missing client")
	}
	if p.lister == nil {
		return errors.New("missing LimitRange lister")
	}
	return nil
}

// Admit fills in pod container requests and limits from the namespace's
// LimitRange defaults.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	return p.run(ctx, a, func(lr *corev1.LimitRange, a admission.Attributes) error {
		if pod, ok := a.GetObject().(*corev1.Pod); ok && a.GetResource().Resource == "pods" {
			ApplyPodDefaults(lr, pod)
		}
		return nil
	})
}

// Validate checks pods and PersistentVolumeClaims against the namespace's
// LimitRanges.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	return p.run(ctx, a, func(lr *corev1.LimitRange, a admission.Attributes) error {
		switch obj := a.GetObject().(type) {
		case *corev1.Pod:
			return ValidatePod(lr, obj)
		case *corev1.PersistentVolumeClaim:
			return ValidatePVC(lr, obj)
		}
		return nil
	})
}

// handles reports whether the plugin acts on a request: pods and PVCs
// proper, plus pod resizes. Pod updates are skipped since containers and
// their resources cannot change except through pods/resize.
func handles(a admission.Attributes) bool {
	kind := a.GetKind().GroupKind()
	isPod := kind == corev1.SchemeGroupVersion.WithKind("Pod").GroupKind()
	isPVC := kind == corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim").GroupKind()
	switch a.GetSubresource() {
	case "":
	case "resize":
		return isPod && a.GetOperation() == admission.Update
	default:
		return false
	}
	if isPod && a.GetOperation() == admission.Update {
		return false
	}
	return isPod || isPVC
}

func (p *Plugin) run(ctx context.Context, a admission.Attributes, fn func(*corev1.LimitRange, admission.Attributes) error) error {
	if !handles(a) {
		return nil
	}
	// Objects on their way out are not held to limits.
	if old := a.GetOldObject(); old != nil {
		accessor, err := meta.Accessor(old)
		if err != nil {
			return admission.NewForbidden(a, err)
		}
		if accessor.GetDeletionTimestamp() != nil {
			return nil
		}
	}
	items, err := p.limitRanges(ctx, a)
	if err != nil {
		return err
	}
	for _, lr := range items {
		if err := fn(lr, a); err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	return nil
}

// limitRanges returns the LimitRanges of the request's namespace from the
// cache or, if it has none, from a recent live list.
func (p *Plugin) limitRanges(ctx context.Context, a admission.Attributes) ([]*corev1.LimitRange, error) {
	ns := a.GetNamespace()
	items, err := p.lister.LimitRanges(ns).List(labels.Everything())
	if err != nil {
		return nil, admission.NewForbidden(a, fmt.Errorf("unable to %s %v at this time because there was an error enforcing limit ranges", a.GetOperation(), a.GetResource()))
	}
	if len(items) > 0 {
		return items, nil
	}

	if cached, ok := p.live.Get(ns); ok {
		if entry := cached.(liveEntry); p.clock.Now().Before(entry.expiry) {
			return entry.items, nil
		}
	}
	got, err, _ := p.group.Do(ns, func() (any, error) {
		list, err := p.client.CoreV1().LimitRanges(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, admission.NewForbidden(a, fmt.Errorf("list limit ranges of namespace %s: %w", ns, err))
		}
		entry := liveEntry{expiry: p.clock.Now().Add(liveLookupTTL)}
		for i := range list.Items {
			entry.items = append(entry.items, &list.Items[i])
		}
		p.live.Add(ns, entry)
		return entry, nil
	})
	if err != nil {
		return nil, err
	}
	return got.(liveEntry).items, nil
}

// ApplyPodDefaults sets, in every container and init container of pod,
// the requests and limits that lr's items of type Container default and
// that the container does not set, and records what it set in the pod's
// kubernetes.io/limit-ranger annotation.
func ApplyPodDefaults(lr *corev1.LimitRange, pod *corev1.Pod) {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for name, q := range item.DefaultRequest {
			requests[name] = q.DeepCopy()
		}
		for name, q := range item.Default {
			limits[name] = q.DeepCopy()
		}
	}

	var notes []string
	for i := range pod.Spec.Containers {
		notes = defaultContainer(&pod.Spec.Containers[i], "container", requests, limits, notes)
	}
	for i := range pod.Spec.InitContainers {
		notes = defaultContainer(&pod.Spec.InitContainers[i], "init container", requests, limits, notes)
	}
	if len(notes) == 0 {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationKey] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
}

// defaultContainer fills in c's missing requests and limits and appends
// notes such as "cpu, memory request for container app".
func defaultContainer(c *corev1.Container, kind string, requests, limits corev1.ResourceList, notes []string) []string {
	fill := func(have *corev1.ResourceList, defaults corev1.ResourceList) []string {
		if *have == nil && len(defaults) > 0 {
			*have = corev1.ResourceList{}
		}
		var set []string
		for name, q := range defaults {
			if _, ok := (*have)[name]; !ok {
				(*have)[name] = q.DeepCopy()
				set = append(set, string(name))
			}
		}
		sort.Strings(set)
		return set
	}
	setLimits := fill(&c.Resources.Limits, limits)
	setRequests := fill(&c.Resources.Requests, requests)
	if len(setRequests) > 0 {
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setRequests, ", "), kind, c.Name))
	}
	if len(setLimits) > 0 {
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLimits, ", "), kind, c.Name))
	}
	return notes
}

// ValidatePod checks pod against lr's items of type Container (each
// container and init container) and Pod (the pod's effective requests and
// limits). All violations are returned together.
func ValidatePod(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for i := range cs {
					errs = append(errs, checkItem(item, cs[i].Resources.Requests, cs[i].Resources.Limits)...)
				}
			}
		case corev1.LimitTypePod:
			opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
			errs = append(errs, checkItem(item, resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))...)
		}
	}
	return utilerrors.NewAggregate(errs)
}

func checkItem(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	var errs []error
	kind := string(item.Type)
	for name, q := range item.Min {
		if err := checkMin(kind, name, q, requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for name, q := range item.Max {
		if err := checkMax(kind, name, q, requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for name, q := range item.MaxLimitRequestRatio {
		if err := checkRatio(kind, name, q, requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// ValidatePVC checks the storage a claim requests against lr's items of
// type PersistentVolumeClaim; claim limits are not looked at.
func ValidatePVC(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		kind := string(item.Type)
		for name, q := range item.Min {
			if err := checkMin(kind, name, q, pvc.Spec.Resources.Requests, nil); err != nil {
				errs = append(errs, err)
			}
		}
		for name, q := range item.Max {
			if err := checkMaxRequest(kind, name, q, pvc.Spec.Resources.Requests); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

// inCommonUnit returns the three quantities as integers of one unit: milli
// units when none would overflow, whole units otherwise.
func inCommonUnit(a, b, c resource.Quantity) (int64, int64, int64) {
	av, bv, cv := a.Value(), b.Value(), c.Value()
	if av <= resource.MaxMilliValue && bv <= resource.MaxMilliValue && cv <= resource.MaxMilliValue {
		return a.MilliValue(), b.MilliValue(), c.MilliValue()
	}
	return av, bv, cv
}

func checkMin(kind string, name corev1.ResourceName, bound resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	reqV, limV, boundV := inCommonUnit(req, lim, bound)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, bound.String())
	case reqV < boundV:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, bound.String(), req.String())
	case hasLim && limV < boundV:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, bound.String(), lim.String())
	}
	return nil
}

func checkMax(kind string, name corev1.ResourceName, bound resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	reqV, limV, boundV := inCommonUnit(req, lim, bound)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, bound.String())
	case limV > boundV:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, bound.String(), lim.String())
	case hasReq && reqV > boundV:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, bound.String(), req.String())
	}
	return nil
}

// checkMaxRequest is checkMax for objects that have requests only.
func checkMaxRequest(kind string, name corev1.ResourceName, bound resource.Quantity, requests corev1.ResourceList) error {
	req, hasReq := requests[name]
	reqV, _, boundV := inCommonUnit(req, resource.Quantity{}, bound)
	switch {
	case !hasReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, kind, bound.String())
	case reqV > boundV:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, bound.String(), req.String())
	}
	return nil
}

func checkRatio(kind string, name corev1.ResourceName, bound resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	reqV, limV, _ := inCommonUnit(req, lim, bound)
	if !hasReq || reqV == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, bound.String())
	}
	if !hasLim || limV == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, bound.String())
	}
	ratio := float64(limV) / float64(reqV)
	observed, allowed := ratio, float64(bound.Value())
	if bound.Value() <= resource.MaxMilliValue {
		observed, allowed = ratio*1000, float64(bound.MilliValue())
	}
	if observed > allowed {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, bound.String(), ratio)
	}
	return nil
}
