// Package clusterroleaggregation owns the ClusterRole aggregation
// controller: a ClusterRole with an aggregationRule gets, as its rules, the
// union of the rules of every other ClusterRole that one of its selectors
// matches (in the order of the selectors, roles sorted by name, duplicates
// dropped). The built-in admin, edit and view roles aggregate roles labelled
// rbac.authorization.k8s.io/aggregate-to-<role>: "true" this way.
//
// The rules are written with server-side apply under the field manager
// "clusterrole-aggregation-controller", forcing ownership, so a user's
// edits to an aggregated role's rules are undone.
package clusterroleaggregation
