package quota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestScopeSelectorMatchesUnparsable covers requirements validation now
// refuses but that may be stored: objects no reading of the requirement
// matches are out of scope; the others are an error (admission refuses
// them naming the quota).
func TestScopeSelectorMatchesUnparsable(t *testing.T) {
	const bad = "not a label value!"
	req := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
	}
	tests := []struct {
		name    string
		req     corev1.ScopedResourceSelectorRequirement
		values  []string
		wantErr bool
		want    bool
	}{
		{"In, object without a value", req(corev1.ScopeSelectorOpIn, bad), nil, false, false},
		{"In, object with another value", req(corev1.ScopeSelectorOpIn, bad, "high"), []string{"low"}, false, false},
		{"In, object with a listed value", req(corev1.ScopeSelectorOpIn, bad, "high"), []string{"high"}, true, false},
		{"NotIn, object without a value", req(corev1.ScopeSelectorOpNotIn, bad), nil, true, false},
		{"NotIn, object with the listed value", req(corev1.ScopeSelectorOpNotIn, bad), []string{bad}, false, false},
		{"unknown operator", req("Bogus", "x"), []string{"x"}, true, false},
		{"valid In still matches", req(corev1.ScopeSelectorOpIn, "high"), []string{"high"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scopeSelectorMatches(tc.req, tc.values)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
		})
	}
}
