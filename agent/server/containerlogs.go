package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/agent/logs"
)

// servePods answers the node's pods as a v1 PodList.
func (s *Server) servePods(w http.ResponseWriter, r *http.Request) {
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, p := range s.pods.GetPods() {
		item := *p
		item.TypeMeta = metav1.TypeMeta{}
		list.Items = append(list.Items, item)
	}
	if list.Items == nil {
		list.Items = []corev1.Pod{}
	}
	data, err := json.Marshal(&list)
	if err != nil {
		writeText(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(data); err != nil {
		klog.FromContext(r.Context()).V(4).Info("Writing the pod list failed", "err", err)
	}
}

// getPod finds a pod of the node by namespace and name.
func (s *Server) getPod(namespace, name string) (*corev1.Pod, bool) {
	for _, p := range s.pods.GetPods() {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// containerSpec finds a container of the pod by name, among app, init
// and ephemeral containers.
func containerSpec(pod *corev1.Pod, name string) (tty bool, ok bool) {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return c.TTY, true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return c.TTY, true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return c.TTY, true
		}
	}
	return false, false
}

// serveContainerLogs streams a container's log.
func (s *Server) serveContainerLogs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	namespace, podName, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")

	query := r.URL.Query()
	// "tail" is the older name of tailLines; "all" means no limit.
	if tail := query.Get("tail"); tail != "" {
		query.Set("tailLines", tail)
		if tail == "all" {
			query.Del("tailLines")
		}
	}
	opts, err := decodeLogOptions(query)
	if err != nil {
		writeText(w, http.StatusBadRequest, `{"message": "Unable to decode query."}`)
		return
	}
	if err := validateLogOptions(opts); err != nil {
		writeText(w, http.StatusUnprocessableEntity, `{"message": "Invalid request."}`)
		return
	}

	pod, ok := s.getPod(namespace, podName)
	if !ok {
		writeText(w, http.StatusNotFound, fmt.Sprintf("pod %q does not exist", podName))
		return
	}
	if _, ok := containerSpec(pod, container); !ok {
		writeText(w, http.StatusNotFound, fmt.Sprintf("container %q not found in pod %q", container, podName))
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeText(w, http.StatusInternalServerError, "streaming is not supported by this connection")
		return
	}

	fw := &flushWriter{w: w, f: flusher}
	var stdout, stderr io.Writer = fw, fw
	if opts.Stream != nil {
		switch *opts.Stream {
		case corev1.LogStreamStdout:
			stderr = nil
		case corev1.LogStreamStderr:
			stdout = nil
		}
	}

	id, err := s.logContainer(ctx, pod, container, opts.Previous)
	if err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	resp, err := s.runtime.ContainerStatus(ctx, id, false)
	if err != nil || resp.GetStatus() == nil {
		klog.FromContext(ctx).V(4).Info("Container status for logs failed", "containerID", id, "err", err)
		writeText(w, http.StatusBadRequest, fmt.Sprintf("unable to retrieve container logs for %s", id))
		return
	}
	path := resp.GetStatus().GetLogPath()
	if _, err := os.Stat(path); err != nil {
		writeText(w, http.StatusBadRequest, fmt.Sprintf("failed to open log file of container %s: %v", id, err))
		return
	}
	// Send the headers now: a follow may wait long for its first line.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	err = logs.ReadLogs(ctx, path, id, logs.NewOptions(opts, s.clock.Now()), s.runtime, stdout, stderr)
	if err != nil && !errors.Is(err, ctx.Err()) {
		klog.FromContext(ctx).V(2).Info("Container log stream ended early", "pod", klog.KObj(pod), "container", container, "err", err)
	}
}

// flushWriter sends every write to the client at once.
type flushWriter struct {
	w io.Writer
	f http.Flusher
}

func (fw *flushWriter) Write(p []byte) (int, error) {
	n, err := fw.w.Write(p)
	if err != nil {
		return n, err
	}
	fw.f.Flush()
	return n, nil
}

// decodeLogOptions reads PodLogOptions from a query, with the apiserver's
// rules: a boolean is true unless absent, "false" (any case) or "0".
func decodeLogOptions(q url.Values) (*corev1.PodLogOptions, error) {
	o := &corev1.PodLogOptions{}
	boolean := func(name string) bool {
		v, ok := q[name]
		if !ok || len(v) == 0 {
			return false
		}
		return v[0] != "0" && !strings.EqualFold(v[0], "false")
	}
	integer := func(name string) (*int64, error) {
		v := q.Get(name)
		if _, ok := q[name]; !ok {
			return nil, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &n, nil
	}
	o.Container = q.Get("container")
	o.Follow = boolean("follow")
	o.Previous = boolean("previous")
	o.Timestamps = boolean("timestamps")
	o.InsecureSkipTLSVerifyBackend = boolean("insecureSkipTLSVerifyBackend")
	var err error
	if o.TailLines, err = integer("tailLines"); err != nil {
		return nil, err
	}
	if o.LimitBytes, err = integer("limitBytes"); err != nil {
		return nil, err
	}
	if o.SinceSeconds, err = integer("sinceSeconds"); err != nil {
		return nil, err
	}
	if _, ok := q["sinceTime"]; ok {
		t, err := time.Parse(time.RFC3339, q.Get("sinceTime"))
		if err != nil {
			return nil, fmt.Errorf("sinceTime: %w", err)
		}
		o.SinceTime = &metav1.Time{Time: t}
	}
	if _, ok := q["stream"]; ok {
		stream := q.Get("stream")
		o.Stream = &stream
	}
	return o, nil
}

// validateLogOptions applies the API's checks on log options.
func validateLogOptions(o *corev1.PodLogOptions) error {
	var errs []error
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, errors.New("tailLines: must be greater than or equal to 0"))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, errors.New("limitBytes: must be greater than 0"))
	}
	if o.SinceSeconds != nil && o.SinceTime != nil {
		errs = append(errs, errors.New("at most one of sinceTime or sinceSeconds may be specified"))
	}
	if o.SinceSeconds != nil && *o.SinceSeconds < 1 {
		errs = append(errs, errors.New("sinceSeconds: must be greater than 0"))
	}
	if o.Stream != nil {
		switch *o.Stream {
		case corev1.LogStreamAll:
		case corev1.LogStreamStdout, corev1.LogStreamStderr:
			if o.TailLines != nil {
				errs = append(errs, errors.New("tailLines and a specific stream are mutually exclusive"))
			}
		default:
			errs = append(errs, fmt.Errorf("stream: unsupported value %q", *o.Stream))
		}
	}
	return errors.Join(errs...)
}
