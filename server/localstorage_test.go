package server

import (
	"io/fs"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"

	"github.com/k1s/k1s/controllers/deploy"
	"github.com/k1s/k1s/manifests"
)

// The packaged local-storage.yaml, filled with the server's values, is
// k3s's default class.
func TestLocalStorageManifest(t *testing.T) {
	c := Config{}
	c.SetDefaults()
	p, err := c.parse()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: c, p: p}
	raw, err := fs.ReadFile(manifests.Packaged(), "local-storage.yaml")
	if err != nil {
		t.Fatal(err)
	}
	content, err := deploy.Expand(raw, s.manifestVars())
	if err != nil {
		t.Fatal(err)
	}
	sc := &storagev1.StorageClass{}
	if err := yaml.UnmarshalStrict(content, sc); err != nil {
		t.Fatalf("local-storage.yaml: %v\n%s", err, content)
	}
	if sc.Name != LocalStorageClassName || sc.Provisioner != "rancher.io/local-path" || sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" ||
		sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer ||
		sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != "Delete" || sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		t.Fatalf("class %+v", sc)
	}
	if !packagedManifest(ComponentLocalStorage) || !packagedManifest(ComponentCoreDNS) {
		t.Error("--disable does not know the packaged manifests")
	}
}

func TestDisableLocalStorage(t *testing.T) {
	c := Config{Disable: []string{"local-storage"}}
	c.SetDefaults()
	p, err := c.parse()
	if err != nil {
		t.Fatal(err)
	}
	if !p.disabled[ComponentLocalStorage] {
		t.Fatal("--disable=local-storage not recorded")
	}
	if c.DefaultLocalStoragePath != "/var/lib/k1s/storage" {
		t.Errorf("default storage path %q", c.DefaultLocalStoragePath)
	}
}
