package node_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/k1s/k1s/server/auth/node"
	"github.com/k1s/k1s/server/auth/rbac/bootstrappolicy"
)

// start builds the authorizer over a fake clientset holding objs and waits
// for its index to sync.
func start(t *testing.T, objs ...runtime.Object) (*node.Authorizer, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	a, err := node.New(f.Core().V1().Pods().Informer(), f.Core().V1().PersistentVolumes().Informer(), bootstrappolicy.NodeRules())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), a.HasSynced) {
		t.Fatal("index did not sync")
	}
	return a, client
}

func nodeUser(name string) user.Info {
	return &user.DefaultInfo{Name: "system:node:" + name, Groups: []string{user.NodesGroup, user.AllAuthenticated}}
}

func req(u user.Info, verb, group, resource, sub, ns, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource,
		Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
}

func withFieldSelector(a authorizer.AttributesRecord, sel string) authorizer.AttributesRecord {
	s, err := fields.ParseSelector(sel)
	if err != nil {
		panic(err)
	}
	a.FieldSelectorRequirements = s.Requirements()
	return a
}

// fixture: pod "web" on node-a uses many references; pod "db" on node-b uses
// its own; "pending" is not scheduled; "mirror" is a mirror pod on node-a
// naming a secret (which must not be granted).
func fixture() []runtime.Object {
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.PodSpec{
			NodeName:           "node-a",
			ServiceAccountName: "web-sa",
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}},
			InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env-secret"}}},
			}}},
			Containers: []corev1.Container{{
				Name: "app",
				EnvFrom: []corev1.EnvFromSource{
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}}},
				},
				Env: []corev1.EnvVar{
					{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "key-secret"}, Key: "k"}}},
					{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "key-cm"}, Key: "k"}}},
				},
			}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug",
				Env: []corev1.EnvVar{{Name: "C", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "debug-secret"}, Key: "k"}}}},
			}}},
			Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
				{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
			},
		},
	}
	db := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"},
		Spec: corev1.PodSpec{
			NodeName:           "node-b",
			ServiceAccountName: "db-sa",
			Containers:         []corev1.Container{{Name: "db"}},
			Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-secret"}}},
				{Name: "shared", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "db-data"}}},
			},
		},
	}
	pending := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pending"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "pending-secret"}}},
		}},
	}
	mirror := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mirror", Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}},
		Spec: corev1.PodSpec{NodeName: "node-a", Volumes: []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "mirror-secret"}}},
		}},
	}
	pvA := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-a"},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:                     "d",
				NodeStageSecretRef:         &corev1.SecretReference{Namespace: "storage", Name: "stage-secret"},
				ControllerPublishSecretRef: &corev1.SecretReference{Namespace: "storage", Name: "controller-secret"},
			}},
		},
	}
	pvB := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-b"},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "db-data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{
				CephMonitors: []string{"m"}, RBDImage: "i",
				SecretRef: &corev1.SecretReference{Name: "rbd-secret"}, // namespace of the claim
			}},
		},
	}
	unbound := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-free"}}
	return []runtime.Object{web, db, pending, mirror, pvA, pvB, unbound}
}

func TestAuthorize(t *testing.T) {
	a, _ := start(t, fixture()...)
	na, nb := nodeUser("node-a"), nodeUser("node-b")
	allow, none := authorizer.DecisionAllow, authorizer.DecisionNoOpinion

	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  authorizer.Decision
	}{
		// Secrets: every kind of reference, only for the node running the pod.
		{"secret volume", req(na, "get", "", "secrets", "", "ns", "vol-secret"), allow},
		{"secret used only by node-b's pod", req(na, "get", "", "secrets", "", "ns", "db-secret"), none},
		{"node-b reads its secret", req(nb, "get", "", "secrets", "", "ns", "db-secret"), allow},
		{"secret shared by pods on both nodes", req(nb, "get", "", "secrets", "", "ns", "vol-secret"), allow},
		{"image pull secret", req(na, "get", "", "secrets", "", "ns", "pull"), allow},
		{"init container envFrom secret", req(na, "get", "", "secrets", "", "ns", "init-env-secret"), allow},
		{"env valueFrom secret", req(na, "get", "", "secrets", "", "ns", "key-secret"), allow},
		{"ephemeral container secret", req(na, "get", "", "secrets", "", "ns", "debug-secret"), allow},
		{"projected secret", req(na, "get", "", "secrets", "", "ns", "proj-secret"), allow},
		{"csi inline node publish secret", req(na, "get", "", "secrets", "", "ns", "csi-secret"), allow},
		{"secret through pvc and pv", req(na, "get", "", "secrets", "", "storage", "stage-secret"), allow},
		{"pv controller-only secret", req(na, "get", "", "secrets", "", "storage", "controller-secret"), none},
		{"pv secret defaulting to claim namespace", req(nb, "get", "", "secrets", "", "ns", "rbd-secret"), allow},
		{"pv secret of node-b's volume", req(na, "get", "", "secrets", "", "ns", "rbd-secret"), none},
		{"secret in another namespace", req(na, "get", "", "secrets", "", "other", "vol-secret"), none},
		{"secret of unscheduled pod", req(na, "get", "", "secrets", "", "ns", "pending-secret"), none},
		{"secret named by a mirror pod", req(na, "get", "", "secrets", "", "ns", "mirror-secret"), none},
		{"watch one secret", req(na, "watch", "", "secrets", "", "ns", "vol-secret"), allow},
		{"list all secrets", req(na, "list", "", "secrets", "", "ns", ""), none},
		{"update a used secret", req(na, "update", "", "secrets", "", "ns", "vol-secret"), none},
		{"cluster-wide secret read", req(na, "get", "", "secrets", "", "", "vol-secret"), none},

		// ConfigMaps.
		{"configmap volume", req(na, "get", "", "configmaps", "", "ns", "vol-cm"), allow},
		{"configmap envFrom", req(na, "get", "", "configmaps", "", "ns", "env-cm"), allow},
		{"configmap valueFrom", req(na, "get", "", "configmaps", "", "ns", "key-cm"), allow},
		{"projected configmap", req(na, "get", "", "configmaps", "", "ns", "proj-cm"), allow},
		{"configmap not used", req(na, "get", "", "configmaps", "", "ns", "other-cm"), none},
		{"configmap of node-a to node-b", req(nb, "get", "", "configmaps", "", "ns", "vol-cm"), none},

		// Claims and volumes.
		{"pvc", req(na, "get", "", "persistentvolumeclaims", "", "ns", "data"), allow},
		{"generic ephemeral claim", req(na, "get", "", "persistentvolumeclaims", "", "ns", "web-scratch"), allow},
		{"pvc of other node", req(na, "get", "", "persistentvolumeclaims", "", "ns", "db-data"), none},
		{"list pvcs", req(na, "list", "", "persistentvolumeclaims", "", "ns", ""), none},
		{"pvc status update", req(na, "update", "", "persistentvolumeclaims", "status", "ns", "data"), allow},
		{"pvc status of other node", req(nb, "patch", "", "persistentvolumeclaims", "status", "ns", "data"), none},
		{"pv bound to used claim", req(na, "get", "", "persistentvolumes", "", "", "pv-a"), allow},
		{"pv of other node", req(na, "get", "", "persistentvolumes", "", "", "pv-b"), none},
		{"unbound pv", req(na, "get", "", "persistentvolumes", "", "", "pv-free"), none},

		// Service accounts and tokens.
		{"get own pod's service account", req(na, "get", "", "serviceaccounts", "", "ns", "web-sa"), allow},
		{"get other node's service account", req(na, "get", "", "serviceaccounts", "", "ns", "db-sa"), none},
		{"token for own pod's service account", req(na, "create", "", "serviceaccounts", "token", "ns", "web-sa"), allow},
		{"token for other node's service account", req(na, "create", "", "serviceaccounts", "token", "ns", "db-sa"), none},
		{"token without name", req(na, "create", "", "serviceaccounts", "token", "ns", ""), none},
		{"create service account", req(na, "create", "", "serviceaccounts", "", "ns", "web-sa"), none},

		// Pods.
		{"get own pod", req(na, "get", "", "pods", "", "ns", "web"), allow},
		{"get own mirror pod", req(na, "get", "", "pods", "", "ns", "mirror"), allow},
		{"get other node's pod", req(na, "get", "", "pods", "", "ns", "db"), none},
		{"list pods for own node", withFieldSelector(req(na, "list", "", "pods", "", "", ""), "spec.nodeName=node-a"), allow},
		{"watch pods for own node", withFieldSelector(req(na, "watch", "", "pods", "", "", ""), "spec.nodeName==node-a"), allow},
		{"list pods for other node", withFieldSelector(req(na, "list", "", "pods", "", "", ""), "spec.nodeName=node-b"), none},
		{"list all pods", req(na, "list", "", "pods", "", "", ""), none},
		{"create mirror pod", req(na, "create", "", "pods", "", "ns", ""), allow},
		{"delete pod", req(na, "delete", "", "pods", "", "ns", "web"), allow},
		{"update pod", req(na, "update", "", "pods", "", "ns", "web"), none},
		{"pod status", req(na, "patch", "", "pods", "status", "ns", "web"), allow},
		{"pod eviction", req(na, "create", "", "pods", "eviction", "ns", "web"), allow},
		{"pod exec", req(na, "create", "", "pods", "exec", "ns", "web"), none},

		// Nodes.
		{"get own node", req(na, "get", "", "nodes", "", "", "node-a"), allow},
		{"get own node before it exists", req(nodeUser("node-new"), "get", "", "nodes", "", "", "node-new"), allow},
		{"get other node", req(na, "get", "", "nodes", "", "", "node-b"), none},
		{"list all nodes", req(na, "list", "", "nodes", "", "", ""), none},
		{"update node (admission limits to own)", req(na, "update", "", "nodes", "", "", "node-a"), allow},
		{"update node status", req(na, "patch", "", "nodes", "status", "", "node-a"), allow},
		{"delete node", req(na, "delete", "", "nodes", "", "", "node-a"), none},

		// Leases.
		{"own lease", req(na, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-a"), allow},
		{"create lease (name checked by admission)", req(na, "create", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), allow},
		{"other node's lease", req(na, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-b"), none},
		{"lease elsewhere", req(na, "get", "coordination.k8s.io", "leases", "", "kube-system", "node-a"), none},
		{"list leases", req(na, "list", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), none},

		// CSINodes.
		{"own csinode", req(na, "get", "storage.k8s.io", "csinodes", "", "", "node-a"), allow},
		{"other csinode", req(na, "get", "storage.k8s.io", "csinodes", "", "", "node-b"), none},

		// PodCertificateRequests: create (NodeRestriction checks the
		// content), read only through a spec.nodeName selector.
		{"create pcr", req(na, "create", "certificates.k8s.io", "podcertificaterequests", "", "ns", ""), allow},
		{"list own pcrs by name", withFieldSelector(req(na, "list", "certificates.k8s.io", "podcertificaterequests", "", "ns", ""), "spec.nodeName=node-a,metadata.name=req-1"), allow},
		{"list other node's pcrs", withFieldSelector(req(na, "list", "certificates.k8s.io", "podcertificaterequests", "", "ns", ""), "spec.nodeName=node-b"), none},
		{"list all pcrs", req(na, "list", "certificates.k8s.io", "podcertificaterequests", "", "", ""), none},
		{"get pcr", req(na, "get", "certificates.k8s.io", "podcertificaterequests", "", "ns", "req-1"), none},
		{"update pcr status", req(na, "update", "certificates.k8s.io", "podcertificaterequests", "status", "ns", "req-1"), none},
		{"delete pcr", req(na, "delete", "certificates.k8s.io", "podcertificaterequests", "", "ns", "req-1"), none},
		{"read clustertrustbundles", req(na, "list", "certificates.k8s.io", "clustertrustbundles", "", "", ""), allow},

		// Not indexed in k1s: refused rather than granted wholesale.
		{"volumeattachments refused", req(na, "get", "storage.k8s.io", "volumeattachments", "", "", "va"), none},
		{"resourceclaims refused", req(na, "get", "resource.k8s.io", "resourceclaims", "", "ns", "c"), none},

		// Static node rules for everything else.
		{"create events", req(na, "create", "", "events", "", "ns", ""), allow},
		{"read services", req(na, "list", "", "services", "", "", ""), allow},
		{"token review", req(na, "create", "authentication.k8s.io", "tokenreviews", "", "", ""), allow},
		{"subject access review", req(na, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""), allow},
		{"create csr", req(na, "create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), allow},
		{"read runtimeclasses", req(na, "list", "node.k8s.io", "runtimeclasses", "", "", ""), allow},
		{"not in node rules", req(na, "list", "apps", "deployments", "", "", ""), none},
		{"non-resource url", authorizer.AttributesRecord{User: na, Verb: "get", Path: "/metrics"}, none},

		// Not a node, or an unnamed one.
		{"not a node", req(&user.DefaultInfo{Name: "system:node:node-a"}, "get", "", "secrets", "", "ns", "vol-secret"), none},
		{"unnamed node", req(nodeUser(""), "create", "", "events", "", "ns", ""), none},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("decision = %v (reason %q), want %v", got, reason, tc.want)
			}
		})
	}
}

func TestAuthorizerFollowsPodChanges(t *testing.T) {
	a, client := start(t, fixture()...)
	ctx := context.Background()
	na := nodeUser("node-a")
	get := func(name string) authorizer.Decision {
		d, _, _ := a.Authorize(ctx, req(na, "get", "", "secrets", "", "ns", name))
		return d
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
		if err != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
	}

	// A pod scheduled to node-a later grants its secret.
	late := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"},
		Spec: corev1.PodSpec{NodeName: "node-a", Volumes: []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "late-secret"}}},
		}},
	}
	if get("late-secret") != authorizer.DecisionNoOpinion {
		t.Fatal("late-secret allowed before its pod exists")
	}
	if _, err := client.CoreV1().Pods("ns").Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("late-secret to be allowed", func() bool { return get("late-secret") == authorizer.DecisionAllow })

	// Deleting the only pod using db-secret and vol-secret on node-b revokes
	// node-b's access; node-a keeps vol-secret through web.
	if err := client.CoreV1().Pods("ns").Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nb := nodeUser("node-b")
	waitFor("db-secret to be revoked", func() bool {
		d, _, _ := a.Authorize(ctx, req(nb, "get", "", "secrets", "", "ns", "db-secret"))
		return d == authorizer.DecisionNoOpinion
	})
	if d, _, _ := a.Authorize(ctx, req(nb, "get", "", "secrets", "", "ns", "vol-secret")); d != authorizer.DecisionNoOpinion {
		t.Error("node-b still reads vol-secret after its pod was deleted")
	}
	if get("vol-secret") != authorizer.DecisionAllow {
		t.Error("node-a lost vol-secret, still used by web")
	}

	// Unbinding pv-a from its claim revokes the PV's secret.
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, "pv-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Spec.ClaimRef = nil
	if _, err := client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("stage-secret to be revoked", func() bool {
		d, _, _ := a.Authorize(ctx, req(na, "get", "", "secrets", "", "storage", "stage-secret"))
		return d == authorizer.DecisionNoOpinion
	})
}

func TestIdentityAndRulesFor(t *testing.T) {
	tests := []struct {
		u        user.Info
		wantName string
		wantNode bool
	}{
		{nodeUser("n1"), "n1", true},
		{&user.DefaultInfo{Name: "system:node:n1"}, "", false},
		{&user.DefaultInfo{Name: "n1", Groups: []string{user.NodesGroup}}, "", false},
		{nodeUser(""), "", true},
		{nil, "", false},
	}
	for _, tc := range tests {
		name, isNode := node.Identity(tc.u)
		if name != tc.wantName || isNode != tc.wantNode {
			t.Errorf("Identity(%v) = %q, %v; want %q, %v", tc.u, name, isNode, tc.wantName, tc.wantNode)
		}
	}

	a, _ := start(t)
	if _, _, incomplete, err := a.RulesFor(context.Background(), nodeUser("n1"), "ns"); !incomplete || err == nil {
		t.Errorf("RulesFor(node) incomplete=%v err=%v, want incomplete with an error", incomplete, err)
	}
	if _, _, incomplete, err := a.RulesFor(context.Background(), &user.DefaultInfo{Name: "bob"}, "ns"); incomplete || err != nil {
		t.Errorf("RulesFor(bob) incomplete=%v err=%v, want complete", incomplete, err)
	}
}
