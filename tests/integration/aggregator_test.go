package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationhelper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestAPIServicesOfBuiltInGroups: every group-version the apiserver
// serves has a local APIService, Available once the server is ready;
// a CRD's served version gets one while the CRD exists; /apis lists the
// groups from them.
func TestAPIServicesOfBuiltInGroups(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	agg := aggregatorclient.NewForConfigOrDie(s.RESTConfig(t)).ApiregistrationV1().APIServices()

	list, err := agg.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]apiregistrationv1.APIService{}
	for _, svc := range list.Items {
		byName[svc.Name] = svc
	}
	for _, name := range []string{"v1.", "v1.apps", "v1.batch", "v1.flowcontrol.apiserver.k8s.io", "v1.apiextensions.k8s.io", "v1.rbac.authorization.k8s.io"} {
		svc, ok := byName[name]
		if !ok {
			t.Errorf("no APIService %s", name)
			continue
		}
		if svc.Spec.Service != nil || !apiregistrationhelper.IsAPIServiceConditionTrue(&svc, apiregistrationv1.Available) {
			t.Errorf("APIService %s: service %v, conditions %+v; want local and Available", name, svc.Spec.Service, svc.Status.Conditions)
		}
	}
	if got := byName["v1.apps"].Spec.GroupPriorityMinimum; got != 17800 {
		t.Errorf("v1.apps group priority %d, want upstream's 17800", got)
	}

	// The legacy /apis document comes from the APIServices.
	groups, err := s.Client(t).Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	for _, want := range []string{"apiregistration.k8s.io", "apps", "flowcontrol.apiserver.k8s.io", "apiextensions.k8s.io"} {
		if !slices.Contains(names, want) {
			t.Errorf("/apis lacks %s: %v", want, names)
		}
	}

	// The APIService and APF types are in the OpenAPI documents (one
	// missing definition would fail every v3 document's build).
	for path, want := range map[string]string{
		"/openapi/v3/apis/apiregistration.k8s.io/v1":       "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService",
		"/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1": "io.k8s.api.flowcontrol.v1.FlowSchema",
		"/openapi/v2": "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceList",
	} {
		body, err := s.Client(t).Discovery().RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(ctx)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
		} else if !strings.Contains(string(body), want) {
			t.Errorf("GET %s lacks %s", path, want)
		}
	}

	// A CRD's version gets an APIService, withdrawn with the CRD.
	ext := apiextensionsclient.NewForConfigOrDie(s.RESTConfig(t))
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.agg.k1s.test"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "agg.k1s.test",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}},
			}},
		},
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		svc, err := agg.Get(ctx, "v1.agg.k1s.test", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && apiregistrationhelper.IsAPIServiceConditionTrue(svc, apiregistrationv1.Available), err
	})
	if err != nil {
		t.Fatalf("no Available APIService for the CRD: %v", err)
	}
	if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := agg.Get(ctx, "v1.agg.k1s.test", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the deleted CRD's APIService stays: %v", err)
	}
}

// wardle is a stand-in aggregated API server (the sample-apiserver's
// group): it serves its discovery and a flunder list, and records who
// called and with which client certificate.
type wardle struct {
	srv *httptest.Server
	ca  []byte

	mu    sync.Mutex
	calls []wardleCall
}

type wardleCall struct {
	method, path, user, groups, certCN, contentType, body string
}

func startWardle(t *testing.T, serverName string, requestHeaderCA *x509.CertPool) *wardle {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(serverName, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// The second certificate is the CA that signed the first.
	rest := certPEM
	var blocks []*pem.Block
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		blocks = append(blocks, b)
	}
	w := &wardle{ca: pem.EncodeToMemory(blocks[len(blocks)-1])}
	mux := http.NewServeMux()
	writeJSON := func(rw http.ResponseWriter, v any) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(v)
	}
	mux.HandleFunc("/apis/wardle.example.com/v1alpha1", func(rw http.ResponseWriter, r *http.Request) {
		writeJSON(rw, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "wardle.example.com/v1alpha1",
			APIResources: []metav1.APIResource{{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: []string{"get", "list"}}},
		})
	})
	mux.HandleFunc("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders", func(rw http.ResponseWriter, r *http.Request) {
		writeJSON(rw, map[string]any{"apiVersion": "wardle.example.com/v1alpha1", "kind": "FlunderList", "metadata": map[string]any{}, "items": []any{
			map[string]any{"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": map[string]any{"name": "f1", "namespace": "default"}},
		}})
	})
	// Writes, as the sample-apiserver answers them: a create echoes the
	// flunder with 201, a delete answers a Success Status.
	mux.HandleFunc("POST /apis/wardle.example.com/v1alpha1/namespaces/default/flunders", func(rw http.ResponseWriter, r *http.Request) {
		var obj map[string]any
		if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(rw).Encode(obj)
	})
	mux.HandleFunc("DELETE /apis/wardle.example.com/v1alpha1/namespaces/default/flunders/{name}", func(rw http.ResponseWriter, r *http.Request) {
		writeJSON(rw, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
	})
	w.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		call := wardleCall{method: r.Method, path: r.URL.Path, user: r.Header.Get("X-Remote-User"), groups: strings.Join(r.Header.Values("X-Remote-Group"), ","), contentType: r.Header.Get("Content-Type")}
		if r.Body != nil {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			call.body = string(b)
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			call.certCN = r.TLS.VerifiedChains[0][0].Subject.CommonName
		}
		w.mu.Lock()
		w.calls = append(w.calls, call)
		w.mu.Unlock()
		mux.ServeHTTP(rw, r)
	}))
	w.srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: requestHeaderCA}
	w.srv.StartTLS()
	t.Cleanup(w.srv.Close)
	return w
}

func (w *wardle) callsTo(path string) []wardleCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []wardleCall
	for _, c := range w.calls {
		if c.path == path {
			out = append(out, c)
		}
	}
	return out
}

// TestAggregatedAPIServer: an APIService backed by a Service is checked
// (Available, "all checks passed"), requests for its group-version are
// proxied to the server behind the Service with the caller's identity in
// X-Remote-* headers and the front-proxy client certificate, its group
// and resources appear in discovery (legacy and aggregated), and deleting
// it withdraws them. The Service is an ExternalName one for localhost: the
// service resolver is the webhooks' (a Service's cluster IP, which needs
// the node's proxy, or an ExternalName's host), and no proxy runs here.
// Aggregated servers find how to trust the proxy in
// kube-system/extension-apiserver-authentication.
func TestAggregatedAPIServer(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	client := s.Client(t)
	agg := aggregatorclient.NewForConfigOrDie(s.RESTConfig(t)).ApiregistrationV1().APIServices()
	tlsDir := filepath.Join(s.DataDir, "server", "tls")

	// What the apiserver publishes for extension API servers.
	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for key, file := range map[string]string{"client-ca-file": "client-ca.crt", "requestheader-client-ca-file": "request-header-ca.crt"} {
		want, err := os.ReadFile(filepath.Join(tlsDir, file))
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data[key] != string(want) {
			t.Errorf("%s is not %s", key, file)
		}
	}
	for key, want := range map[string]string{
		"requestheader-allowed-names":        `["system:auth-proxy"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-uid-headers":          `["X-Remote-Uid"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	} {
		if cm.Data[key] != want {
			t.Errorf("%s = %q, want %q", key, cm.Data[key], want)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cm.Data["requestheader-client-ca-file"])) {
		t.Fatal("no request-header CA in the config map")
	}

	const ns = "wardle-test"
	w := startWardle(t, "api."+ns+".svc", pool)
	_, portStr, _ := net.SplitHostPort(w.srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := agg.Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{
			Service:              &apiregistrationv1.ServiceReference{Namespace: ns, Name: "api", Port: ptr.To(int32(port))},
			Group:                "wardle.example.com",
			Version:              "v1alpha1",
			CABundle:             w.ca,
			GroupPriorityMinimum: 2000,
			VersionPriority:      200,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var svc *apiregistrationv1.APIService
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		svc, err = agg.Get(ctx, "v1alpha1.wardle.example.com", metav1.GetOptions{})
		return err == nil && apiregistrationhelper.IsAPIServiceConditionTrue(svc, apiregistrationv1.Available), err
	})
	if err != nil {
		t.Fatalf("APIService not Available: %v (%+v)", err, svc.Status.Conditions)
	}
	if c := apiregistrationhelper.GetAPIServiceConditionByType(svc, apiregistrationv1.Available); c.Message != "all checks passed" {
		t.Errorf("Available message %q", c.Message)
	}

	// Proxied with the caller's identity, as the front proxy.
	const flunders = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders"
	var body []byte
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		body, err = client.Discovery().RESTClient().Get().AbsPath(flunders).DoRaw(ctx)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("GET %s through the aggregator: %v", flunders, err)
	}
	if !strings.Contains(string(body), `"name":"f1"`) {
		t.Errorf("proxied body %s", body)
	}
	calls := w.callsTo(flunders)
	if len(calls) == 0 {
		t.Fatal("the aggregated server saw no flunder request")
	}
	if c := calls[len(calls)-1]; c.user != "system:admin" || !strings.Contains(c.groups, "system:masters") || c.certCN != "system:auth-proxy" {
		t.Errorf("proxied request: user %q, groups %q, client certificate %q; want system:admin, system:masters, system:auth-proxy", c.user, c.groups, c.certCN)
	}
	// A user the apiserver refuses never reaches it.
	before := len(w.callsTo(flunders))
	if _, err := discovery.NewDiscoveryClientForConfigOrDie(s.Anonymous(t)).RESTClient().Get().AbsPath(flunders).DoRaw(ctx); !apierrors.IsUnauthorized(err) {
		t.Errorf("anonymous GET through the aggregator: %v, want 401", err)
	}
	if after := len(w.callsTo(flunders)); after != before {
		t.Errorf("an anonymous request was proxied")
	}

	// Discovery: legacy and aggregated.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		groups, resources, err := client.Discovery().ServerGroupsAndResources()
		if err != nil {
			return false, nil
		}
		hasGroup := slices.ContainsFunc(groups, func(g *metav1.APIGroup) bool { return g.Name == "wardle.example.com" })
		hasFlunders := slices.ContainsFunc(resources, func(l *metav1.APIResourceList) bool {
			return l.GroupVersion == "wardle.example.com/v1alpha1" && slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == "flunders" })
		})
		return hasGroup && hasFlunders, nil
	})
	if err != nil {
		t.Errorf("flunders not in aggregated discovery: %v", err)
	}
	legacy, err := client.Discovery().ServerResourcesForGroupVersion("wardle.example.com/v1alpha1")
	if err != nil || len(legacy.APIResources) != 1 {
		t.Errorf("legacy discovery of wardle.example.com/v1alpha1: %v %v", legacy, err)
	}

	// Writes are proxied too: a create's body reaches the server as sent
	// and its 201 comes back; so does a delete.
	rc := client.Discovery().RESTClient()
	const flunder = `{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"f2","namespace":"default","labels":{"sample-label":"true"}}}`
	res := rc.Post().AbsPath(flunders).Body([]byte(flunder)).SetHeader("Content-Type", "application/json").SetHeader("Accept", "application/json").Do(ctx)
	var code int
	res.StatusCode(&code)
	if raw, err := res.Raw(); err != nil || code != http.StatusCreated {
		t.Errorf("POST %s through the aggregator: %d %v, want 201", flunders, code, err)
	} else if !strings.Contains(string(raw), `"name":"f2"`) {
		t.Errorf("POST %s answered %s", flunders, raw)
	}
	posted := slices.IndexFunc(w.callsTo(flunders), func(c wardleCall) bool { return c.method == http.MethodPost })
	if posted < 0 {
		t.Errorf("the aggregated server saw no POST")
	} else if c := w.callsTo(flunders)[posted]; c.body != flunder || !strings.HasPrefix(c.contentType, "application/json") || c.user != "system:admin" {
		t.Errorf("proxied POST: body %q, content type %q, user %q", c.body, c.contentType, c.user)
	}
	if _, err := rc.Delete().AbsPath(flunders + "/f2").DoRaw(ctx); err != nil {
		t.Errorf("DELETE through the aggregator: %v", err)
	}
	if len(w.callsTo(flunders+"/f2")) != 1 || w.callsTo(flunders + "/f2")[0].method != http.MethodDelete {
		t.Errorf("the aggregated server saw %+v for the delete", w.callsTo(flunders+"/f2"))
	}

	// The APIService's own life (the Aggregator spec's steps): a merge
	// patch of its spec, a condition of the caller's kept beside
	// Available by an update and a merge patch of /status, and removal
	// by label selector.
	const name = "v1alpha1.wardle.example.com"
	cur, err := agg.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patched, err := agg.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"versionPriority":400}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldRV, _ := strconv.ParseUint(cur.ResourceVersion, 10, 64)
	newRV, _ := strconv.ParseUint(patched.ResourceVersion, 10, 64)
	if patched.Spec.VersionPriority != 400 || newRV <= oldRV {
		t.Errorf("patched APIService: versionPriority %d, resourceVersion %s after %s", patched.Spec.VersionPriority, patched.ResourceVersion, cur.ResourceVersion)
	}
	mine := apiregistrationv1.APIServiceCondition{Type: "StatusUpdated", Status: "True", Reason: "Test", Message: "set by the test"}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := agg.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Conditions = append(cur.Status.Conditions, mine)
		_, err = agg.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	statusPath := "/apis/apiregistration.k8s.io/v1/apiservices/" + name + "/status"
	readStatus := func() *apiregistrationv1.APIService {
		t.Helper()
		raw, err := rc.Get().AbsPath(statusPath).SetHeader("Accept", "application/json").DoRaw(ctx)
		if err != nil {
			t.Fatalf("GET %s: %v", statusPath, err)
		}
		var got apiregistrationv1.APIService
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("GET %s: %v", statusPath, err)
		}
		return &got
	}
	got := readStatus()
	if c := apiregistrationhelper.GetAPIServiceConditionByType(got, "StatusUpdated"); c == nil || c.Message != mine.Message {
		t.Errorf("updated status lost the caller's condition: %+v", got.Status.Conditions)
	}
	if !apiregistrationhelper.IsAPIServiceConditionTrue(got, apiregistrationv1.Available) {
		t.Errorf("updated status lost Available: %+v", got.Status.Conditions)
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": append(got.Status.Conditions,
		apiregistrationv1.APIServiceCondition{Type: "StatusPatched", Status: "True", Reason: "Test", Message: "patched by the test"})}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Patch(types.MergePatchType).AbsPath(statusPath).Body(patch).DoRaw(ctx); err != nil {
		t.Fatalf("PATCH %s: %v", statusPath, err)
	}
	if c := apiregistrationhelper.GetAPIServiceConditionByType(readStatus(), "StatusPatched"); c == nil || c.Message != "patched by the test" {
		t.Errorf("patched status lacks the caller's condition")
	}

	// Withdrawn with the APIService, deleted by label selector.
	if _, err := agg.Patch(ctx, name, types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"k1s-test":"wardle"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := agg.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "k1s-test=wardle"}); err != nil {
		t.Fatal(err)
	}
	if left, err := agg.List(ctx, metav1.ListOptions{LabelSelector: "k1s-test=wardle"}); err != nil || len(left.Items) != 0 {
		t.Errorf("after deleteCollection: %v %v", left, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.Discovery().RESTClient().Get().AbsPath(flunders).DoRaw(ctx)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("flunders still served after the APIService was deleted")
	}
}
