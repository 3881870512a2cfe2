package integration

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestCRDSelectableFields: custom resources list and watch by the fields
// their CRD declares selectable (as the CustomResourceFieldSelectors
// conformance spec does); other fields are refused.
func TestCRDSelectableFields(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	ext := apiextensionsclient.NewForConfigOrDie(s.RESTConfig(t))
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "shirts.fields.k1s.test"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "fields.k1s.test",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "shirts", Singular: "shirt", Kind: "Shirt", ListKind: "ShirtList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"color": {Type: "string"}, "size": {Type: "string"},
					}}},
				}},
				SelectableFields: []apiextensionsv1.SelectableField{{JSONPath: ".spec.color"}, {JSONPath: ".spec.size"}},
			}},
		},
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "fields.k1s.test", Version: "v1", Resource: "shirts"}
	ri := s.Dynamic(t).Resource(gvr).Namespace("default")
	shirt := func(name, color, size string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "fields.k1s.test/v1", "kind": "Shirt", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"color": color, "size": size},
		}}
	}
	waitFor(t, func() error {
		_, err := ri.Create(ctx, shirt("blue-s", "blue", "S"), metav1.CreateOptions{})
		return err
	})
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), FieldSelector: "spec.color=red"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, sh := range []*unstructured.Unstructured{shirt("red-m", "red", "M"), shirt("red-s", "red", "S")} {
		if _, err := ri.Create(ctx, sh, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for sel, want := range map[string]int{"spec.color=red": 2, "spec.size=S": 2, "spec.color=red,spec.size=S": 1, "spec.color!=red": 1} {
		l, err := ri.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		if len(l.Items) != want {
			t.Errorf("%s: %d shirts, want %d", sel, len(l.Items), want)
		}
	}
	seen := map[string]bool{}
	timeout := time.After(10 * time.Second)
	for len(seen) < 2 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Added {
				seen[ev.Object.(*unstructured.Unstructured).GetName()] = true
			}
		case <-timeout:
			t.Fatalf("watch by spec.color=red saw %v", seen)
		}
	}
	if seen["blue-s"] {
		t.Errorf("watch by spec.color=red saw the blue shirt")
	}
	if _, err := ri.List(ctx, metav1.ListOptions{FieldSelector: "spec.sleeve=long"}); err == nil {
		t.Error("a field the CRD does not declare selectable was accepted")
	}
}
