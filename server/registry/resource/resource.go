// Package resource holds the hooks of the resource.k8s.io (dynamic
// resource allocation) registry beyond validation: the fields of disabled
// alpha features dropped, a DeviceTaintRule's taint re-stamped when its
// effect changes, admin access to devices only in namespaces labelled for
// it, and status writes of a ResourceClaim only by those allowed to bind
// claims (status.allocation, status.reservedFor) or to report for the
// drivers whose devices they describe (status.devices), as upstream's
// DRAResourceClaimGranularStatusAuthorization (beta, on by default) does.
package resource

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters"

	apiresource "github.com/k1s/k1s/internal/apis/resource"
)

// NamespaceGetter reads a namespace (the apiserver's own client).
type NamespaceGetter func(ctx context.Context, name string) (*corev1.Namespace, error)

// PrepareClaim drops a new claim's disabled fields.
func PrepareClaim(_ context.Context, obj runtime.Object) {
	apiresource.DropDisabledClaimFields(&obj.(*resourcev1.ResourceClaim).Spec, nil)
}

// PrepareClaimUpdate drops an updated claim's disabled fields.
func PrepareClaimUpdate(_ context.Context, obj, old runtime.Object) {
	apiresource.DropDisabledClaimFields(&obj.(*resourcev1.ResourceClaim).Spec, &old.(*resourcev1.ResourceClaim).Spec)
}

// PrepareClaimStatus drops a claim status's disabled fields and the status
// of devices no longer allocated.
func PrepareClaimStatus(_ context.Context, obj, old runtime.Object) {
	apiresource.DropDisabledClaimStatusFields(&obj.(*resourcev1.ResourceClaim).Status, &old.(*resourcev1.ResourceClaim).Status)
}

// PrepareTemplate drops a new template's disabled fields.
func PrepareTemplate(_ context.Context, obj runtime.Object) {
	apiresource.DropDisabledClaimFields(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec, nil)
}

// PrepareTemplateUpdate drops an updated template's disabled fields.
func PrepareTemplateUpdate(_ context.Context, obj, old runtime.Object) {
	apiresource.DropDisabledClaimFields(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec, &old.(*resourcev1.ResourceClaimTemplate).Spec.Spec)
}

// PrepareSlice drops a new slice's disabled fields.
func PrepareSlice(_ context.Context, obj runtime.Object) {
	apiresource.DropDisabledSliceFields(&obj.(*resourcev1.ResourceSlice).Spec, nil)
}

// PrepareSliceUpdate drops an updated slice's disabled fields.
func PrepareSliceUpdate(_ context.Context, obj, old runtime.Object) {
	apiresource.DropDisabledSliceFields(&obj.(*resourcev1.ResourceSlice).Spec, &old.(*resourcev1.ResourceSlice).Spec)
}

// PrepareTaintRuleUpdate re-stamps the taint's timeAdded with now() when
// its effect changes and the client did not change the time itself.
func PrepareTaintRuleUpdate(now func() time.Time) func(ctx context.Context, obj, old runtime.Object) {
	return func(_ context.Context, obj, old runtime.Object) {
		r, o := obj.(*resourcev1.DeviceTaintRule), old.(*resourcev1.DeviceTaintRule)
		if r.Spec.Taint.Effect != o.Spec.Taint.Effect && r.Spec.Taint.TimeAdded.Equal(o.Spec.Taint.TimeAdded) {
			t := now().Truncate(time.Second)
			r.Spec.Taint.TimeAdded = &metav1.Time{Time: t}
		}
	}
}

// AdminAccessAllowed returns the check that a request for admin access to
// devices (an exact request with adminAccess true) is made in a namespace
// labelled resource.kubernetes.io/admin-access=true.
func AdminAccessAllowed(namespaces NamespaceGetter) func(ctx context.Context, requests []resourcev1.DeviceRequest, namespace string) field.ErrorList {
	return func(ctx context.Context, requests []resourcev1.DeviceRequest, namespace string) field.ErrorList {
		for i, r := range requests {
			if r.Exactly != nil && r.Exactly.AdminAccess != nil && *r.Exactly.AdminAccess {
				return adminNamespace(ctx, namespaces, namespace, field.NewPath("spec", "devices", "requests").Index(i).Child("adminAccess"))
			}
		}
		return nil
	}
}

func adminNamespace(ctx context.Context, namespaces NamespaceGetter, namespace string, p *field.Path) field.ErrorList {
	ns, err := namespaces(ctx, namespace)
	if err != nil {
		return field.ErrorList{field.InternalError(p, fmt.Errorf("could not retrieve namespace to verify admin access: %w", err))}
	}
	if ns.Labels[resourcev1.DRAAdminNamespaceLabelKey] != "true" {
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("admin access to devices requires the `%s: true` label on the containing namespace", resourcev1.DRAAdminNamespaceLabelKey))}
	}
	return nil
}

// ClaimStatusAllowed returns the checks of a claim status update beyond
// validation: admin access newly granted only in an admin namespace; a
// change of allocation or reservations needs "update" (the request's verb)
// on resourceclaims/binding; a change of a driver's device status needs
// "arbitrary-node:<verb>" (or, for a service account of the node the claim
// is allocated on, "associated-node:<verb>") on resourceclaims/driver named
// after the driver.
func ClaimStatusAllowed(authz authorizer.Authorizer, namespaces NamespaceGetter) func(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return func(ctx context.Context, obj, old runtime.Object) field.ErrorList {
		c, o := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
		var errs field.ErrorList
		if p := adminResult(o.Status.Allocation); p == nil {
			if p = adminResult(c.Status.Allocation); p != nil {
				errs = append(errs, adminNamespace(ctx, namespaces, c.Namespace, p)...)
			}
		}
		if equality.Semantic.DeepEqual(c.Status.Allocation, o.Status.Allocation) && equality.Semantic.DeepEqual(c.Status.ReservedFor, o.Status.ReservedFor) &&
			len(changedDrivers(c.Status, o.Status)) == 0 {
			return errs
		}
		base, err := filters.GetAuthorizerAttributes(ctx)
		if err != nil {
			return append(errs, field.InternalError(field.NewPath("status"), fmt.Errorf("cannot build authorizer attributes: %w", err)))
		}
		if !equality.Semantic.DeepEqual(c.Status.Allocation, o.Status.Allocation) || !equality.Semantic.DeepEqual(c.Status.ReservedFor, o.Status.ReservedFor) {
			a := &subresourceAttrs{Attributes: base, verb: base.GetVerb(), subresource: resourcev1.SubresourceBinding}
			if err := authorize(ctx, authz, a); err != nil {
				errs = append(errs, field.Forbidden(field.NewPath("status", "allocation"), fmt.Sprintf(`changing status.allocation or status.reservedFor requires resource="resourceclaims/binding", verb="%s" permission: %s`, a.verb, err)))
			}
		}
		if c.Status.Allocation == nil {
			return errs
		}
		verbs := []string{resourcev1.VerbPrefixArbitraryNode + base.GetVerb()}
		if onAllocatedNode(base.GetUser(), c.Status.Allocation) {
			verbs = []string{resourcev1.VerbPrefixAssociatedNode + base.GetVerb(), resourcev1.VerbPrefixArbitraryNode + base.GetVerb()}
		}
		for _, driver := range sets.List(changedDrivers(c.Status, o.Status)) {
			var first error
			for _, verb := range verbs {
				err := authorize(ctx, authz, &subresourceAttrs{Attributes: base, verb: verb, subresource: resourcev1.SubresourceDriver, namespace: base.GetNamespace(), name: driver})
				if err == nil {
					first = nil
					break
				}
				if first == nil {
					first = err
				}
			}
			if first != nil {
				errs = append(errs, field.Forbidden(field.NewPath("status", "devices"), fmt.Sprintf(`changing status.devices requires resource="resourceclaims/driver", verb="%s" permission: %s`, verbs, first)))
			}
		}
		return errs
	}
}

// adminResult is the path of the first allocation result granting admin
// access, or nil.
func adminResult(a *resourcev1.AllocationResult) *field.Path {
	if a == nil {
		return nil
	}
	for i, r := range a.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess {
			return field.NewPath("status", "allocation", "devices", "results").Index(i).Child("adminAccess")
		}
	}
	return nil
}

// changedDrivers names the drivers of device statuses added, changed or
// removed.
func changedDrivers(st, old resourcev1.ResourceClaimStatus) sets.Set[string] {
	key := func(d resourcev1.AllocatedDeviceStatus) string {
		k := d.Driver + "/" + d.Pool + "/" + d.Device
		if d.ShareID != nil {
			k += "/" + *d.ShareID
		}
		return k
	}
	prev := map[string]resourcev1.AllocatedDeviceStatus{}
	for _, d := range old.Devices {
		prev[key(d)] = d
	}
	out := sets.New[string]()
	for _, d := range st.Devices {
		k := key(d)
		o, ok := prev[k]
		delete(prev, k)
		if !ok || !equality.Semantic.DeepEqual(o, d) {
			out.Insert(d.Driver)
		}
	}
	for _, d := range prev {
		out.Insert(d.Driver)
	}
	return out
}

// onAllocatedNode reports whether u is a service account token bound to
// the single node the allocation selects by name.
func onAllocatedNode(u user.Info, a *resourcev1.AllocationResult) bool {
	if u == nil || a.NodeSelector == nil || len(a.NodeSelector.NodeSelectorTerms) != 1 {
		return false
	}
	term := a.NodeSelector.NodeSelectorTerms[0]
	if len(term.MatchExpressions) != 0 || len(term.MatchFields) != 1 {
		return false
	}
	f := term.MatchFields[0]
	if f.Key != "metadata.name" || f.Operator != corev1.NodeSelectorOpIn || len(f.Values) != 1 {
		return false
	}
	if _, _, err := serviceaccount.SplitUsername(u.GetName()); err != nil {
		return false
	}
	nodes := u.GetExtra()[serviceaccount.NodeNameKey]
	return len(nodes) == 1 && nodes[0] != "" && nodes[0] == f.Values[0]
}

// subresourceAttrs are a request's attributes for a synthetic subresource.
type subresourceAttrs struct {
	authorizer.Attributes
	verb, subresource, namespace, name string
}

func (a *subresourceAttrs) GetVerb() string        { return a.verb }
func (a *subresourceAttrs) GetSubresource() string { return a.subresource }
func (a *subresourceAttrs) GetNamespace() string   { return a.namespace }
func (a *subresourceAttrs) GetName() string        { return a.name }

func authorize(ctx context.Context, authz authorizer.Authorizer, a authorizer.Attributes) error {
	d, reason, err := authz.Authorize(ctx, a)
	if d == authorizer.DecisionAllow {
		return nil
	}
	switch {
	case err != nil && reason != "":
		return fmt.Errorf("%v: %s", err, reason)
	case err != nil:
		return err
	case reason != "":
		return fmt.Errorf("%s", reason)
	}
	return fmt.Errorf("not allowed")
}
