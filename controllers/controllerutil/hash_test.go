package controllerutil

import (
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestComputeHash(t *testing.T) {
	base := testTemplate()
	h := ComputeHash(base, nil)
	if !regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]+$`).MatchString(h) {
		t.Fatalf("hash %q uses characters outside the safe alphabet", h)
	}
	if again := ComputeHash(base.DeepCopy(), nil); again != h {
		t.Errorf("hash of a copy = %q, want %q", again, h)
	}
	changed := base.DeepCopy()
	changed.Spec.Containers[0].Image = "nginx:2"
	others := map[string]string{
		"image":           ComputeHash(changed, nil),
		"collision 0":     ComputeHash(base, ptr.To[int32](0)),
		"collision 1":     ComputeHash(base, ptr.To[int32](1)),
		"collision max":   ComputeHash(base, ptr.To[int32](1<<31-1)),
		"empty template":  ComputeHash(&corev1.PodTemplateSpec{}, nil),
		"empty template1": ComputeHash(&corev1.PodTemplateSpec{}, ptr.To[int32](1)),
	}
	seen := map[string]string{h: "base"}
	for name, v := range others {
		if prev, dup := seen[v]; dup {
			t.Errorf("%s hashes like %s: %q", name, prev, v)
		}
		seen[v] = name
	}
}
