package openapi

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

const refPrefix = "#/definitions/"

// definitions returns the generated definitions with refs in the
// "#/definitions/<name>" form the OpenAPI v2 builder uses, and every name
// the generated code asked the ref callback for.
func definitions(t *testing.T) (map[string]common.OpenAPIDefinition, []string) {
	t.Helper()
	var asked []string
	defs := GetOpenAPIDefinitions(func(name string) spec.Ref {
		asked = append(asked, name)
		return spec.MustCreateRef(refPrefix + name)
	})
	if len(defs) == 0 {
		t.Fatal("GetOpenAPIDefinitions returned no definitions")
	}
	return defs, asked
}

func TestDefinitionsUseModelNames(t *testing.T) {
	defs, _ := definitions(t)
	for _, name := range []string{
		"io.k8s.api.core.v1.Pod",
		"io.k8s.api.core.v1.PodList",
		"io.k8s.api.apps.v1.Deployment",
		"io.k8s.api.batch.v1.CronJob",
		"io.k8s.api.coordination.v1.Lease",
		"io.k8s.api.discovery.v1.EndpointSlice",
		"io.k8s.api.events.v1.Event",
		"io.k8s.api.rbac.v1.ClusterRole",
		"io.k8s.api.storage.v1.StorageClass",
		"io.k8s.api.networking.v1.Ingress",
		"io.k8s.api.policy.v1.PodDisruptionBudget",
		"io.k8s.api.scheduling.v1.PriorityClass",
		"io.k8s.api.certificates.v1.CertificateSigningRequest",
		"io.k8s.api.authentication.v1.TokenRequest",
		"io.k8s.api.authorization.v1.SubjectAccessReview",
		"io.k8s.api.autoscaling.v1.Scale",
		"io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
		"io.k8s.api.apidiscovery.v2.APIGroupDiscoveryList",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"io.k8s.apimachinery.pkg.apis.meta.v1.Status",
		"io.k8s.apimachinery.pkg.runtime.RawExtension",
		"io.k8s.apimachinery.pkg.version.Info",
		"io.k8s.apimachinery.pkg.util.intstr.IntOrString",
		"io.k8s.apimachinery.pkg.api.resource.Quantity",
		"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
	} {
		if _, ok := defs[name]; !ok {
			t.Errorf("definition %q missing", name)
		}
	}
	// Go-path keys would mean the generator fell back to type names, which
	// the scheme-based definition namer does not produce.
	for name := range defs {
		if strings.Contains(name, "/") {
			t.Errorf("definition key %q is a Go package path, want a model name", name)
		}
	}
}

func TestPodSpecSchema(t *testing.T) {
	defs, _ := definitions(t)
	def, ok := defs["io.k8s.api.core.v1.PodSpec"]
	if !ok {
		t.Fatal("io.k8s.api.core.v1.PodSpec missing")
	}
	if def.Schema.Description == "" {
		t.Error("PodSpec has no description")
	}
	containers, ok := def.Schema.Properties["containers"]
	if !ok {
		t.Fatal("PodSpec has no property containers")
	}
	if !containers.Type.Contains("array") {
		t.Errorf("PodSpec.containers type = %v, want array", containers.Type)
	}
	if containers.Items == nil || containers.Items.Schema == nil {
		t.Fatal("PodSpec.containers has no item schema")
	}
	if got, want := containers.Items.Schema.Ref.String(), refPrefix+"io.k8s.api.core.v1.Container"; got != want {
		t.Errorf("PodSpec.containers items ref = %q, want %q", got, want)
	}
	if !contains(def.Schema.Required, "containers") {
		t.Errorf("PodSpec required = %v, want it to include containers", def.Schema.Required)
	}
}

func TestEveryReferenceResolves(t *testing.T) {
	defs, asked := definitions(t)
	for _, name := range asked {
		if _, ok := defs[name]; !ok {
			t.Errorf("ref callback asked for %q, which has no definition", name)
		}
	}
	names := make([]string, 0, len(defs))
	for name := range defs {
		names = append(names, name)
	}
	sort.Strings(names)
	total := 0
	for _, name := range names {
		def := defs[name]
		for _, dep := range def.Dependencies {
			if _, ok := defs[dep]; !ok {
				t.Errorf("%s: dependency %q has no definition", name, dep)
			}
		}
		raw, err := json.Marshal(def.Schema)
		if err != nil {
			t.Fatalf("%s: marshal schema: %v", name, err)
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: unmarshal schema: %v", name, err)
		}
		for _, ref := range collectRefs(doc, nil) {
			total++
			target, ok := strings.CutPrefix(ref, refPrefix)
			if !ok {
				t.Errorf("%s: $ref %q is not under %s", name, ref, refPrefix)
				continue
			}
			if _, ok := defs[target]; !ok {
				t.Errorf("%s: $ref %q does not resolve", name, ref)
			}
		}
	}
	if total == 0 {
		t.Fatal("found no $ref at all; the walk is broken")
	}
}

// collectRefs returns every "$ref" string value in a decoded JSON document.
func collectRefs(v any, out []string) []string {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if s, ok := child.(string); ok && k == "$ref" {
				out = append(out, s)
				continue
			}
			out = collectRefs(child, out)
		}
	case []any:
		for _, child := range v {
			out = collectRefs(child, out)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
