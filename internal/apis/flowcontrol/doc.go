// Package flowcontrol owns defaulting and validation for the
// flowcontrol.apiserver.k8s.io/v1 kinds the k1s apiserver serves:
// FlowSchema and PriorityLevelConfiguration, the configuration of API
// Priority and Fairness.
//
// It works directly on the versioned k8s.io/api/flowcontrol/v1 types.
// Behaviour follows upstream Kubernetes v1.37 (pkg/apis/flowcontrol/v1
// defaults, pkg/apis/flowcontrol/validation): matching precedences within
// 1..10000 (1 only for "exempt"), subjects and rules checked for shape,
// queuing parameters within shuffle-sharding's entropy, and the mandatory
// objects ("exempt", "catch-all") held to their fixed specs (the exempt
// level's spec.exempt excepted). Field paths and error types match
// upstream. The code is written for k1s.
package flowcontrol
