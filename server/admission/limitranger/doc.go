// Package limitranger owns the LimitRanger admission plugin of the k1s
// apiserver, which applies the LimitRanges of a namespace:
//
//   - on pod create it fills in missing container and init container
//     requests and limits from the defaultRequest and default of each
//     LimitRange item of type Container (recording what it set in the
//     kubernetes.io/limit-ranger annotation), then checks min, max and
//     maxLimitRequestRatio per container (type Container) and for the pod
//     as a whole (type Pod); pods/resize updates are defaulted and checked
//     the same way;
//   - on PersistentVolumeClaim create and update it checks the requested
//     storage against the min and max of items of type
//     PersistentVolumeClaim.
//
// Violations are rejected as Forbidden with upstream's messages, e.g.
// "maximum cpu usage per Container is 500m, but limit is 1".
//
// LimitRanges come from an informer; when it has none for a namespace
// (the cache may lag behind a LimitRange just created) the plugin lists
// them from the API, remembering the answer for 30 seconds.
package limitranger
