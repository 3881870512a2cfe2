package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validClass() *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "kata", ResourceVersion: "1"},
		Handler:    "kata-qemu",
		Overhead:   &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
		Scheduling: &nodev1.Scheduling{
			NodeSelector: map[string]string{"runtime": "kata"},
			Tolerations:  []corev1.Toleration{{Key: "kata", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

func TestValidateRuntimeClass(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*nodev1.RuntimeClass)
		want   []errKey
	}{
		{name: "valid", mutate: func(*nodev1.RuntimeClass) {}},
		{name: "no overhead or scheduling", mutate: func(rc *nodev1.RuntimeClass) { rc.Overhead, rc.Scheduling = nil, nil }},
		{name: "missing handler", mutate: func(rc *nodev1.RuntimeClass) { rc.Handler = "" }, want: []errKey{e(field.ErrorTypeRequired, "handler")}},
		{name: "handler not a DNS label", mutate: func(rc *nodev1.RuntimeClass) { rc.Handler = "kata.qemu" }, want: []errKey{e(field.ErrorTypeInvalid, "handler")}},
		{name: "bad name", mutate: func(rc *nodev1.RuntimeClass) { rc.Name = "Kata" }, want: []errKey{e(field.ErrorTypeInvalid, "metadata.name")}},
		{name: "negative overhead", mutate: func(rc *nodev1.RuntimeClass) {
			rc.Overhead.PodFixed[corev1.ResourceMemory] = resource.MustParse("-1")
		}, want: []errKey{e(field.ErrorTypeInvalid, "overhead.limits[memory]")}},
		{name: "bad node selector", mutate: func(rc *nodev1.RuntimeClass) {
			rc.Scheduling.NodeSelector = map[string]string{"bad key!": "x"}
		}, want: []errKey{e(field.ErrorTypeInvalid, "scheduling.nodeSelector")}},
		{name: "bad toleration", mutate: func(rc *nodev1.RuntimeClass) {
			rc.Scheduling.Tolerations = append(rc.Scheduling.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpEqual, Value: "x"})
		}, want: []errKey{e(field.ErrorTypeInvalid, "scheduling.tolerations[1].operator")}},
		{name: "duplicate toleration", mutate: func(rc *nodev1.RuntimeClass) {
			secs := int64(5)
			dup := rc.Scheduling.Tolerations[0]
			dup.TolerationSeconds = &secs
			dup.Effect = corev1.TaintEffectNoSchedule
			rc.Scheduling.Tolerations = append(rc.Scheduling.Tolerations, dup)
		}, want: []errKey{e(field.ErrorTypeDuplicate, "scheduling.tolerations[1]"), e(field.ErrorTypeInvalid, "scheduling.tolerations[1].effect")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := validClass()
			tc.mutate(rc)
			expectErrs(t, ValidateRuntimeClass(rc), tc.want...)
		})
	}
}

func TestValidateRuntimeClassUpdate(t *testing.T) {
	old := validClass()
	rc := validClass()
	rc.Scheduling = nil
	expectErrs(t, ValidateRuntimeClassUpdate(rc, old))
	rc.Handler = "runc"
	expectErrs(t, ValidateRuntimeClassUpdate(rc, old), e(field.ErrorTypeInvalid, "handler"))
}
