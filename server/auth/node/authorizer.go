package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/server/auth/rbac"
)

// UserPrefix prefixes the user name of a node: system:node:<nodeName>.
const UserPrefix = "system:node:"

// Identity returns the node name of u when u is a node: a member of the
// system:nodes group named system:node:<nodeName>. isNode is false for any
// other user. A node user with an empty name part yields ("", true).
func Identity(u user.Info) (nodeName string, isNode bool) {
	if u == nil {
		return "", false
	}
	name, ok := strings.CutPrefix(u.GetName(), UserPrefix)
	if !ok || !slices.Contains(u.GetGroups(), user.NodesGroup) {
		return "", false
	}
	return name, true
}

// EventSource is the part of a shared informer the authorizer consumes; a
// client-go cache.SharedIndexInformer satisfies it.
type EventSource interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
}

// Authorizer authorizes requests from nodes (kubelets).
//
// For objects a node reads on behalf of its pods — secrets, configmaps,
// persistentvolumeclaims, persistentvolumes, serviceaccounts and their
// tokens — and for pods, its Node, its Lease and its CSINode, it allows only
// what relates to the calling node, using an index built from pod and
// PersistentVolume informers. Any other request from a node is checked
// against static node rules (normally bootstrappolicy.NodeRules()). It
// never denies: a request it does not allow gets NoOpinion, and a request
// from a user that is not a node always gets NoOpinion.
//
// Safe for concurrent use; a decision costs a read lock and a few map reads.
type Authorizer struct {
	index     *index
	nodeRules []rbacv1.PolicyRule
	synced    []cache.ResourceEventHandlerRegistration
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// New registers event handlers on the pod and PersistentVolume informers and
// returns the authorizer. nodeRules are what any node may do outside the
// object-specific checks. The informers must be started by the caller;
// until HasSynced reports true the index may be incomplete, so requests may
// be refused that would later be allowed.
func New(pods, pvs EventSource, nodeRules []rbacv1.PolicyRule) (*Authorizer, error) {
	a := &Authorizer{index: newIndex(), nodeRules: slices.Clone(nodeRules)}
	podReg, err := pods.AddEventHandler(a.index.podHandler())
	if err != nil {
		return nil, fmt.Errorf("node authorizer: watch pods: %w", err)
	}
	pvReg, err := pvs.AddEventHandler(a.index.pvHandler())
	if err != nil {
		return nil, fmt.Errorf("node authorizer: watch persistentvolumes: %w", err)
	}
	a.synced = []cache.ResourceEventHandlerRegistration{podReg, pvReg}
	return a, nil
}

// HasSynced reports whether the index has seen the informers' initial lists.
func (a *Authorizer) HasSynced() bool {
	for _, r := range a.synced {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

var (
	secretsResource     = corev1.Resource("secrets")
	configMapsResource  = corev1.Resource("configmaps")
	pvcsResource        = corev1.Resource("persistentvolumeclaims")
	pvsResource         = corev1.Resource("persistentvolumes")
	saResource          = corev1.Resource("serviceaccounts")
	podsResource        = corev1.Resource("pods")
	nodesResource       = corev1.Resource("nodes")
	leasesResource      = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	csiNodesResource    = schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}
	pcrResource         = schema.GroupResource{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}
	unsupportedResource = map[schema.GroupResource]bool{
		// Upstream narrows these with its graph; k1s does not index them,
		// so nodes get no access to them rather than unchecked access.
		{Group: "storage.k8s.io", Resource: "volumeattachments"}: true,
		{Group: "resource.k8s.io", Resource: "resourceclaims"}:   true,
		{Group: "resource.k8s.io", Resource: "resourceslices"}:   true,
	}
)

var errNoRuleResolution = errors.New("node authorizer does not support user rule resolution")

// RulesFor implements authorizer.RuleResolver. A node's permissions depend on
// the objects bound to it and cannot be listed, so for nodes the answer is
// marked incomplete; for other users there is nothing to add.
func (a *Authorizer) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if _, isNode := Identity(u); isNode {
		return nil, nil, true, errNoRuleResolution
	}
	return nil, nil, false, nil
}

// ConditionsAwareAuthorize implements authorizer.Authorizer; this authorizer
// has no conditions.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions implements authorizer.Authorizer; unsupported, fails closed.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// Authorize implements authorizer.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	node, isNode := Identity(attrs.GetUser())
	if !isNode {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if node == "" {
		return a.deny(ctx, node, attrs, fmt.Sprintf("unknown node for user %q", attrs.GetUser().GetName()))
	}
	if attrs.IsResourceRequest() {
		gr := schema.GroupResource{Group: attrs.GetAPIGroup(), Resource: attrs.GetResource()}
		switch gr {
		case secretsResource:
			return a.readNamespaced(ctx, node, attrs, func(ns, name string) bool { return a.index.secretUsedBy(node, ns, name) })
		case configMapsResource:
			return a.readNamespaced(ctx, node, attrs, a.related(node, kindConfigMap))
		case pvcsResource:
			if attrs.GetSubresource() == "status" {
				return a.pvcStatus(ctx, node, attrs)
			}
			return a.getOnly(ctx, node, attrs, a.related(node, kindPVC))
		case pvsResource:
			return a.getOnly(ctx, node, attrs, func(_, name string) bool { return a.index.pvUsedBy(node, name) })
		case saResource:
			if attrs.GetVerb() == "get" && attrs.GetSubresource() == "" {
				return a.readNamespaced(ctx, node, attrs, a.related(node, kindServiceAccount))
			}
			return a.createToken(ctx, node, attrs)
		case podsResource:
			return a.pods(ctx, node, attrs)
		case nodesResource:
			return a.nodes(ctx, node, attrs)
		case leasesResource:
			return a.lease(ctx, node, attrs)
		case csiNodesResource:
			return a.csiNode(ctx, node, attrs)
		case pcrResource:
			return a.podCertificateRequests(ctx, node, attrs)
		}
		if unsupportedResource[gr] {
			return a.deny(ctx, node, attrs, fmt.Sprintf("node access to %s is not supported", gr))
		}
	}
	if rbac.RulesAllow(attrs, a.nodeRules...) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// related returns a check that the named object of kind k is used by a pod
// bound to node.
func (a *Authorizer) related(node string, k kind) func(ns, name string) bool {
	return func(ns, name string) bool { return a.index.usedBy(node, ref{k, ns, name}) }
}

func (a *Authorizer) deny(ctx context.Context, node string, attrs authorizer.Attributes, reason string) (authorizer.Decision, string, error) {
	klog.FromContext(ctx).V(4).Info("Node authorizer refused", "node", node, "verb", attrs.GetVerb(),
		"resource", attrs.GetResource(), "subresource", attrs.GetSubresource(), "namespace", attrs.GetNamespace(),
		"name", attrs.GetName(), "reason", reason)
	return authorizer.DecisionNoOpinion, reason, nil
}

func (a *Authorizer) checkRelated(ctx context.Context, node string, attrs authorizer.Attributes, isRelated func(ns, name string) bool) (authorizer.Decision, string, error) {
	if attrs.GetName() == "" {
		return a.deny(ctx, node, attrs, "no object name found")
	}
	if !isRelated(attrs.GetNamespace(), attrs.GetName()) {
		return a.deny(ctx, node, attrs, fmt.Sprintf("no relationship found between node '%s' and this object", node))
	}
	return authorizer.DecisionAllow, "", nil
}

// readNamespaced allows get, list and watch of a single named object (a
// list or watch narrowed to one name by a metadata.name field selector)
// that a pod on node uses.
func (a *Authorizer) readNamespaced(ctx context.Context, node string, attrs authorizer.Attributes, isRelated func(ns, name string) bool) (authorizer.Decision, string, error) {
	switch attrs.GetVerb() {
	case "get", "list", "watch":
	default:
		return a.deny(ctx, node, attrs, "can only read resources of this type")
	}
	if attrs.GetSubresource() != "" {
		return a.deny(ctx, node, attrs, "cannot read subresource")
	}
	if attrs.GetNamespace() == "" {
		return a.deny(ctx, node, attrs, "can only read namespaced object of this type")
	}
	return a.checkRelated(ctx, node, attrs, isRelated)
}

// getOnly allows get of a named object a pod on node uses.
func (a *Authorizer) getOnly(ctx context.Context, node string, attrs authorizer.Attributes, isRelated func(ns, name string) bool) (authorizer.Decision, string, error) {
	if attrs.GetVerb() != "get" {
		return a.deny(ctx, node, attrs, "can only get individual resources of this type")
	}
	if attrs.GetSubresource() != "" {
		return a.deny(ctx, node, attrs, "cannot get subresource")
	}
	return a.checkRelated(ctx, node, attrs, isRelated)
}

// pvcStatus allows updating the status of a claim a pod on node uses (volume
// expansion). NodeRestriction limits what the update may change.
func (a *Authorizer) pvcStatus(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.GetVerb() {
	case "update", "patch":
	default:
		return a.deny(ctx, node, attrs, "can only get/update/patch this type")
	}
	return a.checkRelated(ctx, node, attrs, a.related(node, kindPVC))
}

// createToken allows creating a token for a service account a pod on node
// runs as. NodeRestriction checks the token is bound to such a pod.
func (a *Authorizer) createToken(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetVerb() != "create" || attrs.GetName() == "" {
		return a.deny(ctx, node, attrs, "can only create tokens for individual service accounts")
	}
	if attrs.GetSubresource() != "token" {
		return a.deny(ctx, node, attrs, "can only create token subresource of serviceaccount")
	}
	return a.checkRelated(ctx, node, attrs, a.related(node, kindServiceAccount))
}

// pods: get of a pod bound to node; list and watch only with a
// spec.nodeName=<node> field selector (or of a single bound pod); create and
// delete (mirror pods), status updates and evictions are left to
// NodeRestriction.
func (a *Authorizer) pods(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.GetSubresource() {
	case "":
		switch attrs.GetVerb() {
		case "get":
			return a.getOnly(ctx, node, attrs, a.related(node, kindPod))
		case "list", "watch":
			if fieldSelectsNode(attrs, node) {
				return authorizer.DecisionAllow, "", nil
			}
			if attrs.GetName() != "" {
				return a.checkRelated(ctx, node, attrs, a.related(node, kindPod))
			}
			return a.deny(ctx, node, attrs, "can only list/watch pods with spec.nodeName field selector")
		case "create", "delete":
			return authorizer.DecisionAllow, "", nil
		}
	case "status":
		switch attrs.GetVerb() {
		case "update", "patch":
			return authorizer.DecisionAllow, "", nil
		}
	case "eviction":
		if attrs.GetVerb() == "create" {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return a.deny(ctx, node, attrs, "")
}

// fieldSelectsNode reports whether the request's field selector requires
// spec.nodeName == node.
func fieldSelectsNode(attrs authorizer.Attributes, node string) bool {
	reqs, err := attrs.GetFieldSelector()
	if err != nil {
		return false
	}
	for _, r := range reqs {
		if r.Field == "spec.nodeName" && (r.Operator == selection.Equals || r.Operator == selection.DoubleEquals) && r.Value == node {
			return true
		}
	}
	return false
}

// podCertificateRequests: create (NodeRestriction admits only requests for
// the node's own pods), and list and watch with a spec.nodeName=<node> field
// selector, which is also how the agent reads one request (adding
// metadata.name). Upstream also allows get of a request through its graph,
// which k1s does not index.
func (a *Authorizer) podCertificateRequests(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetSubresource() != "" {
		return a.deny(ctx, node, attrs, "nodes may not access subresources of PodCertificateRequests")
	}
	switch attrs.GetVerb() {
	case "create":
		return authorizer.DecisionAllow, "", nil
	case "list", "watch":
		if fieldSelectsNode(attrs, node) {
			return authorizer.DecisionAllow, "", nil
		}
		return a.deny(ctx, node, attrs, "can only list/watch podcertificaterequests with a spec.nodeName field selector")
	}
	return a.deny(ctx, node, attrs, fmt.Sprintf("nodes may not %s podcertificaterequests", attrs.GetVerb()))
}

// nodes: a node may read only its own Node (by name, even before it exists)
// and may create, update and patch Nodes and node status; NodeRestriction
// limits those writes to its own Node.
func (a *Authorizer) nodes(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.GetSubresource() {
	case "":
		switch attrs.GetVerb() {
		case "create", "update", "patch":
			return authorizer.DecisionAllow, "", nil
		case "get", "list", "watch":
			switch attrs.GetName() {
			case node:
				return authorizer.DecisionAllow, "", nil
			case "":
				return a.deny(ctx, node, attrs, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", node))
			default:
				return a.deny(ctx, node, attrs, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", node, attrs.GetName()))
			}
		}
	case "status":
		switch attrs.GetVerb() {
		case "update", "patch":
			return authorizer.DecisionAllow, "", nil
		}
	}
	return a.deny(ctx, node, attrs, "")
}

// lease: a node may get, update, patch and delete the Lease named after it
// in kube-node-lease, and create Leases there (NodeRestriction checks the
// created name, which the authorizer cannot see).
func (a *Authorizer) lease(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	verb := attrs.GetVerb()
	switch verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return a.deny(ctx, node, attrs, "can only get, create, update, patch, or delete a node lease")
	}
	if attrs.GetNamespace() != corev1.NamespaceNodeLease {
		return a.deny(ctx, node, attrs, fmt.Sprintf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease))
	}
	if verb != "create" && attrs.GetName() != node {
		return a.deny(ctx, node, attrs, "can only access node lease with the same name as the requesting node")
	}
	return authorizer.DecisionAllow, "", nil
}

// csiNode: a node may get, create, update, patch and delete the CSINode
// named after it (create checked by NodeRestriction). Its status is not
// writable by nodes in k1s.
func (a *Authorizer) csiNode(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetSubresource() != "" {
		return a.deny(ctx, node, attrs, "cannot authorize CSINode subresources")
	}
	verb := attrs.GetVerb()
	switch verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return a.deny(ctx, node, attrs, "can only get, create, update, patch, or delete a CSINode")
	}
	if verb != "create" && attrs.GetName() != node {
		return a.deny(ctx, node, attrs, "can only access CSINode with the same name as the requesting node")
	}
	return authorizer.DecisionAllow, "", nil
}
