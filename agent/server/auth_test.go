package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/healthz"
)

func TestRequestAttributes(t *testing.T) {
	tests := []struct {
		method, path string
		verb         string
		subresources []string
	}{
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", "get", []string{"pods", "proxy"}},
		{"GET", "/podsx", "get", []string{"proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/healthz/ping", "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"POST", "/checkpoint/ns/pod/c", "create", []string{"checkpoint"}},
		{"GET", "/statusz", "get", []string{"statusz"}},
		{"GET", "/flagz", "get", []string{"configz"}},
		{"GET", "/containerLogs/default/web/app", "get", []string{"proxy"}},
		{"POST", "/exec/default/web/app", "create", []string{"proxy"}},
		{"GET", "/exec/default/web/app", "get", []string{"proxy"}},
		{"POST", "/attach/default/web/app", "create", []string{"proxy"}},
		{"POST", "/portForward/default/web", "create", []string{"proxy"}},
		{"PUT", "/anything", "update", []string{"proxy"}},
		{"PATCH", "/anything", "patch", []string{"proxy"}},
		{"DELETE", "/anything", "delete", []string{"proxy"}},
		{"HEAD", "/anything", "", []string{"proxy"}},
		{"GET", "/", "get", []string{"proxy"}},
	}
	u := &user.DefaultInfo{Name: "alice", Groups: []string{"devs"}}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, nil)
			attrs := RequestAttributes(u, r, "node-1")
			var subs []string
			for _, a := range attrs {
				subs = append(subs, a.GetSubresource())
				if a.GetUser() != u || a.GetVerb() != tt.verb || a.GetResource() != "nodes" || a.GetName() != "node-1" ||
					a.GetAPIGroup() != "" || a.GetAPIVersion() != "v1" || a.GetNamespace() != "" || !a.IsResourceRequest() || a.GetPath() != tt.path {
					t.Errorf("attributes %+v", a)
				}
			}
			if !slices.Equal(subs, tt.subresources) {
				t.Fatalf("subresources %v, want %v", subs, tt.subresources)
			}
		})
	}
}

func TestAuthFilter(t *testing.T) {
	// alice may read pods through the proxy subresource only; bob may do
	// nothing; carol's checks fail.
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		switch a.GetUser().GetName() {
		case "alice":
			if a.GetSubresource() == "proxy" || a.GetSubresource() == "metrics" {
				return authorizer.DecisionAllow, "", nil
			}
		case "carol":
			return authorizer.DecisionNoOpinion, "", errors.New("SubjectAccessReview failed")
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	pods := []*corev1.Pod{newPod("default", "web", "u1", "app")}
	_, ts := testServer(t, pods, &fakeRuntime{}, authz)

	tests := []struct {
		name     string
		method   string
		path     string
		token    string
		wantCode int
		wantBody string
	}{
		{name: "no credentials", method: "GET", path: "/pods", wantCode: 401, wantBody: "Unauthorized"},
		{name: "authentication error", method: "GET", path: "/pods", token: "error", wantCode: 401, wantBody: "Unauthorized"},
		{name: "no credentials on healthz", method: "GET", path: "/healthz", wantCode: 401, wantBody: "Unauthorized"},
		{name: "no credentials on an unknown path", method: "GET", path: "/nowhere", wantCode: 401, wantBody: "Unauthorized"},
		{name: "forbidden pods", method: "GET", path: "/pods", token: "bob", wantCode: 403,
			wantBody: "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"},
		{name: "forbidden exec", method: "POST", path: "/exec/default/web/app?command=ls&output=1", token: "bob", wantCode: 403,
			wantBody: "Forbidden (user=bob, verb=create, resource=nodes, subresource(s)=[proxy])\n"},
		{name: "forbidden stats", method: "GET", path: "/stats/summary", token: "alice", wantCode: 403,
			wantBody: "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[stats])\n"},
		{name: "authorization error", method: "GET", path: "/pods", token: "carol", wantCode: 500,
			wantBody: "Authorization error (user=carol, verb=get, resource=nodes, subresource=pods)"},
		{name: "proxy allows pods", method: "GET", path: "/pods", token: "alice", wantCode: 200},
		{name: "metrics", method: "GET", path: "/metrics", token: "alice", wantCode: 200, wantBody: "# metrics\n"},
		{name: "allowed healthz", method: "GET", path: "/healthz", token: "alice", wantCode: 200, wantBody: "ok"},
		{name: "allowed unknown path is not found", method: "GET", path: "/nowhere", token: "alice", wantCode: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(t, tt.method, ts.URL+tt.path, tt.token)
			if code != tt.wantCode {
				t.Fatalf("status %d (%q), want %d", code, body, tt.wantCode)
			}
			if tt.wantBody != "" && body != tt.wantBody {
				t.Fatalf("body %q, want %q", body, tt.wantBody)
			}
		})
	}
}

func TestReadOnlyAndHealthzHandlers(t *testing.T) {
	pods := []*corev1.Pod{newPod("default", "web", "u1", "app")}
	s, _ := testServer(t, pods, &fakeRuntime{}, allowAll)
	s.checks = append(s.checks, healthz.NamedCheck("syncloop", func(*http.Request) error { return errors.New("sync loop stuck") }))

	ro := httptest.NewServer(s.readOnlyHandler())
	defer ro.Close()
	hz := httptest.NewServer(s.healthzHandler())
	defer hz.Close()

	tests := []struct {
		name     string
		url      string
		wantCode int
	}{
		{name: "read-only pods without credentials", url: ro.URL + "/pods", wantCode: 200},
		{name: "read-only metrics", url: ro.URL + "/metrics", wantCode: 200},
		{name: "read-only stats", url: ro.URL + "/stats/summary", wantCode: 501},
		{name: "read-only has no logs", url: ro.URL + "/containerLogs/default/web/app", wantCode: 404},
		{name: "read-only has no exec", url: ro.URL + "/exec/default/web/app?output=1", wantCode: 404},
		{name: "failing check fails healthz", url: hz.URL + "/healthz", wantCode: 500},
		{name: "single check", url: hz.URL + "/healthz/ping", wantCode: 200},
		{name: "failing single check", url: hz.URL + "/healthz/syncloop", wantCode: 500},
		{name: "health listener serves only healthz", url: hz.URL + "/pods", wantCode: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := do(t, "GET", tt.url, ""); code != tt.wantCode {
				t.Fatalf("status %d (%q), want %d", code, body, tt.wantCode)
			}
		})
	}
}
