package server

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func criLine(sec int, stream, msg string) string {
	return fmt.Sprintf("%s %s F %s\n", t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), stream, msg)
}

func writeLog(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPods(t *testing.T) {
	pods := []*corev1.Pod{newPod("default", "web", "u1", "app"), newPod("kube-system", "dns", "u2", "coredns")}
	_, ts := testServer(t, pods, &fakeRuntime{}, allowAll)
	code, body := do(t, "GET", ts.URL+"/pods", "alice")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	var list corev1.PodList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 2 ||
		list.Items[0].Name != "web" || list.Items[1].Namespace != "kube-system" || list.Items[1].Spec.Containers[0].Name != "coredns" {
		t.Fatalf("pod list %+v", list)
	}

	_, ts = testServer(t, nil, &fakeRuntime{}, allowAll)
	if code, body := do(t, "GET", ts.URL+"/pods", "alice"); code != 200 || !strings.Contains(body, `"items":[]`) {
		t.Fatalf("empty pod list: %d %s", code, body)
	}
	if code, _ := do(t, "POST", ts.URL+"/pods", "alice"); code != 405 {
		t.Fatalf("POST /pods: %d, want 405", code)
	}
}

func TestContainerLogs(t *testing.T) {
	dir := t.TempDir()
	web := newPod("default", "web", "u1", "app", "sidecar")
	web.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
	crashy := newPod("default", "crashy", "u2", "app")
	static := newPod("kube-system", "etcd-node-1", "mirror-uid", "etcd")
	static.Annotations = map[string]string{mirrorAnnotation: "hash"}
	staticRun := newPod("kube-system", "etcd-node-1", "static-uid", "etcd")
	oldWeb := newPod("default", "web", "u0", "app")

	rt := &fakeRuntime{}
	rt.addContainer(web, "app", "app-0", 0, runtimeapi.ContainerState_CONTAINER_EXITED,
		writeLog(t, dir, "web/app/0.log", criLine(0, "stdout", "first run")))
	rt.addContainer(web, "app", "app-1", 1, runtimeapi.ContainerState_CONTAINER_EXITED,
		writeLog(t, dir, "web/app/1.log", criLine(10, "stdout", "second run"), criLine(11, "stderr", "oops"), criLine(12, "stdout", "done")))
	rt.addContainer(web, "setup", "setup-0", 0, runtimeapi.ContainerState_CONTAINER_EXITED,
		writeLog(t, dir, "web/setup/0.log", criLine(0, "stdout", "init")))
	// A deleted pod of the same name left a newer-looking attempt behind.
	rt.addContainer(oldWeb, "app", "old-app-7", 7, runtimeapi.ContainerState_CONTAINER_EXITED,
		writeLog(t, dir, "oldweb/app/7.log", criLine(0, "stdout", "old pod")))
	rt.addContainer(crashy, "app", "crashy-0", 0, runtimeapi.ContainerState_CONTAINER_EXITED,
		writeLog(t, dir, "crashy/app/0.log", criLine(0, "stderr", "crash 0")))
	rt.addContainer(crashy, "app", "crashy-1", 1, runtimeapi.ContainerState_CONTAINER_CREATED, filepath.Join(dir, "crashy/app/1.log"))
	rt.addContainer(staticRun, "etcd", "etcd-0", 0, runtimeapi.ContainerState_CONTAINER_EXITED,
		writeLog(t, dir, "etcd/0.log", criLine(0, "stderr", "etcd says hi")))
	lost := newPod("default", "lost", "u3", "app")
	rt.addContainer(lost, "app", "lost-0", 0, runtimeapi.ContainerState_CONTAINER_EXITED, filepath.Join(dir, "lost/0.log"))

	s, ts := testServer(t, []*corev1.Pod{web, crashy, static, lost}, rt, allowAll)
	s.clock = clocktesting.NewFakeClock(t0.Add(time.Minute))
	ts0 := func(sec int) string {
		return t0.Add(time.Duration(sec)*time.Second).Format("2006-01-02T15:04:05.000000000Z07:00") + " "
	}

	tests := []struct {
		name     string
		path     string
		wantCode int
		wantBody string
	}{
		{name: "newest attempt", path: "/containerLogs/default/web/app", wantCode: 200, wantBody: "second run\noops\ndone\n"},
		{name: "previous attempt", path: "/containerLogs/default/web/app?previous=true", wantCode: 200, wantBody: "first run\n"},
		{name: "previous=false", path: "/containerLogs/default/web/app?previous=false", wantCode: 200, wantBody: "second run\noops\ndone\n"},
		{name: "init container", path: "/containerLogs/default/web/setup", wantCode: 200, wantBody: "init\n"},
		{name: "tailLines", path: "/containerLogs/default/web/app?tailLines=1", wantCode: 200, wantBody: "done\n"},
		{name: "legacy tail", path: "/containerLogs/default/web/app?tail=2", wantCode: 200, wantBody: "oops\ndone\n"},
		{name: "legacy tail all", path: "/containerLogs/default/web/app?tail=all", wantCode: 200, wantBody: "second run\noops\ndone\n"},
		{name: "timestamps", path: "/containerLogs/default/web/app?timestamps=true&tailLines=1", wantCode: 200, wantBody: ts0(12) + "done\n"},
		{name: "limitBytes", path: "/containerLogs/default/web/app?limitBytes=4", wantCode: 200, wantBody: "seco"},
		{name: "sinceTime", path: "/containerLogs/default/web/app?sinceTime=2024-01-01T00:00:11Z", wantCode: 200, wantBody: "oops\ndone\n"},
		{name: "sinceSeconds", path: "/containerLogs/default/web/app?sinceSeconds=49", wantCode: 200, wantBody: "oops\ndone\n"},
		{name: "stdout stream", path: "/containerLogs/default/web/app?stream=Stdout", wantCode: 200, wantBody: "second run\ndone\n"},
		{name: "stderr stream", path: "/containerLogs/default/web/app?stream=Stderr", wantCode: 200, wantBody: "oops\n"},
		{name: "all streams", path: "/containerLogs/default/web/app?stream=All&tailLines=1", wantCode: 200, wantBody: "done\n"},
		{name: "follow of an exited container ends", path: "/containerLogs/default/web/app?follow=true", wantCode: 200, wantBody: "second run\noops\ndone\n"},
		{name: "never-started attempt falls back to the one before", path: "/containerLogs/default/crashy/app", wantCode: 200, wantBody: "crash 0\n"},
		{name: "previous of a never-started attempt", path: "/containerLogs/default/crashy/app?previous=1", wantCode: 200, wantBody: "crash 0\n"},
		{name: "mirror pod finds the static pod's containers", path: "/containerLogs/kube-system/etcd-node-1/etcd", wantCode: 200, wantBody: "etcd says hi\n"},

		{name: "unknown pod", path: "/containerLogs/default/nope/app", wantCode: 404, wantBody: `pod "nope" does not exist`},
		{name: "pod in another namespace", path: "/containerLogs/other/web/app", wantCode: 404, wantBody: `pod "web" does not exist`},
		{name: "unknown container", path: "/containerLogs/default/web/nope", wantCode: 404, wantBody: `container "nope" not found in pod "web"`},
		{name: "container that never ran", path: "/containerLogs/default/web/sidecar", wantCode: 400,
			wantBody: `container "sidecar" in pod "web" is waiting to start - no logs yet`},
		{name: "no previous attempt", path: "/containerLogs/default/web/setup?previous=true", wantCode: 400,
			wantBody: `previous terminated container "setup" in pod "web" not found`},
		{name: "log file gone", path: "/containerLogs/default/lost/app", wantCode: 400, wantBody: "failed to open log file of container lost-0"},
		{name: "undecodable tailLines", path: "/containerLogs/default/web/app?tailLines=ten", wantCode: 400, wantBody: `{"message": "Unable to decode query."}`},
		{name: "undecodable sinceTime", path: "/containerLogs/default/web/app?sinceTime=yesterday", wantCode: 400, wantBody: `{"message": "Unable to decode query."}`},
		{name: "negative tailLines", path: "/containerLogs/default/web/app?tailLines=-1", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "zero limitBytes", path: "/containerLogs/default/web/app?limitBytes=0", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "zero sinceSeconds", path: "/containerLogs/default/web/app?sinceSeconds=0", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "both since bounds", path: "/containerLogs/default/web/app?sinceSeconds=5&sinceTime=2024-01-01T00:00:11Z", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "unknown stream", path: "/containerLogs/default/web/app?stream=Stdin", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
		{name: "stream with tail", path: "/containerLogs/default/web/app?stream=Stdout&tailLines=1", wantCode: 422, wantBody: `{"message": "Invalid request."}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(t, "GET", ts.URL+tt.path, "alice")
			if code != tt.wantCode {
				t.Fatalf("status %d (%q), want %d", code, body, tt.wantCode)
			}
			if tt.wantCode == 200 && body != tt.wantBody || tt.wantCode != 200 && !strings.Contains(body, tt.wantBody) {
				t.Fatalf("body %q, want %q", body, tt.wantBody)
			}
		})
	}
	if code, _ := do(t, "POST", ts.URL+"/containerLogs/default/web/app", "alice"); code != 405 {
		t.Fatalf("POST containerLogs: %d, want 405", code)
	}
}

func TestDecodeLogOptions(t *testing.T) {
	tests := []struct {
		query string
		check func(*corev1.PodLogOptions) bool
	}{
		{"follow=true&previous=1&timestamps=yes", func(o *corev1.PodLogOptions) bool { return o.Follow && o.Previous && o.Timestamps }},
		{"follow=false&previous=0&timestamps=FALSE", func(o *corev1.PodLogOptions) bool { return !o.Follow && !o.Previous && !o.Timestamps }},
		{"follow=", func(o *corev1.PodLogOptions) bool { return o.Follow }},
		{"tailLines=5&limitBytes=7&sinceSeconds=9", func(o *corev1.PodLogOptions) bool {
			return *o.TailLines == 5 && *o.LimitBytes == 7 && *o.SinceSeconds == 9 && o.SinceTime == nil
		}},
		{"sinceTime=2024-01-01T00:00:11Z", func(o *corev1.PodLogOptions) bool { return o.SinceTime.Time.Equal(t0.Add(11 * time.Second)) }},
		{"stream=Stderr", func(o *corev1.PodLogOptions) bool { return *o.Stream == "Stderr" }},
		{"", func(o *corev1.PodLogOptions) bool {
			return o.TailLines == nil && o.LimitBytes == nil && o.SinceSeconds == nil && o.SinceTime == nil && o.Stream == nil && !o.Follow
		}},
	}
	for _, tt := range tests {
		q, err := url.ParseQuery(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		o, err := decodeLogOptions(q)
		if err != nil {
			t.Fatalf("%q: %v", tt.query, err)
		}
		if !tt.check(o) {
			t.Fatalf("%q decoded to %+v", tt.query, o)
		}
	}
	for _, bad := range []string{"tailLines=x", "limitBytes=1.5", "sinceSeconds=", "sinceTime=2024-01-01"} {
		q, _ := url.ParseQuery(bad)
		if _, err := decodeLogOptions(q); err == nil {
			t.Fatalf("%q decoded", bad)
		}
	}
}
