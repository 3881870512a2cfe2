package printers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
)

// Option configures a table convertor returned by TableConvertorFor.
type Option func(*options)

type options struct {
	clock clock.PassiveClock
}

// WithClock sets the clock used for relative times (AGE, LAST SEEN,
// DURATION, restart times). The default is the real clock.
func WithClock(c clock.PassiveClock) Option {
	return func(o *options) { o.clock = c }
}

// TableConvertorFor returns the table convertor for a resource. Resources
// with an upstream-compatible printer get its columns; any other resource
// gets rest.NewDefaultTableConvertor(gr). The returned convertor is safe for
// concurrent use.
func TableConvertorFor(gr schema.GroupResource, opts ...Option) rest.TableConvertor {
	o := options{clock: clock.RealClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	p, ok := printersByResource[gr]
	if !ok {
		return rest.NewDefaultTableConvertor(gr)
	}
	return &convertor{resource: gr, printer: p, clock: o.clock}
}

// rowsFunc renders objects (single items, already extracted from a list
// when fromList) into table rows. now is the reference time for relative
// columns.
type rowsFunc func(now time.Time, objs []runtime.Object, fromList bool) ([]metav1.TableRow, error)

// printer is the column layout of one resource and the function that fills
// it.
type printer struct {
	columns []metav1.TableColumnDefinition
	rows    rowsFunc
}

type convertor struct {
	resource schema.GroupResource
	printer  printer
	clock    clock.PassiveClock
}

var _ rest.TableConvertor = &convertor{}

// ConvertToTable renders obj, a single object or a list, as a table. Like
// upstream's server-side printing it always includes the wide (priority 1)
// columns; clients hide them unless asked. tableOptions, when set, must be
// a *metav1.TableOptions; NoHeaders drops the column definitions.
func (c *convertor) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	noHeaders := false
	switch t := tableOptions.(type) {
	case nil:
	case *metav1.TableOptions:
		if t != nil {
			noHeaders = t.NoHeaders
		}
	default:
		return nil, fmt.Errorf("unrecognized type %T for table options, can't display tabular output", tableOptions)
	}

	now := c.clock.Now()
	p := c.printer
	if _, ok := obj.(*metav1.Status); ok {
		p = statusPrinter
	}

	var items []runtime.Object
	fromList := meta.IsListType(obj)
	if fromList {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, fmt.Errorf("print %s: extract list items: %w", c.resource, err)
		}
	} else {
		items = []runtime.Object{obj}
	}
	rows, err := p.rows(now, items, fromList)
	if err != nil {
		return nil, fmt.Errorf("print %s: %w", c.resource, err)
	}

	table := &metav1.Table{Rows: rows}
	if !noHeaders {
		table.ColumnDefinitions = p.columns
	}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
}

// eachObject adapts a per-object cell function for objects of type *T into
// a rowsFunc. Each row carries its object.
func eachObject[T any, PT interface {
	*T
	runtime.Object
}](cells func(now time.Time, obj PT) []interface{}) rowsFunc {
	return func(now time.Time, objs []runtime.Object, _ bool) ([]metav1.TableRow, error) {
		rows := make([]metav1.TableRow, 0, len(objs))
		for _, o := range objs {
			typed, ok := o.(PT)
			if !ok {
				var want PT
				return nil, fmt.Errorf("no table printer for %T, want %T", o, want)
			}
			rows = append(rows, metav1.TableRow{
				Cells:  cells(now, typed),
				Object: runtime.RawExtension{Object: o},
			})
		}
		return rows, nil
	}
}

// statusPrinter renders a metav1.Status returned in place of an object.
var statusPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		{Name: "Status", Type: "string", Description: metav1.Status{}.SwaggerDoc()["status"]},
		{Name: "Reason", Type: "string", Description: metav1.Status{}.SwaggerDoc()["reason"]},
		{Name: "Message", Type: "string", Description: metav1.Status{}.SwaggerDoc()["message"]},
	},
	rows: eachObject(func(_ time.Time, s *metav1.Status) []interface{} {
		return []interface{}{s.Status, string(s.Reason), s.Message}
	}),
}
