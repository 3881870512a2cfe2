package noderestriction_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/server/admission/noderestriction"
)

var (
	nodeA = &user.DefaultInfo{Name: "system:node:node-a", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	admin = &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}

	podsGVR     = corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR    = corev1.SchemeGroupVersion.WithResource("nodes")
	pvcsGVR     = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	saGVR       = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	leasesGVR   = coordinationv1.SchemeGroupVersion.WithResource("leases")
	csiNodesGVR = storagev1.SchemeGroupVersion.WithResource("csinodes")
	csrGVR      = certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
)

func newPlugin(t *testing.T, authz authorizer.UnconditionalAuthorizer, objs ...runtime.Object) *noderestriction.Plugin {
	t.Helper()
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	sas := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *corev1.Pod:
			err = pods.Add(o)
		case *corev1.Node:
			err = nodes.Add(o)
		case *corev1.ServiceAccount:
			err = sas.Add(o)
		default:
			t.Fatalf("unexpected %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	p := noderestriction.New(corev1listers.NewPodLister(pods), corev1listers.NewNodeLister(nodes), corev1listers.NewServiceAccountLister(sas), authz)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p
}

func attrs(u user.Info, op admission.Operation, gvr schema.GroupVersionResource, sub, ns, name string, obj, old runtime.Object) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, schema.GroupVersionKind{}, ns, name, gvr, sub, op, nil, false, u)
}

func boundPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: apiUID("uid-" + name), Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: "default", Volumes: []corev1.Volume{{
			Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}},
		}}},
	}
}

func apiUID(s string) k8stypes.UID { return k8stypes.UID(s) }

func mirrorPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "static-node-a",
			Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "hash"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "node-a-uid", Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:   "node-a",
			Containers: []corev1.Container{{Name: "c", Image: "i"}},
			Volumes: []corev1.Volume{
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "info", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{DownwardAPI: &corev1.DownwardAPIProjection{}},
				}}}},
			},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func nodeObj(name string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "node-a-uid", Labels: map[string]string{
		corev1.LabelHostname: name, corev1.LabelOSStable: "linux",
	}}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func withLabel(k, v string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Labels[k] = v }
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

func csrPEM(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestValidate(t *testing.T) {
	ownPod := boundPod("web", "node-a")
	otherPod := boundPod("db", "node-b")
	objs := []runtime.Object{ownPod, otherPod, nodeObj("node-a")}

	relabeled := ownPod.DeepCopy()
	relabeled.Labels["app"] = "evil"
	statusUpdate := ownPod.DeepCopy()
	statusUpdate.Status.Phase = corev1.PodRunning
	claimChange := ownPod.DeepCopy()
	claimChange.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "c", ResourceClaimName: ptr.To("x")}}

	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", ResourceVersion: "1"}}
	pvcResized := pvc.DeepCopy()
	pvcResized.ResourceVersion = "2"
	pvcResized.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
	pvcResized.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue}}
	pvcRelabeled := pvc.DeepCopy()
	pvcRelabeled.Labels = map[string]string{"x": "y"}

	tokenFor := func(pod *corev1.Pod, uid string, audiences ...string) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences:      audiences,
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: apiUID(uid)},
		}}
	}

	tests := []struct {
		name      string
		authz     authorizer.UnconditionalAuthorizer
		a         admission.Attributes
		wantErr   string // substring; empty means admitted
		notFound  bool
		forbidden bool
	}{
		// Not a node.
		{name: "other users are not restricted", a: attrs(admin, admission.Update, nodesGVR, "", "", "node-b", nodeObj("node-b"), nodeObj("node-b"))},
		{name: "node without a name", a: attrs(&user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}, admission.Create, podsGVR, "", "ns", "", mirrorPod(), nil),
			wantErr: "could not determine node", forbidden: true},

		// Mirror pods.
		{name: "mirror pod", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(), nil)},
		{name: "not a mirror pod", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.Annotations = nil }), nil),
			wantErr: "can only create mirror pods", forbidden: true},
		{name: "mirror pod for another node", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.Spec.NodeName = "node-b" }), nil),
			wantErr: "spec.nodeName set to itself", forbidden: true},
		{name: "mirror pod without owner", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences = nil }), nil),
			wantErr: "owner reference set to itself", forbidden: true},
		{name: "mirror pod owned by another node", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences[0].Name = "node-b" }), nil),
			wantErr: "owner reference set to itself", forbidden: true},
		{name: "mirror pod owner not controller", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }), nil),
			wantErr: "controller owner reference", forbidden: true},
		{name: "mirror pod blocking owner deletion", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences[0].BlockOwnerDeletion = ptr.To(true) }), nil),
			wantErr: "must not set blockOwnerDeletion", forbidden: true},
		{name: "mirror pod with stale node uid", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences[0].UID = "old" }), nil),
			wantErr: "UID mismatch", forbidden: true},
		{name: "mirror pod with service account", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "sa" }), nil),
			wantErr: "can not create pods that reference serviceaccounts", forbidden: true},
		{name: "mirror pod with secret volume", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}})
		}), nil), wantErr: "can not create pods that reference secrets", forbidden: true},
		{name: "mirror pod with configmap env", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}}
		}), nil), wantErr: "can not create pods that reference configmaps", forbidden: true},
		{name: "mirror pod with claim", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "d"}}})
		}), nil), wantErr: "reference persistentvolumeclaims", forbidden: true},
		{name: "mirror pod with token projection", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, boundPod("x", "").Spec.Volumes...)
		}), nil), wantErr: "serviceaccounts (via projected volumes)", forbidden: true},
		{name: "mirror pod with unknown volume", a: attrs(nodeA, admission.Create, podsGVR, "", "ns", "", mirrorPod(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "empty"})
		}), nil), wantErr: "unknown volume type", forbidden: true},

		// Pod deletes, updates, status, evictions.
		{name: "delete own pod", a: attrs(nodeA, admission.Delete, podsGVR, "", "ns", "web", nil, nil)},
		{name: "delete other node's pod", a: attrs(nodeA, admission.Delete, podsGVR, "", "ns", "db", nil, nil),
			wantErr: "can only delete pods with spec.nodeName set to itself", forbidden: true},
		{name: "delete missing pod", a: attrs(nodeA, admission.Delete, podsGVR, "", "ns", "gone", nil, nil), wantErr: "not found", notFound: true},
		{name: "update pod", a: attrs(nodeA, admission.Update, podsGVR, "", "ns", "web", ownPod, ownPod),
			wantErr: "can only create and delete mirror pods", forbidden: true},
		{name: "own pod status", a: attrs(nodeA, admission.Update, podsGVR, "status", "ns", "web", statusUpdate, ownPod)},
		{name: "other node's pod status", a: attrs(nodeA, admission.Update, podsGVR, "status", "ns", "db", otherPod, otherPod),
			wantErr: "can only update pod status for pods with spec.nodeName set to itself", forbidden: true},
		{name: "labels through status", a: attrs(nodeA, admission.Update, podsGVR, "status", "ns", "web", relabeled, ownPod),
			wantErr: "cannot update labels through pod status", forbidden: true},
		{name: "claim statuses through status", a: attrs(nodeA, admission.Update, podsGVR, "status", "ns", "web", claimChange, ownPod),
			wantErr: "cannot update resource claim statues", forbidden: true},
		{name: "evict own pod", a: attrs(nodeA, admission.Create, podsGVR, "eviction", "ns", "web", &policyv1.Eviction{}, nil)},
		{name: "evict own pod named in body", a: attrs(nodeA, admission.Create, podsGVR, "eviction", "ns", "", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, nil)},
		{name: "evict other node's pod", a: attrs(nodeA, admission.Create, podsGVR, "eviction", "ns", "db", &policyv1.Eviction{}, nil),
			wantErr: "can only evict pods with spec.nodeName set to itself", forbidden: true},
		{name: "pod exec", a: attrs(nodeA, admission.Create, podsGVR, "exec", "ns", "web", nil, nil),
			wantErr: "unexpected pod subresource", forbidden: true},

		// Nodes.
		{name: "register own node with kubelet labels", a: attrs(nodeA, admission.Create, nodesGVR, "", "", "node-a", nodeObj("node-a",
			withLabel(corev1.LabelTopologyZone, "z"), withLabel(corev1.LabelInstanceTypeStable, "big"),
			withLabel("kubelet.kubernetes.io/x", "1"), withLabel("foo.node.kubernetes.io/y", "1"), withLabel("example.com/team", "a")), nil)},
		{name: "register with node-role label", a: attrs(nodeA, admission.Create, nodesGVR, "", "", "node-a", nodeObj("node-a", withLabel("node-role.kubernetes.io/control-plane", "")), nil),
			wantErr: "not allowed to set the following labels: node-role.kubernetes.io/control-plane", forbidden: true},
		{name: "register with node-restriction label", a: attrs(nodeA, admission.Create, nodesGVR, "", "", "node-a", nodeObj("node-a", withLabel("node-restriction.kubernetes.io/secure", "y")), nil),
			wantErr: "node-restriction.kubernetes.io/secure", forbidden: true},
		{name: "register with config source", a: attrs(nodeA, admission.Create, nodesGVR, "", "", "node-a", nodeObj("node-a", func(n *corev1.Node) { n.Spec.ConfigSource = &corev1.NodeConfigSource{} }), nil),
			wantErr: "non-nil configSource", forbidden: true},
		{name: "register another node", a: attrs(nodeA, admission.Create, nodesGVR, "", "", "node-b", nodeObj("node-b"), nil),
			wantErr: `node "node-a" is not allowed to modify node "node-b"`, forbidden: true},
		{name: "update own node status", a: attrs(nodeA, admission.Update, nodesGVR, "status", "", "node-a",
			nodeObj("node-a", func(n *corev1.Node) { n.Status.Phase = corev1.NodeRunning }), nodeObj("node-a"))},
		{name: "update own allowed label", a: attrs(nodeA, admission.Update, nodesGVR, "", "", "node-a",
			nodeObj("node-a", withLabel(corev1.LabelTopologyRegion, "r")), nodeObj("node-a"))},
		{name: "add node-role label", a: attrs(nodeA, admission.Update, nodesGVR, "", "", "node-a",
			nodeObj("node-a", withLabel("node-role.kubernetes.io/worker", "")), nodeObj("node-a")),
			wantErr: "is not allowed to modify labels: node-role.kubernetes.io/worker", forbidden: true},
		{name: "remove restricted label set by admin", a: attrs(nodeA, admission.Update, nodesGVR, "", "", "node-a",
			nodeObj("node-a"), nodeObj("node-a", withLabel("node-restriction.kubernetes.io/pool", "gpu"))),
			wantErr: "node-restriction.kubernetes.io/pool", forbidden: true},
		{name: "keep admin label unchanged", a: attrs(nodeA, admission.Update, nodesGVR, "status", "", "node-a",
			nodeObj("node-a", withLabel("node-role.kubernetes.io/worker", "")), nodeObj("node-a", withLabel("node-role.kubernetes.io/worker", "")))},
		{name: "remove own taint", a: attrs(nodeA, admission.Update, nodesGVR, "", "", "node-a",
			nodeObj("node-a"), nodeObj("node-a", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} })),
			wantErr: "not allowed to modify taints", forbidden: true},
		{name: "change owner references", a: attrs(nodeA, admission.Update, nodesGVR, "", "", "node-a",
			nodeObj("node-a", func(n *corev1.Node) { n.OwnerReferences = []metav1.OwnerReference{{Name: "x"}} }), nodeObj("node-a")),
			wantErr: "not allowed to modify ownerReferences", forbidden: true},
		{name: "update another node", a: attrs(nodeA, admission.Update, nodesGVR, "status", "", "node-b", nodeObj("node-b"), nodeObj("node-b")),
			wantErr: "not allowed to modify node", forbidden: true},
		{name: "delete own node", a: attrs(nodeA, admission.Delete, nodesGVR, "", "", "node-a", nil, nil)},

		// Claims.
		{name: "pvc status resize", a: attrs(nodeA, admission.Update, pvcsGVR, "status", "ns", "data", pvcResized, pvc)},
		{name: "pvc status with other changes", a: attrs(nodeA, admission.Update, pvcsGVR, "status", "ns", "data", pvcRelabeled, pvc),
			wantErr: "not allowed to update fields other than", forbidden: true},
		{name: "pvc spec", a: attrs(nodeA, admission.Update, pvcsGVR, "", "ns", "data", pvc, pvc),
			wantErr: "may only update PVC status", forbidden: true},

		// Service account tokens.
		{name: "token for own pod", a: attrs(nodeA, admission.Create, saGVR, "token", "ns", "default", tokenFor(ownPod, "uid-web"), nil)},
		{name: "token for other node's pod", a: attrs(nodeA, admission.Create, saGVR, "token", "ns", "default", tokenFor(otherPod, "uid-db"), nil),
			wantErr: "bound to a pod scheduled on a different node", forbidden: true},
		{name: "token without pod binding", a: attrs(nodeA, admission.Create, saGVR, "token", "ns", "default", &authenticationv1.TokenRequest{}, nil),
			wantErr: "not bound to a pod", forbidden: true},
		{name: "token without uid", a: attrs(nodeA, admission.Create, saGVR, "token", "ns", "default", tokenFor(ownPod, ""), nil),
			wantErr: "without a uid", forbidden: true},
		{name: "token with stale uid", a: attrs(nodeA, admission.Create, saGVR, "token", "ns", "default", tokenFor(ownPod, "old"), nil),
			wantErr: "does not match the UID in record", forbidden: true},
		{name: "token for missing pod", a: attrs(nodeA, admission.Create, saGVR, "token", "ns", "default", tokenFor(boundPod("gone", "node-a"), "x"), nil),
			wantErr: "not found", notFound: true},
		{name: "token for audience the pod does not use", a: attrs(nodeA, admission.Create, saGVR, "token", "ns", "default", tokenFor(ownPod, "uid-web", "vault"), nil),
			wantErr: `not authorized to request tokens for audience "vault"`, forbidden: true},
		{name: "token audience granted by authorizer", authz: allowAll{}, a: attrs(nodeA, admission.Create, saGVR, "token", "ns", "default", tokenFor(ownPod, "uid-web", "vault"), nil)},
		{name: "token with two audiences", authz: allowAll{}, a: attrs(nodeA, admission.Create, saGVR, "token", "ns", "default", tokenFor(ownPod, "uid-web", "a", "b"), nil),
			wantErr: "0 or 1 audiences", forbidden: true},

		// Leases.
		{name: "create own lease", a: attrs(nodeA, admission.Create, leasesGVR, "", "kube-node-lease", "", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, nil)},
		{name: "create other node's lease", a: attrs(nodeA, admission.Create, leasesGVR, "", "kube-node-lease", "", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}, nil),
			wantErr: "same name as the requesting node", forbidden: true},
		{name: "update own lease", a: attrs(nodeA, admission.Update, leasesGVR, "", "kube-node-lease", "node-a", &coordinationv1.Lease{}, &coordinationv1.Lease{})},
		{name: "update other node's lease", a: attrs(nodeA, admission.Update, leasesGVR, "", "kube-node-lease", "node-b", &coordinationv1.Lease{}, &coordinationv1.Lease{}),
			wantErr: "same name as the requesting node", forbidden: true},
		{name: "lease outside kube-node-lease", a: attrs(nodeA, admission.Create, leasesGVR, "", "kube-system", "", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, nil),
			wantErr: `can only access leases in the "kube-node-lease" system namespace`, forbidden: true},

		// CSINodes.
		{name: "create own csinode", a: attrs(nodeA, admission.Create, csiNodesGVR, "", "", "", &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, nil)},
		{name: "create other csinode", a: attrs(nodeA, admission.Create, csiNodesGVR, "", "", "", &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}, nil),
			wantErr: "same name as the requesting node", forbidden: true},

		// Certificate requests.
		{name: "csr for own client cert", a: attrs(nodeA, admission.Create, csrGVR, "", "", "", &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Request: csrPEM(t, "system:node:node-a")}}, nil)},
		{name: "csr for another node's serving cert", a: attrs(nodeA, admission.Create, csrGVR, "", "", "", &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeletServingSignerName, Request: csrPEM(t, "system:node:node-b")}}, nil),
			wantErr: "CN=system:node:node-a", forbidden: true},
		{name: "csr that does not parse", a: attrs(nodeA, admission.Create, csrGVR, "", "", "", &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeletServingSignerName, Request: []byte("junk")}}, nil),
			wantErr: "unable to parse csr", forbidden: true},
		{name: "csr for another signer", a: attrs(nodeA, admission.Create, csrGVR, "", "", "", &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: "example.com/other", Request: []byte("junk")}}, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, tc.authz, objs...)
			if !p.Handles(tc.a.GetOperation()) {
				t.Fatalf("plugin does not handle %s", tc.a.GetOperation())
			}
			err := p.Admit(context.Background(), tc.a, nil)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if tc.forbidden && !apierrors.IsForbidden(err) {
				t.Errorf("err = %v, want Forbidden", err)
			}
			if tc.notFound && !apierrors.IsNotFound(err) {
				t.Errorf("err = %v, want NotFound", err)
			}
		})
	}
}

func TestHandlesAndName(t *testing.T) {
	p := newPlugin(t, nil)
	if noderestriction.Name != "NodeRestriction" {
		t.Errorf("Name = %q", noderestriction.Name)
	}
	if p.Handles(admission.Connect) {
		t.Error("plugin should not handle CONNECT")
	}
	if err := noderestriction.New(nil, nil, nil, nil).ValidateInitialization(); err == nil {
		t.Error("ValidateInitialization without listers: want an error")
	}
}
