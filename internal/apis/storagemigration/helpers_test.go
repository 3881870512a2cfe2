package storagemigration

import (
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errKey is one expected validation error: its type and its field path.
type errKey struct {
	typ  field.ErrorType
	path string
}

// e is shorthand for an errKey.
func e(typ field.ErrorType, path string) errKey { return errKey{typ, path} }

// expectErrs fails the test unless got holds exactly the errors in want
// (compared by type and field path, in any order).
func expectErrs(t *testing.T, got field.ErrorList, want ...errKey) {
	t.Helper()
	var g, w []string
	for _, err := range got {
		g = append(g, string(err.Type)+" "+err.Field)
	}
	for _, k := range want {
		w = append(w, string(k.typ)+" "+k.path)
	}
	sort.Strings(g)
	sort.Strings(w)
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("errors mismatch\n got: %q\nwant: %q\nfull: %v", g, w, got)
	}
}
