package coordination

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestValidateLease(t *testing.T) {
	strategy := func(s string) *coordinationv1.CoordinatedLeaseStrategy {
		v := coordinationv1.CoordinatedLeaseStrategy(s)
		return &v
	}
	tests := []struct {
		name string
		spec coordinationv1.LeaseSpec
		want []errKey
	}{
		{name: "node lease", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To[int32](40)}},
		{name: "zero duration", spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](0)}, want: []errKey{e(field.ErrorTypeInvalid, "spec.leaseDurationSeconds")}},
		{name: "negative transitions", spec: coordinationv1.LeaseSpec{LeaseTransitions: ptr.To[int32](-1)}, want: []errKey{e(field.ErrorTypeInvalid, "spec.leaseTransitions")}},
		{name: "zero transitions", spec: coordinationv1.LeaseSpec{LeaseTransitions: ptr.To[int32](0)}},
		{name: "builtin strategy", spec: coordinationv1.LeaseSpec{Strategy: strategy("OldestEmulationVersion"), PreferredHolder: ptr.To("a")}},
		{name: "custom strategy", spec: coordinationv1.LeaseSpec{Strategy: strategy("example.com/newest")}},
		{name: "unknown strategy", spec: coordinationv1.LeaseSpec{Strategy: strategy("Newest")}, want: []errKey{e(field.ErrorTypeNotSupported, "spec.strategy.strategy")}},
		{name: "malformed strategy", spec: coordinationv1.LeaseSpec{Strategy: strategy("a/b/c")}, want: []errKey{e(field.ErrorTypeInvalid, "spec.strategy.strategy")}},
		{name: "preferred holder without strategy", spec: coordinationv1.LeaseSpec{PreferredHolder: ptr.To("a")}, want: []errKey{e(field.ErrorTypeForbidden, "spec.preferredHolder")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: "kube-node-lease"}, Spec: tc.spec}
			expectErrs(t, ValidateLease(l), tc.want...)
		})
	}
	expectErrs(t, ValidateLease(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}), e(field.ErrorTypeRequired, "metadata.namespace"))
}

func TestValidateLeaseUpdate(t *testing.T) {
	old := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: "kube-node-lease", ResourceVersion: "7"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To[int32](40)},
	}
	renewed := old.DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{}
	renewed.Spec.HolderIdentity = ptr.To("node-b")
	renewed.Spec.LeaseTransitions = ptr.To[int32](1)
	expectErrs(t, ValidateLeaseUpdate(renewed, old))

	bad := old.DeepCopy()
	bad.Spec.LeaseDurationSeconds = ptr.To[int32](-5)
	bad.Namespace = "default"
	expectErrs(t, ValidateLeaseUpdate(bad, old),
		e(field.ErrorTypeInvalid, "spec.leaseDurationSeconds"),
		e(field.ErrorTypeInvalid, "metadata.namespace"))
}
