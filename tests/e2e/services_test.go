package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/k1s/k1s/tests/e2e/framework"
)

// servicesManifest is what TestServices applies: a Deployment of testapp
// behind Services of every kind, a busybox pod serving its own name behind
// a Service (for hairpin), and a busybox client.
const servicesManifest = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: k1s.local/testapp:1
        imagePullPolicy: Never
        ports: [{name: http, containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
          periodSeconds: 1
          failureThreshold: 1
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: web-np}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web-lb}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 18080, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web-sticky}
spec:
  selector: {app: web}
  sessionAffinity: ClientIP
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web-headless}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: nobody}
spec:
  selector: {app: nobody}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: alias}
spec:
  type: ExternalName
  externalName: web.default.svc.cluster.local
---
apiVersion: v1
kind: Pod
metadata: {name: self, labels: {app: self}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: k1s.local/busybox:1.36
    imagePullPolicy: Never
    command: [sh, -c, "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]
---
apiVersion: v1
kind: Service
metadata: {name: loop}
spec:
  selector: {app: self}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: sh
    image: k1s.local/busybox:1.36
    imagePullPolicy: Never
    command: [sleep, "3600"]
`

// fakeUpstream is the DNS server the node forwards outside names to: the
// test's own, on a loopback address, answering one name.
type fakeUpstream struct {
	srv      *dns.Server
	aQueries atomic.Int32
}

func startFakeUpstream(t *testing.T, addr string) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{}
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if r.Question[0].Qtype == dns.TypeA {
			u.aQueries.Add(1)
		}
		if q := r.Question[0]; strings.EqualFold(q.Name, "outside.k1s-e2e.test.") && q.Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.ParseIP("192.0.2.77")})
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("fake upstream DNS on %s: %v", addr, err)
	}
	u.srv = &dns.Server{PacketConn: pc, Handler: mux}
	go func() { _ = u.srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = u.srv.Shutdown() })
	return u
}

// svcGet GETs url on a new connection each time (a kept-alive one would
// stay with one backend) and returns the trimmed body, or "" on error.
func svcGet(url string) string {
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(body))
}

// TestServices runs the service proxy and the cluster DNS on one node with
// real containers: every kind of Service, from the host and from pods, by
// address and by name; readiness taking a pod out and back; affinity;
// refusal; hairpin; deletion; and traffic through a kill -9 of k1s.
func TestServices(t *testing.T) {
	s := framework.NewNodeServer(t)
	upstreamAddr := "127.0.88.53:53"
	upstream := startFakeUpstream(t, upstreamAddr)
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 127.0.88.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Args = append(s.Args, "--resolv-conf", resolv)
	s.Start(t)
	s.WaitNodeReady(t, 60*time.Second)
	c := s.Client(t)
	ctx := context.Background()
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := s.Kubectl(ctx, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	manifest := filepath.Join(t.TempDir(), "services.yaml")
	if err := os.WriteFile(manifest, []byte(servicesManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	waitServiceAccount(t, c, "default")
	kubectl(t, "apply", "-f", manifest)
	webPods := runningPods(t, c, "default", "app=web", 2)
	framework.WaitPod(t, c, "default", "client", 90*time.Second, "running", framework.Running)
	framework.WaitPod(t, c, "default", "self", 90*time.Second, "running", framework.Running)
	names := map[string]bool{webPods[0].Name: true, webPods[1].Name: true}

	svc := func(name string) *corev1.Service {
		t.Helper()
		got, err := c.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	node, err := c.CoreV1().Nodes().Get(ctx, framework.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var nodeIP string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
		}
	}
	webIP := svc("web").Spec.ClusterIP
	// inPod runs wget in the client pod and returns the body.
	inPod := func(pod, url string) (string, error) {
		out, err := s.Kubectl(ctx, "exec", pod, "--", "wget", "-q", "-O", "-", url)
		return strings.TrimSpace(out), err
	}
	// seesAll polls until every name in want answered on get.
	seesAll := func(t *testing.T, what string, want map[string]bool, get func() string) {
		t.Helper()
		seen := map[string]bool{}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			if b := strings.TrimSpace(get()); want[b] {
				seen[b] = true
			}
			return len(seen) == len(want), nil
		})
		if err != nil {
			t.Fatalf("%s: answers from %v, want all of %v", what, seen, want)
		}
	}

	t.Run("cluster IP from the host and from a pod", func(t *testing.T) {
		seesAll(t, "cluster IP from the host", names, func() string { return svcGet("http://" + webIP + "/") })
		out, err := inPod("client", "http://"+webIP+"/")
		if err != nil || !names[out] {
			t.Fatalf("cluster IP from a pod: %q, %v", out, err)
		}
	})

	t.Run("the apiserver proxies to a pod and to a service", func(t *testing.T) {
		out := kubectl(t, "get", "--raw", "/api/v1/namespaces/default/pods/"+webPods[0].Name+":8080/proxy/")
		if strings.TrimSpace(out) != webPods[0].Name {
			t.Errorf("pods/proxy: %q", out)
		}
		out = kubectl(t, "get", "--raw", "/api/v1/namespaces/default/services/web:http/proxy/")
		if !names[strings.TrimSpace(out)] {
			t.Errorf("services/proxy: %q", out)
		}
	})

	t.Run("names from a pod", func(t *testing.T) {
		for _, name := range []string{"web", "web.default", "web.default.svc.cluster.local"} {
			out, err := inPod("client", "http://"+name+"/")
			if err != nil || !names[out] {
				t.Errorf("GET http://%s/ from a pod: %q, %v", name, out, err)
			}
		}
		out, err := s.Kubectl(ctx, "exec", "client", "--", "nslookup", "web.default.svc.cluster.local")
		if !strings.Contains(out, webIP) {
			t.Errorf("nslookup web: %v\n%s", err, out)
		}
	})

	t.Run("headless service lists the ready pods, SRV included", func(t *testing.T) {
		// The answer follows the headless Service's EndpointSlice, which
		// its controller writes shortly after the pods are ready.
		var out string
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(500 * time.Millisecond) {
			out, _ = s.Kubectl(ctx, "exec", "client", "--", "nslookup", "web-headless.default.svc.cluster.local")
			missing := slices.ContainsFunc(webPods, func(p corev1.Pod) bool { return !strings.Contains(out, p.Status.PodIP) })
			if !missing || time.Now().After(deadline) {
				break
			}
		}
		for _, p := range webPods {
			if !strings.Contains(out, p.Status.PodIP) {
				t.Errorf("headless A records lack %s:\n%s", p.Status.PodIP, out)
			}
		}
		out, _ = s.Kubectl(ctx, "exec", "client", "--", "nslookup", "-type=SRV", "_http._tcp.web-headless.default.svc.cluster.local")
		if n := strings.Count(out, "8080"); n < 2 {
			t.Errorf("want two SRV records on port 8080:\n%s", out)
		}
		// The same answers straight from the node's DNS address.
		m := new(dns.Msg)
		m.SetQuestion("_http._tcp.web-headless.default.svc.cluster.local.", dns.TypeSRV)
		r, err := dns.Exchange(m, "10.43.0.10:53")
		if err != nil || len(r.Answer) != 2 {
			t.Errorf("SRV from the node: %v %v", err, r)
		}
	})

	t.Run("external name is a CNAME; outside names go to the host's resolver", func(t *testing.T) {
		m := new(dns.Msg)
		m.SetQuestion("alias.default.svc.cluster.local.", dns.TypeCNAME)
		r, err := dns.Exchange(m, "10.43.0.10:53")
		if err != nil || len(r.Answer) != 1 || r.Answer[0].(*dns.CNAME).Target != "web.default.svc.cluster.local." {
			t.Fatalf("CNAME: %v %v", err, r)
		}
		before := upstream.aQueries.Load()
		for range 2 {
			out, _ := s.Kubectl(ctx, "exec", "client", "--", "nslookup", "outside.k1s-e2e.test.")
			if !strings.Contains(out, "192.0.2.77") {
				t.Fatalf("outside name from a pod:\n%s", out)
			}
		}
		// The second lookup's A query is answered from the cache.
		if n := upstream.aQueries.Load() - before; n != 1 {
			t.Errorf("the upstream saw %d A queries for two lookups, want the first only", n)
		}
	})

	t.Run("DNS and proxy metrics on the node's /metrics", func(t *testing.T) {
		out := kubectl(t, "get", "--raw", "/api/v1/nodes/"+framework.NodeName+"/proxy/metrics")
		for _, want := range []string{"coredns_dns_requests_total", "coredns_cache_hits_total", "kubeproxy_sync_proxy_rules_duration_seconds_count"} {
			if !strings.Contains(out, want) {
				t.Errorf("node metrics lack %s", want)
			}
		}
	})

	t.Run("node port and load balancer", func(t *testing.T) {
		np := svc("web-np").Spec.Ports[0].NodePort
		seesAll(t, "node port", names, func() string { return svcGet(fmt.Sprintf("http://%s:%d/", nodeIP, np)) })
		var lb *corev1.Service
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			lb = svc("web-lb")
			return len(lb.Status.LoadBalancer.Ingress) > 0, nil
		}); err != nil {
			t.Fatalf("no load-balancer ingress: %+v", lb.Status)
		}
		if ing := lb.Status.LoadBalancer.Ingress[0].IP; ing != nodeIP {
			t.Fatalf("ingress %s, want the node's address %s", ing, nodeIP)
		}
		seesAll(t, "load balancer", names, func() string { return svcGet(fmt.Sprintf("http://%s:18080/", nodeIP)) })
	})

	t.Run("client IP affinity keeps one backend", func(t *testing.T) {
		ip := svc("web-sticky").Spec.ClusterIP
		first := svcGet("http://" + ip + "/")
		for range 20 {
			if got := svcGet("http://" + ip + "/"); got != first {
				t.Fatalf("affinity broken: %q then %q", first, got)
			}
		}
	})

	t.Run("no endpoints and no service: refused at once", func(t *testing.T) {
		for _, addr := range []string{svc("nobody").Spec.ClusterIP + ":80", webIP + ":81", "10.43.255.254:80"} {
			start := time.Now()
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err == nil {
				conn.Close()
			}
			if !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > time.Second {
				t.Errorf("%s: %v after %s, want connection refused at once", addr, err, time.Since(start))
			}
		}
	})

	t.Run("a pod reaches itself through its service", func(t *testing.T) {
		out, err := inPod("self", "http://loop/")
		if err != nil || out != "self" {
			t.Fatalf("hairpin: %q, %v", out, err)
		}
	})

	t.Run("readiness takes a pod out of the service and back", func(t *testing.T) {
		sick, well := webPods[0], webPods[1]
		if svcGet("http://"+sick.Status.PodIP+":8080/fail") == "" {
			t.Fatal("could not make the pod's health check fail")
		}
		onlyWell := func() bool {
			for range 10 {
				if svcGet("http://"+webIP+"/") != well.Name {
					return false
				}
			}
			return true
		}
		start := time.Now()
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			return onlyWell(), nil
		}); err != nil {
			t.Fatalf("the failing pod still answers on the service")
		}
		t.Logf("taken out %s after its readiness began failing", time.Since(start).Round(100*time.Millisecond))
		if svcGet("http://"+sick.Status.PodIP+":8080/recover") == "" {
			t.Fatal("could not make the pod's health check pass again")
		}
		seesAll(t, "back in the service", names, func() string { return svcGet("http://" + webIP + "/") })
	})

	t.Run("traffic keeps flowing while k1s is killed, and rules are right after", func(t *testing.T) {
		s.Kill()
		for range 10 {
			if got := svcGet("http://" + webIP + "/"); !names[got] {
				t.Fatalf("while k1s is down: %q", got)
			}
		}
		s.Start(t)
		s.WaitNodeReady(t, 60*time.Second)
		seesAll(t, "after the restart", names, func() string { return svcGet("http://" + webIP + "/") })
		out, err := inPod("client", "http://web/")
		if err != nil || !names[out] {
			t.Fatalf("by name after the restart: %q, %v", out, err)
		}
	})

	t.Run("deleting a service removes its rules", func(t *testing.T) {
		ip := svc("web-sticky").Spec.ClusterIP
		kubectl(t, "delete", "service", "web-sticky")
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			conn, err := net.DialTimeout("tcp", ip+":80", time.Second)
			if err == nil {
				conn.Close()
			}
			return errors.Is(err, syscall.ECONNREFUSED), nil
		}); err != nil {
			t.Fatalf("deleted service's address %s still answers", ip)
		}
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			out, err := exec.Command("nft", "list", "table", "ip", "k1s-proxy").CombinedOutput()
			return err == nil && !strings.Contains(string(out), "default/web-sticky/"), nil
		}); err != nil {
			t.Fatalf("chains of the deleted service left in the table")
		}
	})
}
