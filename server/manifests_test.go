package server

import (
	"bytes"
	"io"
	"io/fs"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/k1s/k1s/controllers/deploy"
	"github.com/k1s/k1s/manifests"
)

// Every packaged manifest fills from the server's values and decodes into
// named objects; coredns.yaml puts kube-dns at --cluster-dns.
func TestPackagedManifests(t *testing.T) {
	c := Config{ClusterDNS: "10.43.0.99"}
	c.SetDefaults()
	p, err := c.parse()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: c, p: p}
	names, err := fs.Glob(manifests.Packaged(), "*.yaml")
	if err != nil || len(names) < 2 {
		t.Fatalf("packaged manifests %v %v", names, err)
	}
	for _, name := range names {
		raw, err := fs.ReadFile(manifests.Packaged(), name)
		if err != nil {
			t.Fatal(err)
		}
		content, err := deploy.Expand(raw, s.manifestVars())
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(content), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if obj.GetName() == "" || obj.GetKind() == "" {
				t.Errorf("%s: object without kind or name: %v", name, obj.Object)
			}
			if obj.GetKind() == "Service" && obj.GetName() == "kube-dns" {
				if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip != "10.43.0.99" {
					t.Errorf("kube-dns clusterIP %q, want --cluster-dns", ip)
				}
			}
		}
		if !packagedManifest(name[:len(name)-len(".yaml")]) {
			t.Errorf("--disable does not accept %s", name)
		}
	}
	if packagedManifest("nope") {
		t.Error("--disable accepts an unknown name")
	}
}
