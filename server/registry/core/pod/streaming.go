package pod

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"
	"k8s.io/apiserver/pkg/registry/rest"
	translator "k8s.io/apiserver/pkg/util/proxy"

	"github.com/k1s/k1s/server/registry/core/node"
)

// Streams reaches the agent of a pod's node for pods/log, exec, attach and
// portforward.
type Streams struct {
	Pods  *genericregistry.Store
	Conn  *node.Connection
	Authz authorizer.Authorizer
}

// agentURL finds the pod, picks the container and builds the agent URL
// /<verb>/<namespace>/<pod>[/<container>].
func (s *Streams) agentURL(ctx context.Context, name, container, verb string, withContainer bool) (*url.URL, error) {
	obj, err := s.Pods.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	if withContainer {
		if container, err = pickContainer(pod, container); err != nil {
			return nil, err
		}
	}
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name))
	}
	loc, err := s.Conn.Location(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	loc.Path = "/" + verb + "/" + pod.Namespace + "/" + pod.Name
	if withContainer {
		loc.Path += "/" + container
	}
	return loc, nil
}

// pickContainer validates the requested container, or picks the only one.
func pickContainer(pod *corev1.Pod, container string) (string, error) {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	if container == "" {
		if len(pod.Spec.Containers) == 1 {
			return pod.Spec.Containers[0].Name, nil
		}
		var regular []string
		for _, c := range pod.Spec.Containers {
			regular = append(regular, c.Name)
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, regular))
	}
	for _, n := range names {
		if n == container {
			return container, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
}

// LogREST serves pods/log.
type LogREST struct{ *Streams }

var _ rest.GetterWithOptions = &LogREST{}

// New returns an empty Pod.
func (r *LogREST) New() runtime.Object { return &corev1.Pod{} }

// Destroy does nothing.
func (r *LogREST) Destroy() {}

// ProducesMIMETypes is text/plain.
func (r *LogREST) ProducesMIMETypes(string) []string { return []string{"text/plain"} }

// ProducesObject is a string.
func (r *LogREST) ProducesObject(string) any { return "" }

// NewGetOptions takes PodLogOptions.
func (r *LogREST) NewGetOptions() (runtime.Object, bool, string) {
	return &corev1.PodLogOptions{}, false, ""
}

// Get streams the container's log from the agent.
func (r *LogREST) Get(ctx context.Context, name string, opts runtime.Object) (runtime.Object, error) {
	o, ok := opts.(*corev1.PodLogOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %T", opts)
	}
	if err := validateLogOptions(o); err != nil {
		return nil, err
	}
	loc, err := r.agentURL(ctx, name, o.Container, "containerLogs", true)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if o.Follow {
		q.Set("follow", "true")
	}
	if o.Previous {
		q.Set("previous", "true")
	}
	if o.Timestamps {
		q.Set("timestamps", "true")
	}
	if o.SinceSeconds != nil {
		q.Set("sinceSeconds", strconv.FormatInt(*o.SinceSeconds, 10))
	}
	if o.SinceTime != nil {
		q.Set("sinceTime", o.SinceTime.Format(time.RFC3339))
	}
	if o.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*o.TailLines, 10))
	}
	if o.LimitBytes != nil {
		q.Set("limitBytes", strconv.FormatInt(*o.LimitBytes, 10))
	}
	if o.Stream != nil {
		q.Set("stream", *o.Stream)
	}
	loc.RawQuery = q.Encode()
	return &genericrest.LocationStreamer{
		Location:        loc,
		Transport:       r.Conn.Transport,
		ContentType:     "text/plain",
		Flush:           o.Follow,
		ResponseChecker: genericrest.NewGenericHttpResponseChecker(corev1.Resource("pods/log"), name),
		RedirectChecker: genericrest.PreventRedirects,
	}, nil
}

func validateLogOptions(o *corev1.PodLogOptions) error {
	var msgs []string
	if o.SinceSeconds != nil && o.SinceTime != nil {
		msgs = append(msgs, "at most one of sinceTime or sinceSeconds may be specified")
	}
	if o.SinceSeconds != nil && *o.SinceSeconds < 1 {
		msgs = append(msgs, "sinceSeconds must be greater than 0")
	}
	if o.TailLines != nil && *o.TailLines < 0 {
		msgs = append(msgs, "tailLines must be greater than or equal to 0")
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		msgs = append(msgs, "limitBytes must be greater than 0")
	}
	if o.Stream != nil && *o.Stream != corev1.LogStreamStdout && *o.Stream != corev1.LogStreamStderr && *o.Stream != corev1.LogStreamAll {
		msgs = append(msgs, "stream must be Stdout, Stderr or All")
	}
	if len(msgs) > 0 {
		return apierrors.NewBadRequest(strings.Join(msgs, "; "))
	}
	return nil
}

var upgradeMethods = []string{"GET", "POST"}

// ExecREST serves pods/exec.
type ExecREST struct{ *Streams }

// AttachREST serves pods/attach.
type AttachREST struct{ *Streams }

// PortForwardREST serves pods/portforward.
type PortForwardREST struct{ *Streams }

var (
	_ rest.Connecter = &ExecREST{}
	_ rest.Connecter = &AttachREST{}
	_ rest.Connecter = &PortForwardREST{}
)

func (r *ExecREST) New() runtime.Object        { return &corev1.PodExecOptions{} }
func (r *ExecREST) Destroy()                   {}
func (r *ExecREST) ConnectMethods() []string   { return upgradeMethods }
func (r *AttachREST) New() runtime.Object      { return &corev1.PodAttachOptions{} }
func (r *AttachREST) Destroy()                 {}
func (r *AttachREST) ConnectMethods() []string { return upgradeMethods }

func (r *PortForwardREST) New() runtime.Object      { return &corev1.PodPortForwardOptions{} }
func (r *PortForwardREST) Destroy()                 {}
func (r *PortForwardREST) ConnectMethods() []string { return upgradeMethods }

// NewConnectOptions takes PodExecOptions.
func (r *ExecREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodExecOptions{}, false, ""
}

// NewConnectOptions takes PodAttachOptions.
func (r *AttachREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodAttachOptions{}, false, ""
}

// NewConnectOptions takes PodPortForwardOptions.
func (r *PortForwardREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodPortForwardOptions{}, false, ""
}

func streamQuery(stdin, stdout, stderr, tty bool, command []string) string {
	q := url.Values{}
	set := func(k string, v bool) {
		if v {
			q.Set(k, "1")
		}
	}
	set("input", stdin)
	set("output", stdout)
	set("error", stderr)
	set("tty", tty)
	for _, c := range command {
		q.Add("command", c)
	}
	return q.Encode()
}

// Connect proxies an exec stream to the agent; WebSocket (v5) clients are
// translated to SPDY here, as upstream does.
func (r *ExecREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	if err := r.authorizeCreate(ctx); err != nil {
		return nil, err
	}
	o, ok := opts.(*corev1.PodExecOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %T", opts)
	}
	if len(o.Command) == 0 {
		return nil, apierrors.NewBadRequest("you must specify at least 1 command")
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return nil, apierrors.NewBadRequest("you must specify at least one of stdin, stdout, stderr")
	}
	loc, err := r.agentURL(ctx, name, o.Container, "exec", true)
	if err != nil {
		return nil, err
	}
	loc.RawQuery = streamQuery(o.Stdin, o.Stdout, o.Stderr, o.TTY, o.Command)
	return r.streamHandler(loc, responder, translator.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY}), nil
}

// Connect proxies an attach stream to the agent.
func (r *AttachREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	if err := r.authorizeCreate(ctx); err != nil {
		return nil, err
	}
	o, ok := opts.(*corev1.PodAttachOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %T", opts)
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return nil, apierrors.NewBadRequest("you must specify at least one of stdin, stdout, stderr")
	}
	loc, err := r.agentURL(ctx, name, o.Container, "attach", true)
	if err != nil {
		return nil, err
	}
	loc.RawQuery = streamQuery(o.Stdin, o.Stdout, o.Stderr, o.TTY, nil)
	return r.streamHandler(loc, responder, translator.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY}), nil
}

// Connect proxies a port-forward stream; WebSocket clients are tunnelled.
func (r *PortForwardREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	if err := r.authorizeCreate(ctx); err != nil {
		return nil, err
	}
	o, ok := opts.(*corev1.PodPortForwardOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %T", opts)
	}
	loc, err := r.agentURL(ctx, name, "", "portForward", false)
	if err != nil {
		return nil, err
	}
	if len(o.Ports) > 0 {
		q := url.Values{}
		for _, p := range o.Ports {
			q.Add("port", strconv.Itoa(int(p)))
		}
		loc.RawQuery = q.Encode()
	}
	h := proxy.NewUpgradeAwareHandler(loc, r.Conn.Transport, false, true, proxy.NewErrorResponder(responder))
	return translator.NewTranslatingHandler(h, translator.NewTunnelingHandler(h), wsstream.IsWebSocketRequestWithTunnelingProtocol), nil
}

func (s *Streams) streamHandler(loc *url.URL, responder rest.Responder, opts translator.Options) http.Handler {
	h := proxy.NewUpgradeAwareHandler(loc, s.Conn.Transport, false, true, proxy.NewErrorResponder(responder))
	st := translator.NewStreamTranslatorHandler(loc, s.Conn.Transport, 0, opts)
	return translator.NewTranslatingHandler(h, st, wsstream.IsWebSocketRequestWithStreamCloseProtocol)
}

// authorizeCreate requires the create verb on the subresource even for a
// WebSocket upgrade (a GET), as upstream does since 1.35.
func (s *Streams) authorizeCreate(ctx context.Context) error {
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok {
		return apierrors.NewInternalError(errors.New("no request info in context"))
	}
	if info.Verb == "create" || s.Authz == nil {
		return nil
	}
	attrs, err := filters.GetAuthorizerAttributes(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("authorizer attributes: %w", err))
	}
	decision, reason, err := s.Authz.Authorize(ctx, createVerb{attrs})
	if err != nil {
		return err
	}
	if decision != authorizer.DecisionAllow {
		return apierrors.NewForbidden(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Name, errors.New(reason))
	}
	return nil
}

type createVerb struct{ authorizer.Attributes }

func (createVerb) GetVerb() string { return "create" }
