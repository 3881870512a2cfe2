package metricsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/clock"
)

// GroupVersion is the API's group-version.
var GroupVersion = metricsv1beta1.SchemeGroupVersion

// Prefix is the path the API is served under.
const Prefix = "/apis/metrics.k8s.io/v1beta1"

// Config configures the API. Every field documents its default.
type Config struct {
	// MetricResolution is how often every node is scraped
	// (metrics-server's --metric-resolution). Default 15s.
	MetricResolution time.Duration
	// ScrapeTimeout bounds one node's scrape. Default 10s.
	ScrapeTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.MetricResolution == 0 {
		c.MetricResolution = 15 * time.Second
	}
	if c.ScrapeTimeout == 0 {
		c.ScrapeTimeout = 10 * time.Second
	}
}

// Validate reports bad settings.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	if c.MetricResolution < time.Second {
		errs = append(errs, fmt.Errorf("metric resolution %v: must be at least 1s", c.MetricResolution))
	}
	if c.ScrapeTimeout < 0 {
		errs = append(errs, fmt.Errorf("scrape timeout %v: must not be negative", c.ScrapeTimeout))
	}
	return errors.Join(errs...)
}

// API serves metrics.k8s.io/v1beta1 and scrapes the nodes. Safe for
// concurrent use.
type API struct {
	cfg   Config
	nodes corelisters.NodeLister
	pods  corelisters.PodLister
	store *storage
	clock clock.WithTicker
}

// New builds the API over the apiserver's node and pod listers. It
// starts nothing.
func New(cfg Config, nodes corelisters.NodeLister, pods corelisters.PodLister) (*API, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if nodes == nil || pods == nil {
		return nil, errors.New("metrics API: node and pod listers are required")
	}
	return &API{cfg: cfg, nodes: nodes, pods: pods, store: newStorage(), clock: clock.RealClock{}}, nil
}

// Run scrapes every node each metric resolution, through client's
// nodes/proxy, until ctx ends. It returns nil.
func (a *API) Run(ctx context.Context, client kubernetes.Interface) error {
	logger := klog.FromContext(ctx).WithName("metrics-api")
	ctx = klog.NewContext(ctx, logger)
	t := a.clock.NewTicker(a.cfg.MetricResolution)
	defer t.Stop()
	for {
		a.scrapeAll(ctx, client)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// scrapeAll scrapes the nodes concurrently.
func (a *API) scrapeAll(ctx context.Context, client kubernetes.Interface) {
	logger := klog.FromContext(ctx)
	nodes, err := a.nodes.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Cannot list nodes to scrape")
		return
	}
	keep := map[string]bool{}
	var wg sync.WaitGroup
	for _, n := range nodes {
		keep[n.Name] = true
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, a.cfg.ScrapeTimeout)
			defer cancel()
			at := a.clock.Now()
			body, err := client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", name, "proxy", "metrics", "resource").DoRaw(sctx)
			if err != nil {
				logger.V(2).Info("Failed to scrape node", "node", name, "err", err)
				return
			}
			b, err := decode(body, at)
			if err != nil {
				logger.V(2).Info("Failed to decode node metrics", "node", name, "err", err)
				return
			}
			a.store.store(name, b, at)
		}(n.Name)
	}
	wg.Wait()
	a.store.forget(keep)
}

// ServeHTTP serves GET under Prefix: the resource list, nodes, and pods
// of all or one namespace, each listed (label and field selectors) or
// read by name.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeStatus(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: GroupVersion.Group}, r.Method))
		return
	}
	if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
		writeStatus(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: GroupVersion.Group}, "watch"))
		return
	}
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, Prefix), "/")
	var parts []string
	if rest != "" {
		parts = strings.Split(rest, "/")
	}
	switch {
	case len(parts) == 0:
		writeJSON(w, http.StatusOK, resourceList())
	case parts[0] == "nodes" && len(parts) <= 2:
		name := ""
		if len(parts) == 2 {
			name = parts[1]
		}
		a.serveNodes(w, r, name)
	case parts[0] == "pods" && len(parts) == 1:
		a.servePods(w, r, "", "")
	case parts[0] == "namespaces" && len(parts) >= 3 && parts[2] == "pods" && len(parts) <= 4:
		name := ""
		if len(parts) == 4 {
			name = parts[3]
		}
		a.servePods(w, r, parts[1], name)
	default:
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: GroupVersion.Group}, rest))
	}
}

// resourceList is the group-version's discovery document.
func resourceList() *metav1.APIResourceList {
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: GroupVersion.String(),
		APIResources: Resources(),
	}
}

// Resources are the API's resources, for discovery.
func Resources() []metav1.APIResource {
	return []metav1.APIResource{
		{Name: "nodes", Kind: "NodeMetrics", Namespaced: false, Verbs: metav1.Verbs{"get", "list"}},
		{Name: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: metav1.Verbs{"get", "list"}},
	}
}

// selectors parses the request's label and field selectors; the field
// selector may name metadata.name and, for pods, metadata.namespace.
func selectors(r *http.Request, namespaced bool) (labels.Selector, fields.Selector, error) {
	q := r.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("labelSelector: %v", err))
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector: %v", err))
	}
	for _, req := range fs.Requirements() {
		if req.Field != "metadata.name" && !(namespaced && req.Field == "metadata.namespace") {
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector: field label %q is not supported", req.Field))
		}
	}
	return ls, fs, nil
}

func (a *API) serveNodes(w http.ResponseWriter, r *http.Request, name string) {
	gr := schema.GroupResource{Group: GroupVersion.Group, Resource: "nodes"}
	if name != "" {
		node, err := a.nodes.Get(name)
		if err != nil {
			writeStatus(w, apierrors.NewNotFound(gr, name))
			return
		}
		ms := a.store.nodeMetrics([]*corev1.Node{node})
		if len(ms) == 0 {
			writeStatus(w, apierrors.NewNotFound(gr, name))
			return
		}
		m := ms[0]
		m.TypeMeta = metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: GroupVersion.String()}
		writeJSON(w, http.StatusOK, &m)
		return
	}
	ls, fs, err := selectors(r, false)
	if err != nil {
		writeStatus(w, err)
		return
	}
	all, err := a.nodes.List(ls)
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	var nodes []*corev1.Node
	for _, n := range all {
		if fs.Matches(fields.Set{"metadata.name": n.Name}) {
			nodes = append(nodes, n)
		}
	}
	list := &metricsv1beta1.NodeMetricsList{
		TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: GroupVersion.String()},
		Items:    a.store.nodeMetrics(nodes),
	}
	writeJSON(w, http.StatusOK, list)
}

func (a *API) servePods(w http.ResponseWriter, r *http.Request, namespace, name string) {
	gr := schema.GroupResource{Group: GroupVersion.Group, Resource: "pods"}
	if name != "" {
		pod, err := a.pods.Pods(namespace).Get(name)
		if err != nil {
			writeStatus(w, apierrors.NewNotFound(gr, name))
			return
		}
		ms := a.store.podMetrics([]*corev1.Pod{pod})
		if len(ms) == 0 {
			writeStatus(w, apierrors.NewNotFound(gr, name))
			return
		}
		m := ms[0]
		m.TypeMeta = metav1.TypeMeta{Kind: "PodMetrics", APIVersion: GroupVersion.String()}
		writeJSON(w, http.StatusOK, &m)
		return
	}
	ls, fs, err := selectors(r, true)
	if err != nil {
		writeStatus(w, err)
		return
	}
	var all []*corev1.Pod
	if namespace == "" {
		all, err = a.pods.List(ls)
	} else {
		all, err = a.pods.Pods(namespace).List(ls)
	}
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	var pods []*corev1.Pod
	for _, p := range all {
		if fs.Matches(fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace}) {
			pods = append(pods, p)
		}
	}
	list := &metricsv1beta1.PodMetricsList{
		TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: GroupVersion.String()},
		Items:    a.store.podMetrics(pods),
	}
	writeJSON(w, http.StatusOK, list)
}

func writeJSON(w http.ResponseWriter, code int, obj any) {
	b, err := json.Marshal(obj)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// writeStatus writes an API error as a Status object.
func writeStatus(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(w, int(st.Code), &st)
}
