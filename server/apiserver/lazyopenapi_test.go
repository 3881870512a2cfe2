package apiserver

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func TestLazyV3BuildsOnceThenHandsOnlyTheEtag(t *testing.T) {
	builds := 0
	fail := true
	l := &lazyV3{gv: "apis/apps/v1", build: func() (*spec3.OpenAPI, error) {
		builds++
		if fail {
			return nil, errors.New("boom")
		}
		return &spec3.OpenAPI{Version: "3.0.0"}, nil
	}}
	if _, _, err := l.Get(); err == nil {
		t.Fatal("a failed build must be reported")
	}
	fail = false
	doc, etag, err := l.Get()
	if err != nil || doc == nil || doc.Version != "3.0.0" || etag == "" {
		t.Fatalf("first good Get = %v, %q, %v; want the document and an etag", doc, etag, err)
	}
	doc2, etag2, err := l.Get()
	if err != nil || doc2 != nil || etag2 != etag {
		t.Fatalf("second Get = %v, %q, %v; want no document and the same etag %q", doc2, etag2, err, etag)
	}
	if doc.Version != "" {
		t.Fatalf("the document handed over first still holds %q after the next Get; want it emptied", doc.Version)
	}
	if builds != 2 {
		t.Fatalf("built %d times, want 2 (one failure, one success)", builds)
	}
}

// Group-versions are fetched concurrently; their builds share the model
// definitions, so they must not overlap.
func TestLazyV3BuildsOneAtATime(t *testing.T) {
	var inFlight, overlaps atomic.Int32
	oneAtATime := serialized()
	var gvs []*lazyV3
	for i := range 8 {
		gvs = append(gvs, &lazyV3{gv: fmt.Sprintf("apis/g%d/v1", i), build: oneAtATime(func() (*spec3.OpenAPI, error) {
			if inFlight.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(5 * time.Millisecond)
			inFlight.Add(-1)
			return &spec3.OpenAPI{Version: "3.0.0"}, nil
		})})
	}
	var wg sync.WaitGroup
	for _, l := range gvs {
		wg.Go(func() {
			if _, _, err := l.Get(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d builds overlapped another", n)
	}
}

func TestLazySwaggerFillsInPlace(t *testing.T) {
	builds := 0
	l := &lazySwagger{spec: &spec.Swagger{}, build: func() (*spec.Swagger, error) {
		builds++
		sw := &spec.Swagger{}
		sw.Swagger = "2.0"
		return sw, nil
	}}
	held := l.spec // what the CRD controller keeps
	for i := 0; i < 3; i++ {
		if err := l.ensure(); err != nil {
			t.Fatal(err)
		}
	}
	if builds != 1 || held.Swagger != "2.0" {
		t.Fatalf("builds = %d, held.Swagger = %q; want 1 build filling the held document", builds, held.Swagger)
	}
}

func gvks(pairs ...string) []interface{} {
	var out []interface{}
	for i := 0; i+2 < len(pairs); i += 3 {
		out = append(out, map[string]interface{}{"group": pairs[i], "version": pairs[i+1], "kind": pairs[i+2]})
	}
	return out
}

func TestNarrowSharedMetaKinds(t *testing.T) {
	const ext = "x-kubernetes-group-version-kind"
	schema := func(v []interface{}) *spec.Schema {
		s := &spec.Schema{}
		s.AddExtension(ext, v)
		return s
	}
	doc := &spec3.OpenAPI{Components: &spec3.Components{Schemas: map[string]*spec.Schema{
		"watch":  schema(gvks("", "v1", "WatchEvent", "apps", "v1", "WatchEvent", "batch", "v1", "WatchEvent")),
		"delete": schema(gvks("batch", "v1", "DeleteOptions", "apps", "v1", "DeleteOptions")),
		"scale":  schema(gvks("apps", "v1", "Scale", "", "v1", "Scale", "batch", "v1", "Scale")),
		"single": schema(gvks("batch", "v1", "WatchEvent")),
	}}}
	narrowSharedMetaKinds(doc, "apps", "v1")
	for name, want := range map[string][]interface{}{
		"watch":  gvks("", "v1", "WatchEvent", "apps", "v1", "WatchEvent"),
		"delete": gvks("apps", "v1", "DeleteOptions"),
		"scale":  gvks("apps", "v1", "Scale", "", "v1", "Scale", "batch", "v1", "Scale"), // not a shared meta kind
		"single": gvks("batch", "v1", "WatchEvent"),                                      // one entry: left alone
	} {
		if got := doc.Components.Schemas[name].Extensions[ext]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

func TestSplitGroupVersionPath(t *testing.T) {
	for _, tc := range []struct {
		in, group, version string
		ok                 bool
	}{
		{"api/v1", "", "v1", true},
		{"apis/apps/v1", "apps", "v1", true},
		{"apis/networking.k8s.io/v1", "networking.k8s.io", "v1", true},
		{"apis", "", "", false},
		{"apis/apps", "", "", false},
		{"api", "", "", false},
	} {
		g, v, ok := splitGroupVersionPath(tc.in)
		if g != tc.group || v != tc.version || ok != tc.ok {
			t.Errorf("splitGroupVersionPath(%q) = %q, %q, %v; want %q, %q, %v", tc.in, g, v, ok, tc.group, tc.version, tc.ok)
		}
	}
}
