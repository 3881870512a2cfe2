package kuberuntime

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestRunHookNetwork(t *testing.T) {
	var gotHeader, gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader, gotPath = r.Header.Get("X-Hook"), r.URL.Path
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	pod := testPod(*c)
	tests := []struct {
		name    string
		h       *corev1.LifecycleHandler
		wantErr bool
	}{
		{name: "httpGet to the pod IP by port name", h: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/ok", Port: intstr.FromString("http"), HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Hook", Value: "yes"}}}}},
		{name: "httpGet failing status", wantErr: true, h: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/fail", Port: intstr.FromInt32(int32(port))}}},
		{name: "httpGet unknown port name", wantErr: true, h: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/", Port: intstr.FromString("nope")}}},
		{name: "tcpSocket open", h: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(portStr)}}},
		{name: "tcpSocket closed", wantErr: true, h: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{
			Host: "127.0.0.1", Port: intstr.FromInt32(int32(closedPort))}}},
	}
	te := newTestEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotHeader, gotPath = "", ""
			msg, err := te.m.runHook(context.Background(), pod, c, "cid", []string{"127.0.0.1"}, tt.h, 5*time.Second)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v (%s), want error %v", err, msg, tt.wantErr)
			}
			if err != nil && msg == "" {
				t.Errorf("no message for the event")
			}
			if tt.name == "httpGet to the pod IP by port name" && (gotHeader != "yes" || gotPath != "/ok") {
				t.Errorf("request path %q header %q", gotPath, gotHeader)
			}
		})
	}
}

func TestRunHookSleepUsesTheClock(t *testing.T) {
	te := newTestEnv(t)
	pod := testPod(corev1.Container{Name: "app"})
	done := make(chan error, 1)
	go func() {
		_, err := te.m.runHook(context.Background(), pod, &pod.Spec.Containers[0], "cid", nil,
			&corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}, time.Minute)
		done <- err
	}()
	// Wait for the hook to wait on the clock, then let 5s pass.
	for !te.clock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("sleep hook returned before its time")
	default:
	}
	te.clock.Step(5 * time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sleep hook did not return after 5s on the clock")
	}
}
