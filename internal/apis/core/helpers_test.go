package core

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// e is an expected validation error: its type and field path.
type e struct {
	typ   field.ErrorType
	field string
}

func (x e) String() string { return fmt.Sprintf("%s %s", x.typ, x.field) }

// expectErrs fails unless errs holds exactly the expected (type, field)
// pairs, in any order.
func expectErrs(t *testing.T, errs field.ErrorList, want ...e) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, err := range errs {
		got = append(got, e{err.Type, err.Field}.String())
	}
	exp := make([]string, 0, len(want))
	for _, w := range want {
		exp = append(exp, w.String())
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Fatalf("errors mismatch\n got: %q\nwant: %q\nfull: %v", got, exp, errs.ToAggregate())
	}
}

func required(f string) e     { return e{field.ErrorTypeRequired, f} }
func invalid(f string) e      { return e{field.ErrorTypeInvalid, f} }
func forbidden(f string) e    { return e{field.ErrorTypeForbidden, f} }
func notSupported(f string) e { return e{field.ErrorTypeNotSupported, f} }
func duplicate(f string) e    { return e{field.ErrorTypeDuplicate, f} }
func notFound(f string) e     { return e{field.ErrorTypeNotFound, f} }
func tooLong(f string) e      { return e{field.ErrorTypeTooLong, f} }

// findDetail returns the detail of the first error at path f.
func findDetail(errs field.ErrorList, f string) string {
	for _, err := range errs {
		if err.Field == f {
			return err.Detail
		}
	}
	return ""
}
