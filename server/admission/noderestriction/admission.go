package noderestriction

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/k1s/k1s/server/auth/node"
)

// Name is the name of the admission plugin.
const Name = "NodeRestriction"

// PodGetter gives access to pods by namespace; corev1listers.PodLister
// satisfies it.
type PodGetter interface {
	Pods(namespace string) corev1listers.PodNamespaceLister
}

// NodeGetter fetches a Node by name; corev1listers.NodeLister satisfies it.
type NodeGetter interface {
	Get(name string) (*corev1.Node, error)
}

// Plugin is the NodeRestriction admission plugin. It validates requests from
// node users (see node.Identity) and lets every other request through.
// Safe for concurrent use.
type Plugin struct {
	*admission.Handler
	pods            PodGetter
	nodes           NodeGetter
	serviceAccounts ServiceAccountGetter
	authz           authorizer.UnconditionalAuthorizer
}

var (
	_ admission.MutationInterface       = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
)

// New returns the plugin. pods, nodes and serviceAccounts are normally
// listers of a started informer factory; call SetReadyFunc with their
// HasSynced so node requests wait for the caches. authz (the apiserver's
// authorizer chain) is asked whether a node may request a service account
// token for an audience, or a pod certificate for a signer, that no volume
// of the pod uses; when nil such requests are refused.
func New(pods PodGetter, nodes NodeGetter, serviceAccounts ServiceAccountGetter, authz authorizer.UnconditionalAuthorizer) *Plugin {
	return &Plugin{
		Handler:         admission.NewHandler(admission.Create, admission.Update, admission.Delete),
		pods:            pods,
		nodes:           nodes,
		serviceAccounts: serviceAccounts,
		authz:           authz,
	}
}

// ValidateInitialization implements admission.InitializationValidator.
func (p *Plugin) ValidateInitialization() error {
	if p.pods == nil {
		return fmt.Errorf("%s requires a pod getter", Name)
	}
	if p.nodes == nil {
		return fmt.Errorf("%s requires a node getter", Name)
	}
	return nil
}

var (
	podResource      = corev1.Resource("pods")
	nodeResource     = corev1.Resource("nodes")
	pvcResource      = corev1.Resource("persistentvolumeclaims")
	saResource       = corev1.Resource("serviceaccounts")
	leaseResource    = coordinationv1.Resource("leases")
	csiNodeResource  = schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}
	csrResource      = certificatesv1.Resource("certificatesigningrequests")
	errNotReadyToRun = errors.New("not yet ready to handle request")
)

// Admit implements admission.MutationInterface. Like upstream's plugin it
// runs with the mutating plugins, on the request as sent: a TokenRequest
// is judged before the apiserver fills in its default audiences.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	nodeName, isNode := node.Identity(a.GetUserInfo())
	if !isNode {
		return nil
	}
	if nodeName == "" {
		return admission.NewForbidden(a, fmt.Errorf("could not determine node from user %q", a.GetUserInfo().GetName()))
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, errNotReadyToRun)
	}

	switch a.GetResource().GroupResource() {
	case podResource:
		switch a.GetSubresource() {
		case "":
			return p.admitPod(nodeName, a)
		case "status":
			return p.admitPodStatus(nodeName, a)
		case "eviction":
			return p.admitPodEviction(nodeName, a)
		default:
			return admission.NewForbidden(a, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.GetSubresource()))
		}
	case nodeResource:
		return p.admitNode(nodeName, a)
	case pvcResource:
		if a.GetSubresource() != "status" {
			return admission.NewForbidden(a, errors.New("may only update PVC status"))
		}
		return p.admitPVCStatus(nodeName, a)
	case saResource:
		return p.admitServiceAccount(ctx, nodeName, a)
	case leaseResource:
		return p.admitLease(nodeName, a)
	case csiNodeResource:
		return p.admitCSINode(nodeName, a)
	case csrResource:
		return p.admitCSR(nodeName, a)
	case pcrResource:
		return p.admitPodCertificateRequest(ctx, nodeName, a)
	case sliceResource:
		return p.admitResourceSlice(nodeName, a)
	}
	return nil
}

func (p *Plugin) admitPod(nodeName string, a admission.Attributes) error {
	switch a.GetOperation() {
	case admission.Create:
		return p.admitMirrorPodCreate(nodeName, a)
	case admission.Delete:
		existing, err := p.pods.Pods(a.GetNamespace()).Get(a.GetName())
		if apierrors.IsNotFound(err) {
			return err
		}
		if err != nil {
			return admission.NewForbidden(a, err)
		}
		if existing.Spec.NodeName != nodeName {
			return admission.NewForbidden(a, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nodeName))
		}
		return nil
	default:
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.GetOperation(), nodeName))
	}
}

// admitMirrorPodCreate lets a node create only mirror pods of its static
// pods: bound to itself, controlled by its Node object, and referencing no
// other API object (creating such a pod would otherwise grant the node read
// access to that object).
func (p *Plugin) admitMirrorPodCreate(nodeName string, a admission.Attributes) error {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return admission.NewForbidden(a, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, nodeName))
	}
	if pod.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", nodeName))
	}
	switch len(pod.OwnerReferences) {
	case 0:
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
	case 1:
	default:
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with a single owner reference set to itself", nodeName))
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != corev1.SchemeGroupVersion.String() || owner.Kind != "Node" || owner.Name != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
	}
	if owner.Controller == nil || !*owner.Controller {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", nodeName))
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return admission.NewForbidden(a, fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", nodeName))
	}
	n, err := p.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up node %s to verify uid: %w", nodeName, err))
	}
	if owner.UID != n.UID {
		return admission.NewForbidden(a, fmt.Errorf("node %s UID mismatch: expected %s got %s", nodeName, owner.UID, n.UID))
	}
	what, err := apiObjectReference(pod)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error checking mirror pod for API references: %w", err))
	}
	if what != "" {
		return admission.NewForbidden(a, fmt.Errorf("node %q can not create pods that reference %s", nodeName, what))
	}
	return nil
}

// admitPodStatus lets a node update the status of pods bound to it, without
// changing labels or the resource claim statuses the scheduler and
// controllers own.
func (p *Plugin) admitPodStatus(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Update {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	oldPod, ok := a.GetOldObject().(*corev1.Pod)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetOldObject()))
	}
	if oldPod.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", nodeName))
	}
	newPod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if !labels.Equals(oldPod.Labels, newPod.Labels) {
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update labels through pod status", nodeName))
	}
	if !equality.Semantic.DeepEqual(claimNames(oldPod.Status.ResourceClaimStatuses), claimNames(newPod.Status.ResourceClaimStatuses)) {
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update resource claim statues", nodeName))
	}
	if !equality.Semantic.DeepEqual(oldPod.Status.ExtendedResourceClaimStatus, newPod.Status.ExtendedResourceClaimStatus) {
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update extended resource claim status", nodeName))
	}
	if !equality.Semantic.DeepEqual(oldPod.Status.NodeAllocatableResourceClaimStatuses, newPod.Status.NodeAllocatableResourceClaimStatuses) {
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update node allocatable resource claim statuses", nodeName))
	}
	return nil
}

// claimNames reduces resource claim statuses to what the node must not
// change: each entry's name and claim name.
func claimNames(s []corev1.PodResourceClaimStatus) []string {
	out := make([]string, 0, len(s))
	for _, c := range s {
		name := "\x00"
		if c.ResourceClaimName != nil {
			name = *c.ResourceClaimName
		}
		out = append(out, c.Name+"/"+name)
	}
	return out
}

// admitPodEviction lets a node evict only pods bound to it.
func (p *Plugin) admitPodEviction(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %s", a.GetOperation()))
	}
	podName := a.GetName()
	if podName == "" {
		obj, err := meta.Accessor(a.GetObject())
		if err != nil {
			return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
		}
		podName = obj.GetName()
	}
	if podName == "" {
		return admission.NewForbidden(a, errors.New("could not determine pod from request data"))
	}
	existing, err := p.pods.Pods(a.GetNamespace()).Get(podName)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	if existing.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", nodeName))
	}
	return nil
}

// admitPVCStatus lets a node change only a claim's capacity, conditions and
// allocated resources (volume expansion), nothing else.
func (p *Plugin) admitPVCStatus(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Update {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	oldPVC, ok := a.GetOldObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetOldObject()))
	}
	newPVC, ok := a.GetObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	strip := func(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
		c = c.DeepCopy()
		c.ResourceVersion = ""
		c.ManagedFields = nil
		c.Status.Capacity = nil
		c.Status.Conditions = nil
		c.Status.AllocatedResources = nil
		c.Status.AllocatedResourceStatuses = nil
		return c
	}
	if !equality.Semantic.DeepEqual(strip(oldPVC), strip(newPVC)) {
		return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to update fields other than status.quantity and status.conditions", nodeName))
	}
	return nil
}

// admitNode lets a node create, update and delete only its own Node, never
// set a config source, change its taints or owner references, or set labels
// outside those a kubelet may set on itself.
func (p *Plugin) admitNode(nodeName string, a admission.Attributes) error {
	if requested := a.GetName(); requested != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify node %q", nodeName, requested))
	}
	switch a.GetOperation() {
	case admission.Create:
		n, ok := a.GetObject().(*corev1.Node)
		if !ok {
			return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
		}
		if n.Spec.ConfigSource != nil {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", nodeName))
		}
		if bad := forbiddenLabels(modifiedLabels(n.Labels, nil)); len(bad) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to set the following labels: %s", nodeName, strings.Join(bad, ", ")))
		}
	case admission.Update:
		n, ok := a.GetObject().(*corev1.Node)
		if !ok {
			return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
		}
		old, ok := a.GetOldObject().(*corev1.Node)
		if !ok {
			return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetOldObject()))
		}
		// Only a new non-nil source is refused: a client unaware of the
		// field may drop it on update.
		if n.Spec.ConfigSource != nil && !equality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", nodeName))
		}
		if !equality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify taints", nodeName))
		}
		if !equality.Semantic.DeepEqual(n.OwnerReferences, old.OwnerReferences) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify ownerReferences", nodeName))
		}
		if bad := forbiddenLabels(modifiedLabels(n.Labels, old.Labels)); len(bad) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", ")))
		}
	}
	return nil
}

// modifiedLabels returns the sorted keys added, removed or changed between a and b.
func modifiedLabels(a, b map[string]string) []string {
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// kubeletLabels are the kubernetes.io labels a kubelet may set on its Node.
var kubeletLabels = []string{
	corev1.LabelHostname,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone,
	corev1.LabelFailureDomainBetaRegion,
	corev1.LabelInstanceType,
	corev1.LabelInstanceTypeStable,
	corev1.LabelOSStable,
	corev1.LabelArchStable,
	"beta.kubernetes.io/os",
	"beta.kubernetes.io/arch",
}

// kubeletLabelNamespaces are the label namespaces (with their subdomains) a
// kubelet may use freely.
var kubeletLabelNamespaces = []string{corev1.LabelNamespaceSuffixKubelet, corev1.LabelNamespaceSuffixNode}

func labelNamespace(key string) string {
	ns, _, found := strings.Cut(key, "/")
	if !found {
		return ""
	}
	return ns
}

func inNamespace(ns, domain string) bool {
	return ns == domain || strings.HasSuffix(ns, "."+domain)
}

func isKubeletLabel(key string) bool {
	if slices.Contains(kubeletLabels, key) {
		return true
	}
	ns := labelNamespace(key)
	return slices.ContainsFunc(kubeletLabelNamespaces, func(d string) bool { return inNamespace(ns, d) })
}

// forbiddenLabels returns the keys a node may not add, remove or change on
// itself: node-restriction.kubernetes.io labels, and any other label in the
// kubernetes.io or k8s.io namespaces that is not a kubelet label (so
// node-role.kubernetes.io/* is forbidden, as upstream).
func forbiddenLabels(keys []string) []string {
	var bad []string
	for _, k := range keys {
		ns := labelNamespace(k)
		restricted := inNamespace(ns, corev1.LabelNamespaceNodeRestriction)
		kubernetes := inNamespace(ns, "kubernetes.io") || inNamespace(ns, "k8s.io")
		if restricted || (kubernetes && !isKubeletLabel(k)) {
			bad = append(bad, k)
		}
	}
	return bad
}

// admitServiceAccount checks token requests: a node may only request tokens
// bound to a pod that runs on it, for an audience that pod uses (or that the
// authorizer lets it request).
func (p *Plugin) admitServiceAccount(ctx context.Context, nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create || a.GetSubresource() != "token" {
		return nil
	}
	tr, ok := a.GetObject().(*authenticationv1.TokenRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return admission.NewForbidden(a, errors.New("node requested token not bound to a pod"))
	}
	if ref.UID == "" {
		return admission.NewForbidden(a, errors.New("node requested token with a pod binding without a uid"))
	}
	pod, err := p.pods.Pods(a.GetNamespace()).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	if ref.UID != pod.UID {
		return admission.NewForbidden(a, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, errors.New("node requested token bound to a pod scheduled on a different node"))
	}
	if err := p.checkAudience(ctx, tr, pod, a); err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

// checkAudience allows at most one audience, which must be that of a
// projected service account token volume of the pod, or be granted by the
// authorizer through the "request-serviceaccounts-token-audience" verb on a
// resource named after the audience.
func (p *Plugin) checkAudience(ctx context.Context, tr *authenticationv1.TokenRequest, pod *corev1.Pod, a admission.Attributes) error {
	var audience string
	switch len(tr.Spec.Audiences) {
	case 0:
	case 1:
		audience = tr.Spec.Audiences[0]
	default:
		return errors.New("node may only request 0 or 1 audiences")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil && src.ServiceAccountToken.Audience == audience {
				return nil
			}
		}
	}
	if p.authz != nil {
		decision, _, err := p.authz.Authorize(ctx, authorizer.AttributesRecord{
			User:            a.GetUserInfo(),
			Verb:            "request-serviceaccounts-token-audience",
			APIGroup:        a.GetResource().Group,
			APIVersion:      a.GetResource().Version,
			Resource:        audience,
			Namespace:       a.GetNamespace(),
			Name:            a.GetName(),
			ResourceRequest: true,
		})
		if decision == authorizer.DecisionAllow {
			return nil
		}
		if err != nil {
			return fmt.Errorf("error authorizing %s to request tokens for audience %q: %w", a.GetUserInfo().GetName(), audience, err)
		}
	}
	return fmt.Errorf("%s is not authorized to request tokens for audience %q", a.GetUserInfo().GetName(), audience)
}

// admitLease lets a node write only the Lease named after it in
// kube-node-lease.
func (p *Plugin) admitLease(nodeName string, a admission.Attributes) error {
	if a.GetNamespace() != corev1.NamespaceNodeLease {
		return admission.NewForbidden(a, fmt.Errorf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease))
	}
	name := a.GetName()
	if a.GetOperation() == admission.Create {
		lease, ok := a.GetObject().(*coordinationv1.Lease)
		if !ok {
			return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
		}
		name = lease.Name
	}
	if name != nodeName {
		return admission.NewForbidden(a, errors.New("can only access node lease with the same name as the requesting node"))
	}
	return nil
}

// admitCSINode lets a node write only the CSINode named after it.
func (p *Plugin) admitCSINode(nodeName string, a admission.Attributes) error {
	name := a.GetName()
	if a.GetOperation() == admission.Create {
		obj, err := meta.Accessor(a.GetObject())
		if err != nil {
			return admission.NewForbidden(a, errors.New("unable to access the object name"))
		}
		name = obj.GetName()
	}
	if name != nodeName {
		return admission.NewForbidden(a, errors.New("can only access CSINode with the same name as the requesting node"))
	}
	if a.GetSubresource() == "status" {
		return admission.NewForbidden(a, errors.New("CSIVolumeHealth feature gate is disabled"))
	}
	return nil
}

// admitCSR lets a node request kubelet client or serving certificates only
// for its own identity (CN=system:node:<name>).
func (p *Plugin) admitCSR(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return nil
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName && csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return admission.NewForbidden(a, errors.New("unable to parse csr: PEM block type must be CERTIFICATE REQUEST"))
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("unable to parse csr: %w", err))
	}
	if req.Subject.CommonName != node.UserPrefix+nodeName {
		return admission.NewForbidden(a, fmt.Errorf("can only create a node CSR with CN=system:node:%s", nodeName))
	}
	return nil
}
