package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestDefaultPriorityClass(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	list := &schedulingv1.PriorityClassList{Items: []schedulingv1.PriorityClass{{}, {PreemptionPolicy: ptr.To(corev1.PreemptNever)}}}
	s.Default(list)
	if got := *list.Items[0].PreemptionPolicy; got != corev1.PreemptLowerPriority {
		t.Errorf("preemptionPolicy = %v", got)
	}
	if got := *list.Items[1].PreemptionPolicy; got != corev1.PreemptNever {
		t.Errorf("explicit preemptionPolicy overwritten: %v", got)
	}
}

func TestValidatePriorityClass(t *testing.T) {
	pc := func(name string, value int32) *schedulingv1.PriorityClass {
		p := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		DefaultPriorityClass(p)
		return p
	}
	tests := []struct {
		name string
		pc   *schedulingv1.PriorityClass
		want []errKey
	}{
		{name: "user class", pc: pc("high", 1000)},
		{name: "user class at limit", pc: pc("top", HighestUserDefinablePriority)},
		{name: "user class above limit", pc: pc("too-high", HighestUserDefinablePriority+1), want: []errKey{e(field.ErrorTypeForbidden, "value")}},
		{name: "system node critical", pc: pc(SystemNodeCritical, SystemCriticalPriority+1000)},
		{name: "system class wrong value", pc: pc(SystemClusterCritical, 5), want: []errKey{e(field.ErrorTypeForbidden, "metadata.name")}},
		{name: "unknown system name", pc: pc("system-mine", 5), want: []errKey{e(field.ErrorTypeForbidden, "metadata.name")}},
		{
			name: "system class as global default",
			pc: func() *schedulingv1.PriorityClass {
				p := pc(SystemClusterCritical, SystemCriticalPriority)
				p.GlobalDefault = true
				return p
			}(),
			want: []errKey{e(field.ErrorTypeForbidden, "metadata.name")},
		},
		{
			name: "bad preemption policy",
			pc: func() *schedulingv1.PriorityClass {
				p := pc("p", 1)
				p.PreemptionPolicy = ptr.To(corev1.PreemptionPolicy("Sometimes"))
				return p
			}(),
			want: []errKey{e(field.ErrorTypeNotSupported, "preemptionPolicy")},
		},
		{
			name: "empty preemption policy",
			pc: func() *schedulingv1.PriorityClass {
				p := pc("p", 1)
				p.PreemptionPolicy = ptr.To(corev1.PreemptionPolicy(""))
				return p
			}(),
			want: []errKey{e(field.ErrorTypeRequired, "preemptionPolicy")},
		},
		{name: "namespaced", pc: func() *schedulingv1.PriorityClass { p := pc("p", 1); p.Namespace = "x"; return p }(), want: []errKey{e(field.ErrorTypeForbidden, "metadata.namespace")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, ValidatePriorityClass(tc.pc), tc.want...)
		})
	}
	for _, sys := range SystemPriorityClasses() {
		DefaultPriorityClass(sys)
		expectErrs(t, ValidatePriorityClass(sys))
	}
}

func TestValidatePriorityClassUpdate(t *testing.T) {
	old := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1"}, Value: 10}
	DefaultPriorityClass(old)
	ok := old.DeepCopy()
	ok.Description = "now documented"
	ok.GlobalDefault = true
	expectErrs(t, ValidatePriorityClassUpdate(ok, old))

	bad := old.DeepCopy()
	bad.Value = 11
	bad.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	expectErrs(t, ValidatePriorityClassUpdate(bad, old),
		e(field.ErrorTypeForbidden, "value"),
		e(field.ErrorTypeInvalid, "preemptionPolicy"))
}
