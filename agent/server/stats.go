package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// StatsProvider is the node's summary provider (agent/stats). Safe for
// concurrent use.
type StatsProvider interface {
	// Get returns the summary, collected anew when updateStats is set.
	Get(ctx context.Context, updateStats bool) (*statsapi.Summary, error)
	// GetCPUAndMemoryStats returns the summary with CPU and memory only.
	GetCPUAndMemoryStats(ctx context.Context) (*statsapi.Summary, error)
}

// Paths of the metrics the kubelet serves besides /metrics.
const (
	statsSummaryPath    = "/stats/summary"
	metricsResourcePath = "/metrics/resource"
	metricsCadvisorPath = "/metrics/cadvisor"
	metricsProbesPath   = "/metrics/probes"
)

// installStats serves /stats/summary and the metrics endpoints that are
// configured; without a stats provider /stats/ answers 501 as before.
func (s *Server) installStats(mux *http.ServeMux) {
	if s.stats == nil {
		mux.HandleFunc(statsPath, func(w http.ResponseWriter, _ *http.Request) {
			writeText(w, http.StatusNotImplemented, "stats are not enabled on this agent\n")
		})
	} else {
		mux.HandleFunc("GET "+statsSummaryPath, s.serveSummary)
		mux.HandleFunc(statsPath, func(w http.ResponseWriter, _ *http.Request) {
			writeText(w, http.StatusNotFound, "404 page not found\n")
		})
	}
	for p, h := range map[string]http.Handler{
		metricsResourcePath: s.metricsResource,
		metricsCadvisorPath: s.metricsCadvisor,
		metricsProbesPath:   s.metricsProbes,
	} {
		if h != nil {
			mux.Handle("GET "+p, h)
		}
	}
}

// serveSummary answers /stats/summary as the kubelet does: the cached
// summary, or CPU and memory only with ?only_cpu_and_memory=true.
func (s *Server) serveSummary(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		writeText(w, http.StatusBadRequest, fmt.Sprintf("parse form: %v\n", err))
		return
	}
	var summary *statsapi.Summary
	var err error
	if v, ok := r.Form["only_cpu_and_memory"]; ok && len(v) == 1 && v[0] == "true" {
		summary, err = s.stats.GetCPUAndMemoryStats(ctx)
	} else {
		summary, err = s.stats.Get(ctx, false)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to build the stats summary")
		writeText(w, http.StatusInternalServerError, fmt.Sprintf("Internal Error: %v\n", err))
		return
	}
	b, err := json.Marshal(summary)
	if err != nil {
		writeText(w, http.StatusInternalServerError, fmt.Sprintf("Internal Error: %v\n", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
