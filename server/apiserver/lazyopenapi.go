package apiserver

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	restful "github.com/emicklei/go-restful/v3"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"
	builder2 "k8s.io/kube-openapi/pkg/builder"
	builder3 "k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/cached"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// installOpenAPI serves /openapi/v2 and /openapi/v3 on core's mux for the
// built-in resources (core's, apiextensions' and the aggregator's routes;
// requests reach core's mux through the aggregator's), and hands both
// services to the CRD OpenAPI controllers (through ext), which add the
// custom resources.
//
// k8s.io/apiserver builds both documents while the server starts and keeps
// them: ~17 MB of heap on an idle control plane and a few hundred
// milliseconds of start-up CPU, for documents most clusters rarely fetch.
// Here the v2 document is built on its first request, and the v3
// group-versions on the first request for any of them; once a v3 document
// has been turned into the JSON the handler caches, its object form is let
// go.
// What is served is what the eager build serves.
func installOpenAPI(core, ext, agg *genericapiserver.GenericAPIServer, v2 *openapicommon.Config, v3 *openapicommon.OpenAPIV3Config) error {
	webServices := servedWebServices(core, ext, agg)

	static := &lazySwagger{build: func() (*spec.Swagger, error) {
		sw, err := builder2.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices(webServices), v2)
		if err != nil {
			return nil, fmt.Errorf("build OpenAPI v2: %w", err)
		}
		sw.Definitions = handler.PruneDefaults(sw.Definitions)
		return sw, nil
	}, spec: &spec.Swagger{}}
	v2Service := handler.NewOpenAPIServiceLazy(cached.Func(func() (*spec.Swagger, string, error) {
		if err := static.ensure(); err != nil {
			return nil, "", err
		}
		return static.spec, "static", nil
	}))
	v2Service.RegisterOpenAPIVersionedService("/openapi/v2", beforeServing{mux: core.Handler.NonGoRestfulMux, ensure: static.ensure})

	v3Service := handler3.NewOpenAPIService()
	if err := v3Service.RegisterOpenAPIV3VersionedService("/openapi/v3", core.Handler.NonGoRestfulMux); err != nil {
		return fmt.Errorf("serve OpenAPI v3: %w", err)
	}
	builds := &v3Builds{build: map[string]func() (*spec3.OpenAPI, error){}}
	for _, ws := range webServices {
		gv := strings.TrimPrefix(ws.RootPath(), "/")
		builds.build[gv] = func() (*spec3.OpenAPI, error) {
			return builder3.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices([]*restful.WebService{ws}), v3)
		}
	}
	for gv := range builds.build {
		v3Service.UpdateGroupVersionLazy(gv, &lazyV3{gv: gv, build: func() (*spec3.OpenAPI, error) { return builds.take(gv) }})
	}

	// The CRD controllers merge custom resources into these services; the
	// v2 one merges into static.spec, which the v2 handler fills in before
	// it serves anything.
	for _, s := range []*genericapiserver.GenericAPIServer{core, ext} {
		s.StaticOpenAPISpec = static.spec
		s.OpenAPIVersionedService = v2Service
		s.OpenAPIV3VersionedService = v3Service
	}
	return nil
}

// servedWebServices lists the go-restful web services of the servers of
// the chain, one per root path (the first server's first).
func servedWebServices(servers ...*genericapiserver.GenericAPIServer) []*restful.WebService {
	seen := map[string]bool{}
	var out []*restful.WebService
	for _, s := range servers {
		for _, ws := range s.Handler.GoRestfulContainer.RegisteredWebServices() {
			if seen[ws.RootPath()] {
				continue
			}
			seen[ws.RootPath()] = true
			out = append(out, ws)
		}
	}
	return out
}

// lazySwagger is the v2 document of the built-in resources, built once,
// in place: the CRD controller holds the pointer from the start.
type lazySwagger struct {
	build func() (*spec.Swagger, error)
	spec  *spec.Swagger

	mu    sync.Mutex
	built bool
}

func (l *lazySwagger) ensure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.built {
		return nil
	}
	sw, err := l.build()
	if err != nil {
		return err
	}
	*l.spec = *sw
	l.built = true
	return nil
}

// beforeServing registers handlers on mux that first run ensure.
type beforeServing struct {
	mux    openapicommon.PathHandler
	ensure func() error
}

func (b beforeServing) Handle(path string, h http.Handler) {
	b.mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := b.ensure(); err != nil {
			klog.ErrorS(err, "Cannot serve the OpenAPI document", "path", path)
			http.Error(w, "the OpenAPI document could not be built", http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// lazyV3 is one built-in group-version's v3 document. The handler asks
// for it on every request to learn its etag, and turns it into JSON (and
// caches that) only when the etag is new: so the document is built
// (v3Builds) on the first request, handed over once, and afterwards only
// its etag is returned — the handler keeps serving its cached JSON. A
// failed build is retried on the next request.
//
// The handler's caches keep the first document they were given for good,
// though only to compare etags. So on the next request (by then the
// handler has turned it into JSON: its cache runs one request at a time)
// the document handed over is emptied in place, and its schemas become
// garbage.
type lazyV3 struct {
	gv    string
	build func() (*spec3.OpenAPI, error)

	mu     sync.Mutex
	handed bool
	doc    *spec3.OpenAPI // handed over, not yet emptied
}

// etag is the same for the life of the process: built-in documents do not
// change while it runs.
const lazyV3Etag = "static"

func (l *lazyV3) Get() (*spec3.OpenAPI, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handed {
		if l.doc != nil {
			*l.doc = spec3.OpenAPI{}
			l.doc = nil
		}
		return nil, lazyV3Etag, nil
	}
	doc, err := l.build()
	if err != nil {
		return nil, "", err
	}
	l.handed, l.doc = true, doc
	return doc, lazyV3Etag, nil
}

// v3Builds builds the v3 documents of every built-in group-version
// together, on the first request for any of them, and hands each out
// once.
//
// Together, because the builds share the model definitions
// (v3.Definitions) and the builder writes to their maps, while the
// handler serves (and reads) a document as soon as it has it, and asks
// for group-versions concurrently (the /openapi/v3 index wants every
// etag at once): a build overlapping the encoding of another document
// crashed the process. kube-apiserver, too, builds them all, one after
// the other, before it serves.
type v3Builds struct {
	mu    sync.Mutex
	build map[string]func() (*spec3.OpenAPI, error) // by group-version path; nil once built
	docs  map[string]*spec3.OpenAPI                 // built, not yet handed out
}

// take returns gv's document, building every document first if that has
// not been done. A failed build hands nothing out and is retried by the
// next take.
func (b *v3Builds) take(gv string) (*spec3.OpenAPI, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.build != nil {
		gvs := make([]string, 0, len(b.build))
		for g := range b.build {
			gvs = append(gvs, g)
		}
		sort.Strings(gvs)
		docs := make(map[string]*spec3.OpenAPI, len(gvs))
		for _, g := range gvs {
			doc, err := b.build[g]()
			if err != nil {
				return nil, fmt.Errorf("build OpenAPI v3 for %s: %w", g, err)
			}
			if group, version, ok := splitGroupVersionPath(g); ok {
				narrowSharedMetaKinds(doc, group, version)
			}
			docs[g] = doc
		}
		b.build, b.docs = nil, docs
	}
	doc, ok := b.docs[gv]
	if !ok {
		return nil, fmt.Errorf("no OpenAPI v3 document for %s, or it was handed out already", gv)
	}
	delete(b.docs, gv)
	return doc, nil
}

// splitGroupVersionPath reads "api/v1" and "apis/<group>/<version>".
func splitGroupVersionPath(p string) (group, version string, ok bool) {
	parts := strings.Split(p, "/")
	switch {
	case len(parts) == 2 && parts[0] == "api":
		return "", parts[1], true
	case len(parts) == 3 && parts[0] == "apis":
		return parts[1], parts[2], true
	}
	return "", "", false
}

// narrowSharedMetaKinds: metav1.AddToGroupVersion registers WatchEvent and
// DeleteOptions in every group, so their schemas list a
// group-version-kind per group. In one group-version's document only that
// group-version's entry and core/v1's are kept, as kube-apiserver does.
func narrowSharedMetaKinds(doc *spec3.OpenAPI, group, version string) {
	if doc == nil || doc.Components == nil {
		return
	}
	const ext = "x-kubernetes-group-version-kind"
	for name, schema := range doc.Components.Schemas {
		if schema == nil {
			continue
		}
		gvks, ok := schema.Extensions[ext].([]interface{})
		if !ok || len(gvks) < 2 || !isSharedMetaKind(gvks[0]) {
			continue
		}
		kept := make([]interface{}, 0, 2)
		for _, e := range gvks {
			m, ok := e.(map[string]interface{})
			if !ok {
				continue
			}
			g, _ := m["group"].(string)
			v, _ := m["version"].(string)
			if (g == group && v == version) || (g == "" && v == "v1") {
				kept = append(kept, e)
			}
		}
		// The extensions map is the model definition's, shared by every
		// group-version's document: replace it, do not write to it.
		narrowed := make(spec.Extensions, len(schema.Extensions))
		for k, v := range schema.Extensions {
			narrowed[k] = v
		}
		if len(kept) == 0 {
			klog.InfoS("No group-version-kind left for a shared meta kind", "schema", name, "group", group, "version", version)
			delete(narrowed, ext)
		} else {
			narrowed[ext] = kept
		}
		schema.Extensions = narrowed
	}
}

func isSharedMetaKind(e interface{}) bool {
	m, ok := e.(map[string]interface{})
	if !ok {
		return false
	}
	kind, _ := m["kind"].(string)
	return kind == "WatchEvent" || kind == "DeleteOptions"
}
