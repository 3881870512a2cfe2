package storagemigration

import (
	"testing"

	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validMigration() *svmv1.StorageVersionMigration {
	return &svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "m", ResourceVersion: "1"},
		Spec:       svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "apps", Resource: "deployments"}},
	}
}

func cond(t svmv1.MigrationConditionType, s metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: string(t), Status: s, Reason: "Test", LastTransitionTime: metav1.Now()}
}

func TestValidateStorageVersionMigration(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*svmv1.StorageVersionMigration)
		want   []errKey
	}{
		{name: "valid", mutate: func(*svmv1.StorageVersionMigration) {}},
		{name: "core group", mutate: func(m *svmv1.StorageVersionMigration) { m.Spec.Resource.Group = "" }},
		{name: "no resource", mutate: func(m *svmv1.StorageVersionMigration) { m.Spec.Resource.Resource = "" },
			want: []errKey{e(field.ErrorTypeRequired, "spec.resource.resource")}},
		{name: "resource not a DNS-1035 label", mutate: func(m *svmv1.StorageVersionMigration) { m.Spec.Resource.Resource = "1pods" },
			want: []errKey{e(field.ErrorTypeInvalid, "spec.resource.resource")}},
		{name: "bad group", mutate: func(m *svmv1.StorageVersionMigration) { m.Spec.Resource.Group = "Apps!" },
			want: []errKey{e(field.ErrorTypeInvalid, "spec.resource.group")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := validMigration()
			tc.mutate(m)
			expectErrs(t, ValidateStorageVersionMigration(m), tc.want...)
		})
	}
	old := validMigration()
	m := validMigration()
	m.Spec.Resource.Resource = "replicasets"
	expectErrs(t, ValidateStorageVersionMigrationUpdate(m, old), e(field.ErrorTypeInvalid, "spec"))
}

func TestValidateStorageVersionMigrationStatusUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new svmv1.StorageVersionMigrationStatus
		want     []errKey
	}{
		{name: "running", new: svmv1.StorageVersionMigrationStatus{ResourceVersion: "42", Conditions: []metav1.Condition{cond(svmv1.MigrationRunning, metav1.ConditionTrue)}}},
		{name: "bad resource version", new: svmv1.StorageVersionMigrationStatus{ResourceVersion: "abc"},
			want: []errKey{e(field.ErrorTypeInvalid, "status.resourceVersion")}},
		{name: "resource version changed", old: svmv1.StorageVersionMigrationStatus{ResourceVersion: "42"}, new: svmv1.StorageVersionMigrationStatus{ResourceVersion: "43"},
			want: []errKey{e(field.ErrorTypeInvalid, "status.resourceVersion")}},
		{name: "succeeded and failed", new: svmv1.StorageVersionMigrationStatus{Conditions: []metav1.Condition{
			cond(svmv1.MigrationSucceeded, metav1.ConditionTrue), cond(svmv1.MigrationFailed, metav1.ConditionTrue)}},
			want: []errKey{e(field.ErrorTypeInvalid, "status.conditions")}},
		{name: "success taken back", old: svmv1.StorageVersionMigrationStatus{Conditions: []metav1.Condition{cond(svmv1.MigrationSucceeded, metav1.ConditionTrue)}},
			new:  svmv1.StorageVersionMigrationStatus{Conditions: []metav1.Condition{cond(svmv1.MigrationSucceeded, metav1.ConditionFalse)}},
			want: []errKey{e(field.ErrorTypeInvalid, "status.conditions")}},
		{name: "failure taken back", old: svmv1.StorageVersionMigrationStatus{Conditions: []metav1.Condition{cond(svmv1.MigrationFailed, metav1.ConditionTrue)}},
			want: []errKey{e(field.ErrorTypeInvalid, "status.conditions")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, m := validMigration(), validMigration()
			old.Status, m.Status = tc.old, tc.new
			expectErrs(t, ValidateStorageVersionMigrationStatusUpdate(m, old), tc.want...)
		})
	}
}
