package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// fakeStats serves a fixed summary; onlyCPU records which call came.
type fakeStats struct {
	err     error
	onlyCPU bool
	forced  bool
}

func (f *fakeStats) Get(_ context.Context, update bool) (*statsapi.Summary, error) {
	f.forced = update
	if f.err != nil {
		return nil, f.err
	}
	used := uint64(5)
	return &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "node-1", Fs: &statsapi.FsStats{UsedBytes: &used}}}, nil
}

func (f *fakeStats) GetCPUAndMemoryStats(context.Context) (*statsapi.Summary, error) {
	f.onlyCPU = true
	return &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "node-1"}}, nil
}

// subresourceAuthz allows user u only the node subresource named u.
var subresourceAuthz = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == a.GetSubresource() {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

func statsServer(t *testing.T, st StatsProvider) *httptest.Server {
	t.Helper()
	cfg := Config{NodeName: "node-1", TLSCertFile: "unused", TLSPrivateKeyFile: "unused"}
	cfg.setDefaults()
	text := func(body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) })
	}
	s, err := newServer(cfg, Deps{
		Pods:            PodsFunc(func() []*corev1.Pod { return nil }),
		Runtime:         &fakeRuntime{},
		Stats:           st,
		MetricsResource: text("resource\n"),
		MetricsCadvisor: text("cadvisor\n"),
		MetricsProbes:   text("probes\n"),
	}, tokenAuth, subresourceAuthz)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.secureHandler())
	t.Cleanup(ts.Close)
	return ts
}

func TestStatsEndpoints(t *testing.T) {
	st := &fakeStats{}
	ts := statsServer(t, st)
	for _, tc := range []struct {
		path, user string
		code       int
		body       string
	}{
		{"/stats/summary", "stats", 200, `"usedBytes":5`},
		{"/stats/summary", "metrics", 403, "subresource(s)=[stats]"},
		{"/stats/summary", "proxy", 403, ""},
		{"/stats/summary?only_cpu_and_memory=true", "stats", 200, `"nodeName":"node-1"`},
		{"/stats/other", "stats", 404, ""},
		{"/metrics/resource", "metrics", 200, "resource"},
		{"/metrics/cadvisor", "metrics", 200, "cadvisor"},
		{"/metrics/probes", "metrics", 200, "probes"},
		{"/metrics/resource", "stats", 403, "subresource(s)=[metrics]"},
	} {
		code, body := do(t, http.MethodGet, ts.URL+tc.path, tc.user)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s as %s: %d %q, want %d with %q", tc.path, tc.user, code, body, tc.code, tc.body)
		}
	}
	if !st.onlyCPU || st.forced {
		t.Errorf("only_cpu_and_memory not honoured (onlyCPU %v) or the summary was forced (%v)", st.onlyCPU, st.forced)
	}
	code, body := do(t, http.MethodGet, ts.URL+"/stats/summary?only_cpu_and_memory=true", "stats")
	var s statsapi.Summary
	if code != 200 || json.Unmarshal([]byte(body), &s) != nil || s.Node.Fs != nil {
		t.Errorf("only_cpu_and_memory: %d %s", code, body)
	}

	failing := statsServer(t, &fakeStats{err: errors.New("no cgroups")})
	if code, body := do(t, http.MethodGet, failing.URL+"/stats/summary", "stats"); code != 500 || !strings.Contains(body, "no cgroups") {
		t.Errorf("failing provider: %d %q", code, body)
	}
	off := statsServer(t, nil)
	if code, _ := do(t, http.MethodGet, off.URL+"/stats/summary", "stats"); code != http.StatusNotImplemented {
		t.Errorf("without a provider: %d, want 501", code)
	}
}
