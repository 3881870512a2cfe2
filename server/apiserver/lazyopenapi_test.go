package apiserver

import (
	"errors"
	"reflect"
	"strings"
	"testing"

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

// Every group-version is built on the first take, before any document is
// handed out (the builds write to the model definitions they share); each
// document is handed out once; a failed build hands out nothing and is
// tried again.
func TestV3BuildsAllTogetherAndHandsEachOnce(t *testing.T) {
	built := map[string]int{}
	fail := true
	b := &v3Builds{build: map[string]func() (*spec3.OpenAPI, error){}}
	for _, gv := range []string{"api/v1", "apis/apps/v1", "apis/batch/v1"} {
		b.build[gv] = func() (*spec3.OpenAPI, error) {
			built[gv]++
			if fail && gv == "apis/batch/v1" {
				return nil, errors.New("boom")
			}
			return &spec3.OpenAPI{Version: gv}, nil
		}
	}
	if _, err := b.take("api/v1"); err == nil || !strings.Contains(err.Error(), "apis/batch/v1") {
		t.Fatalf("take with a failing build: %v, want the failing group-version named", err)
	}
	fail = false
	doc, err := b.take("apis/apps/v1")
	if err != nil || doc.Version != "apis/apps/v1" {
		t.Fatalf("take after the failure: %v, %v", doc, err)
	}
	if want := map[string]int{"api/v1": 2, "apis/apps/v1": 2, "apis/batch/v1": 2}; !reflect.DeepEqual(built, want) {
		t.Fatalf("builds %v, want every group-version built on the first take (and again after the failure) %v", built, want)
	}
	if doc, err := b.take("api/v1"); err != nil || doc.Version != "api/v1" {
		t.Fatalf("take of another group-version: %v, %v", doc, err)
	}
	if _, err := b.take("apis/apps/v1"); err == nil {
		t.Fatal("a document was handed out twice")
	}
	if built["apis/apps/v1"] != 2 {
		t.Fatalf("rebuilt after the first success: %v", built)
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

// The schemas of different group-versions' documents share the model
// definition's extensions map: narrowing one document must not change it.
func TestNarrowSharedMetaKindsLeavesSharedExtensions(t *testing.T) {
	const ext = "x-kubernetes-group-version-kind"
	shared := spec.Extensions{ext: gvks("", "v1", "WatchEvent", "apps", "v1", "WatchEvent", "batch", "v1", "WatchEvent")}
	doc := func() *spec3.OpenAPI {
		s := &spec.Schema{}
		s.Extensions = shared
		return &spec3.OpenAPI{Components: &spec3.Components{Schemas: map[string]*spec.Schema{"watch": s}}}
	}
	apps, batch := doc(), doc()
	narrowSharedMetaKinds(apps, "apps", "v1")
	narrowSharedMetaKinds(batch, "batch", "v1")
	if got, want := apps.Components.Schemas["watch"].Extensions[ext], gvks("", "v1", "WatchEvent", "apps", "v1", "WatchEvent"); !reflect.DeepEqual(got, want) {
		t.Errorf("apps: %v, want %v", got, want)
	}
	if got, want := batch.Components.Schemas["watch"].Extensions[ext], gvks("", "v1", "WatchEvent", "batch", "v1", "WatchEvent"); !reflect.DeepEqual(got, want) {
		t.Errorf("batch: %v, want %v", got, want)
	}
	if got := shared[ext].([]interface{}); len(got) != 3 {
		t.Errorf("the shared extensions were changed: %v", got)
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
