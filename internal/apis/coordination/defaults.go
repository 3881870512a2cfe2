package coordination

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds the Lease and LeaseList defaulters to s.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&coordinationv1.Lease{}, func(obj interface{}) {
		DefaultLease(obj.(*coordinationv1.Lease))
	})
	s.AddTypeDefaultingFunc(&coordinationv1.LeaseList{}, func(obj interface{}) {
		list := obj.(*coordinationv1.LeaseList)
		for i := range list.Items {
			DefaultLease(&list.Items[i])
		}
	})
	return nil
}

// DefaultLease sets defaults on a Lease. coordination.k8s.io/v1 defaults no
// Lease field; the function exists so that every kind has a defaulter.
func DefaultLease(l *coordinationv1.Lease) {}
