package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/integration/framework"
)

// groupSample is a resource of the groups issue 19 added, with a valid
// object, an optional status change, and an invalid object whose error
// must name field.
type groupSample struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	obj        runtime.Object
	// status, when set, changes the status of a stored object (as
	// unstructured); check then verifies the stored result.
	status func(u *unstructured.Unstructured)
	check  func(t *testing.T, u *unstructured.Unstructured)
	// invalid is refused with an error naming field.
	invalid runtime.Object
	field   string
}

// caPEM returns a self-signed CA certificate.
func caPEM(t testing.TB, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// stubCSR returns a stub PKCS#10 request of a new key (DER), with the key.
func stubCSR(t testing.TB) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

func groupSamples(t testing.TB) []groupSample {
	pcrSpec := func() certificatesv1.PodCertificateRequestSpec {
		csr, _ := stubCSR(t)
		return certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/crud", PodName: "p", PodUID: "6b1f5a26-8d7c-4b1a-9e34-1f0c2b3d4e5f",
			ServiceAccountName: "default", ServiceAccountUID: "6b1f5a26-8d7c-4b1a-9e34-1f0c2b3d4e60",
			NodeName: "n", NodeUID: "6b1f5a26-8d7c-4b1a-9e34-1f0c2b3d4e61", StubPKCS10Request: csr,
		}
	}
	badPCR := pcrSpec()
	badPCR.MaxExpirationSeconds = ptr.To[int32](60)
	claimSpec := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "req-0", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "dra.example.com"},
	}}}}
	badClaim := claimSpec.DeepCopy()
	badClaim.Devices.Requests[0].Exactly.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver =="}}}
	now := metav1.Now()
	hpaSpec := autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MaxReplicas:    3,
	}

	return []groupSample{
		{gvr: nodev1.SchemeGroupVersion.WithResource("runtimeclasses"), obj: &nodev1.RuntimeClass{ObjectMeta: meta("crud-rc"), Handler: "runc"},
			invalid: &nodev1.RuntimeClass{ObjectMeta: meta("bad-rc"), Handler: "Not_A_Label"}, field: "handler"},

		{gvr: storagev1.SchemeGroupVersion.WithResource("csidrivers"), obj: &storagev1.CSIDriver{ObjectMeta: meta("crud.csi.example.com")},
			check: func(t *testing.T, u *unstructured.Unstructured) {
				if v, _, _ := unstructured.NestedBool(u.Object, "spec", "attachRequired"); !v {
					t.Errorf("attachRequired not defaulted to true: %v", u.Object["spec"])
				}
			},
			invalid: &storagev1.CSIDriver{ObjectMeta: meta("bad.csi.example.com"), Spec: storagev1.CSIDriverSpec{
				FSGroupPolicy: ptr.To(storagev1.FSGroupPolicy("Sometimes"))}}, field: "spec.fsGroupPolicy"},
		{gvr: storagev1.SchemeGroupVersion.WithResource("csinodes"), obj: &storagev1.CSINode{ObjectMeta: meta("crud-node"), Spec: storagev1.CSINodeSpec{
			Drivers: []storagev1.CSINodeDriver{{Name: "crud.csi.example.com", NodeID: "n1", TopologyKeys: []string{"topology.example.com/zone"}}}}},
			invalid: &storagev1.CSINode{ObjectMeta: meta("bad-node"), Spec: storagev1.CSINodeSpec{
				Drivers: []storagev1.CSINodeDriver{{Name: "crud.csi.example.com"}}}}, field: "spec.drivers[0].nodeID"},
		{gvr: storagev1.SchemeGroupVersion.WithResource("csistoragecapacities"), namespaced: true, obj: &storagev1.CSIStorageCapacity{
			ObjectMeta: meta("crud-capacity"), StorageClassName: "standard", Capacity: ptr.To(resource.MustParse("1Gi"))},
			invalid: &storagev1.CSIStorageCapacity{ObjectMeta: meta("bad-capacity"), StorageClassName: "Not A Class"}, field: "storageClassName"},
		{gvr: storagev1.SchemeGroupVersion.WithResource("volumeattachments"), obj: &storagev1.VolumeAttachment{ObjectMeta: meta("crud-va"),
			Spec: storagev1.VolumeAttachmentSpec{Attacher: "crud.csi.example.com", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv1")}}},
			status: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, true, "status", "attached")
			},
			check: func(t *testing.T, u *unstructured.Unstructured) {
				if v, _, _ := unstructured.NestedBool(u.Object, "status", "attached"); !v {
					t.Errorf("status.attached not stored: %v", u.Object["status"])
				}
			},
			invalid: &storagev1.VolumeAttachment{ObjectMeta: meta("bad-va"), Spec: storagev1.VolumeAttachmentSpec{Attacher: "crud.csi.example.com", NodeName: "n1"}},
			field:   "spec.source"},
		{gvr: storagev1.SchemeGroupVersion.WithResource("volumeattributesclasses"), obj: &storagev1.VolumeAttributesClass{ObjectMeta: meta("crud-vac"),
			DriverName: "crud.csi.example.com", Parameters: map[string]string{"iops": "100"}},
			invalid: &storagev1.VolumeAttributesClass{ObjectMeta: meta("bad-vac"), DriverName: "crud.csi.example.com"}, field: "parameters"},

		{gvr: certificatesv1.SchemeGroupVersion.WithResource("clustertrustbundles"), obj: &certificatesv1.ClusterTrustBundle{ObjectMeta: meta("example.com:crud:ca"),
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/crud", TrustBundle: caPEM(t, "crud")}},
			invalid: &certificatesv1.ClusterTrustBundle{ObjectMeta: meta("example.com:crud:bad"),
				Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/crud", TrustBundle: "not pem"}}, field: "spec.trustBundle"},
		{gvr: certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests"), namespaced: true, obj: &certificatesv1.PodCertificateRequest{ObjectMeta: meta("crud-pcr"), Spec: pcrSpec()},
			check: func(t *testing.T, u *unstructured.Unstructured) {
				if v, _, _ := unstructured.NestedInt64(u.Object, "spec", "maxExpirationSeconds"); v != 86400 {
					t.Errorf("maxExpirationSeconds = %d, want the default 86400", v)
				}
			},
			invalid: &certificatesv1.PodCertificateRequest{ObjectMeta: meta("bad-pcr"), Spec: badPCR}, field: "spec.maxExpirationSeconds"},

		{gvr: resourcev1.SchemeGroupVersion.WithResource("deviceclasses"), obj: &resourcev1.DeviceClass{ObjectMeta: meta("crud-class"), Spec: resourcev1.DeviceClassSpec{
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "dra.example.com"`}}}}},
			invalid: &resourcev1.DeviceClass{ObjectMeta: meta("bad-class"), Spec: resourcev1.DeviceClassSpec{
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver`}}}}}, field: "spec.selectors[0].cel.expression"},
		{gvr: resourcev1.SchemeGroupVersion.WithResource("resourceclaims"), namespaced: true, obj: &resourcev1.ResourceClaim{ObjectMeta: meta("crud-claim"), Spec: claimSpec},
			status: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, map[string]any{}, "status", "allocation")
			},
			check: func(t *testing.T, u *unstructured.Unstructured) {
				if _, ok, _ := unstructured.NestedMap(u.Object, "status", "allocation"); !ok {
					t.Errorf("status.allocation not stored: %v", u.Object["status"])
				}
				if c, _, _ := unstructured.NestedInt64(u.Object, "spec", "devices", "requests", "0", "exactly", "count"); c != 0 {
					t.Logf("count read through a nested path: %d", c)
				}
			},
			invalid: &resourcev1.ResourceClaim{ObjectMeta: meta("bad-claim"), Spec: *badClaim}, field: "spec.devices.requests[0].exactly.selectors[0].cel.expression"},
		{gvr: resourcev1.SchemeGroupVersion.WithResource("resourceclaimtemplates"), namespaced: true, obj: &resourcev1.ResourceClaimTemplate{ObjectMeta: meta("crud-template"),
			Spec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec}},
			invalid: &resourcev1.ResourceClaimTemplate{ObjectMeta: meta("bad-template"), Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{
				Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "req-0"}}}}}}, field: "spec.spec.devices.requests[0]"},
		{gvr: resourcev1.SchemeGroupVersion.WithResource("resourceslices"), obj: &resourcev1.ResourceSlice{ObjectMeta: meta("crud-slice"), Spec: resourcev1.ResourceSliceSpec{
			Driver: "dra.example.com", Pool: resourcev1.ResourcePool{Name: "cluster", Generation: 1, ResourceSliceCount: 1}, NodeName: ptr.To("no-such-node"),
			Devices: []resourcev1.Device{{Name: "device-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: ptr.To("x1")}}}}}},
			invalid: &resourcev1.ResourceSlice{ObjectMeta: meta("bad-slice"), Spec: resourcev1.ResourceSliceSpec{
				Driver: "dra.example.com", Pool: resourcev1.ResourcePool{Name: "cluster", ResourceSliceCount: 1}, NodeName: ptr.To("n"), AllNodes: ptr.To(true)}},
			field: "spec"},
		{gvr: resourcev1.SchemeGroupVersion.WithResource("devicetaintrules"), obj: &resourcev1.DeviceTaintRule{ObjectMeta: meta("crud-taint"), Spec: resourcev1.DeviceTaintRuleSpec{
			Taint: resourcev1.DeviceTaint{Key: "testing", Effect: resourcev1.DeviceTaintEffectNone}}},
			status: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
					"type": "Testing", "status": "True", "reason": "E2E", "message": "ignore", "lastTransitionTime": now.UTC().Format(time.RFC3339),
				}}, "status", "conditions")
			},
			check: func(t *testing.T, u *unstructured.Unstructured) {
				if _, ok, _ := unstructured.NestedString(u.Object, "spec", "taint", "timeAdded"); !ok {
					t.Errorf("taint.timeAdded not defaulted: %v", u.Object["spec"])
				}
			},
			invalid: &resourcev1.DeviceTaintRule{ObjectMeta: meta("bad-taint"), Spec: resourcev1.DeviceTaintRuleSpec{
				Taint: resourcev1.DeviceTaint{Key: "testing", Effect: "Sometimes"}}}, field: "spec.taint.effect"},

		{gvr: svmv1.SchemeGroupVersion.WithResource("storageversionmigrations"), obj: &svmv1.StorageVersionMigration{ObjectMeta: meta("crud-svm"),
			Spec: svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "apps", Resource: "deployments"}}},
			status: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "12345", "status", "resourceVersion")
			},
			check: func(t *testing.T, u *unstructured.Unstructured) {
				if rv, _, _ := unstructured.NestedString(u.Object, "status", "resourceVersion"); rv != "12345" {
					t.Errorf("status.resourceVersion = %q", rv)
				}
			},
			invalid: &svmv1.StorageVersionMigration{ObjectMeta: meta("bad-svm")}, field: "spec.resource.resource"},

		{gvr: autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), namespaced: true, obj: &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: meta("crud-hpa"), Spec: hpaSpec},
			status: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(2), "status", "desiredReplicas")
			},
			check: func(t *testing.T, u *unstructured.Unstructured) {
				if d, _, _ := unstructured.NestedInt64(u.Object, "status", "desiredReplicas"); d != 2 {
					t.Errorf("status.desiredReplicas = %d", d)
				}
			},
			invalid: &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta("bad-hpa"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: hpaSpec.ScaleTargetRef}}, field: "spec.maxReplicas"},
	}
}

// TestGroupDiscovery: the groups and resources issue 19 added are in
// discovery, with their status subresources and autoscaling/v2 preferred.
func TestGroupDiscovery(t *testing.T) {
	s := framework.StartAPI(t)
	disc := s.Client(t).Discovery()
	want := map[string][]string{
		"node.k8s.io/v1":             {"runtimeclasses"},
		"storage.k8s.io/v1":          {"csidrivers", "csinodes", "csinodes/status", "csistoragecapacities", "volumeattachments", "volumeattachments/status", "volumeattributesclasses", "storageclasses"},
		"certificates.k8s.io/v1":     {"clustertrustbundles", "podcertificaterequests", "podcertificaterequests/status", "certificatesigningrequests"},
		"resource.k8s.io/v1":         {"deviceclasses", "resourceclaims", "resourceclaims/status", "resourceclaimtemplates", "resourceslices", "devicetaintrules", "devicetaintrules/status"},
		"storagemigration.k8s.io/v1": {"storageversionmigrations", "storageversionmigrations/status"},
		"autoscaling/v1":             {"horizontalpodautoscalers", "horizontalpodautoscalers/status"},
		"autoscaling/v2":             {"horizontalpodautoscalers", "horizontalpodautoscalers/status"},
		"v1":                         {"pods/ephemeralcontainers"},
	}
	for gv, resources := range want {
		list, err := disc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Errorf("%s: %v", gv, err)
			continue
		}
		var got []string
		for _, r := range list.APIResources {
			got = append(got, r.Name)
		}
		for _, r := range resources {
			if !slices.Contains(got, r) {
				t.Errorf("%s lacks %s (has %v)", gv, r, got)
			}
		}
	}
	groups, err := disc.ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == "autoscaling" && g.PreferredVersion.Version != "v2" {
			t.Errorf("autoscaling prefers %s", g.PreferredVersion.Version)
		}
	}
}

// TestGroupResourcesCRUD creates, reads, lists, watches, updates, patches,
// writes the status of, lists by field and deletes (one by one and as a
// collection) an object of every resource issue 19 added, and checks that
// an invalid one is refused naming the field at fault.
func TestGroupResourcesCRUD(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	client := s.Client(t)
	dyn := s.Dynamic(t)
	const ns = "groups"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sm := range groupSamples(t) {
		t.Run(sm.gvr.Resource+"."+sm.gvr.Group, func(t *testing.T) {
			var ri dynamic.ResourceInterface = dyn.Resource(sm.gvr)
			if sm.namespaced {
				ri = dyn.Resource(sm.gvr).Namespace(ns)
			}
			obj := toUnstructured(t, sm.obj)
			name := obj.GetName()
			created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if created.GetUID() == "" || created.GetResourceVersion() == "" {
				t.Fatalf("create did not fill system metadata: %v", created.Object["metadata"])
			}
			got, err := ri.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: "test=crud", FieldSelector: "metadata.name=" + name})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(list.Items) != 1 {
				t.Fatalf("list returned %d items", len(list.Items))
			}
			w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), FieldSelector: "metadata.name=" + name})
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer w.Stop()

			got.SetLabels(map[string]string{"test": "crud", "updated": "yes"})
			updated, err := ri.Update(ctx, got, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			expectEvent(t, w, watch.Modified, name)
			if _, err := ri.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"merge":"yes"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatalf("merge patch: %v", err)
			}
			apply, _ := json.Marshal(map[string]any{
				"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(),
				"metadata": map[string]any{"name": name, "namespace": updated.GetNamespace(), "annotations": map[string]any{"applied": "yes"}},
			})
			applied, err := ri.Patch(ctx, name, types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "groups-test"})
			if err != nil {
				t.Fatalf("server-side apply: %v", err)
			}
			if applied.GetAnnotations()["applied"] != "yes" || applied.GetLabels()["merge"] != "yes" {
				t.Fatalf("apply result: annotations %v labels %v", applied.GetAnnotations(), applied.GetLabels())
			}
			if sm.status != nil {
				sm.status(applied)
				st, err := ri.UpdateStatus(ctx, applied, metav1.UpdateOptions{})
				if err != nil {
					t.Fatalf("update status: %v", err)
				}
				applied = st
			}
			if sm.check != nil {
				sm.check(t, applied)
			}

			if sm.invalid != nil {
				bad := toUnstructured(t, sm.invalid)
				_, err := ri.Create(ctx, bad, metav1.CreateOptions{})
				if !apierrors.IsInvalid(err) {
					t.Fatalf("invalid object: err = %v, want Invalid", err)
				}
				if !strings.Contains(err.Error(), sm.field) {
					t.Errorf("error %q does not name %s", err, sm.field)
				}
			}

			if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := ri.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get after delete: %v", err)
			}
			if _, err := ri.Create(ctx, toUnstructured(t, sm.obj), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create again: %v", err)
			}
			if err := ri.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "test=crud"}); err != nil {
				t.Fatalf("delete collection: %v", err)
			}
			if left, err := ri.List(ctx, metav1.ListOptions{LabelSelector: "test=crud"}); err != nil || len(left.Items) != 0 {
				t.Fatalf("after delete collection: %v items, err %v", len(left.Items), err)
			}
		})
	}
}

// TestGroupFieldSelectors: ResourceSlices select by node, driver and pool,
// ClusterTrustBundles and PodCertificateRequests by signer.
func TestGroupFieldSelectors(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)
	for i, node := range []string{"node-a", "node-b"} {
		_, err := c.ResourceV1().ResourceSlices().Create(ctx, &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec: resourcev1.ResourceSliceSpec{Driver: "dra.example.com", NodeName: ptr.To(node),
				Pool: resourcev1.ResourcePool{Name: []string{"pool-a", "pool-b"}[i], ResourceSliceCount: 1}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	for sel, want := range map[string]int{"spec.nodeName=node-b": 1, "spec.driver=dra.example.com": 2, "spec.pool.name=pool-a": 1, "spec.nodeName=node-c": 0} {
		l, err := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		if len(l.Items) != want {
			t.Errorf("%s: %d slices, want %d", sel, len(l.Items), want)
		}
	}
	if _, err := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.devices=x"}); err == nil {
		t.Error("an unsupported field selector was accepted")
	}
	for _, signer := range []string{"example.com/a", "example.com/b"} {
		_, err := c.CertificatesV1().ClusterTrustBundles().Create(ctx, &certificatesv1.ClusterTrustBundle{
			ObjectMeta: metav1.ObjectMeta{Name: strings.ReplaceAll(signer, "/", ":") + ":1"},
			Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: caPEM(t, signer)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	l, err := c.CertificatesV1().ClusterTrustBundles().List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=example.com/b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].Spec.SignerName != "example.com/b" {
		t.Errorf("bundles of example.com/b: %+v", l.Items)
	}
}

// TestRuntimeClassAdmission: a pod naming a RuntimeClass gets its overhead
// and scheduling; one naming a missing (or deleted) class is refused.
func TestRuntimeClassAdmission(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)
	rc, err := c.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxed"}, Handler: "runc",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("1Mi")}},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "yes"},
			Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Handler: ""}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "handler") {
		t.Errorf("class without a handler: %v", err)
	}
	pod := func(name, class string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			RuntimeClassName: &class, NodeSelector: map[string]string{"zone": "a"},
			Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}
	}
	got, err := c.CoreV1().Pods("default").Create(ctx, pod("with-class", rc.Name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Spec.Overhead[corev1.ResourceCPU]; q.Cmp(resource.MustParse("10m")) != 0 || len(got.Spec.Overhead) != 2 {
		t.Errorf("overhead = %v", got.Spec.Overhead)
	}
	if got.Spec.NodeSelector["sandbox"] != "yes" || got.Spec.NodeSelector["zone"] != "a" {
		t.Errorf("nodeSelector = %v", got.Spec.NodeSelector)
	}
	if !slices.ContainsFunc(got.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == "sandbox" }) {
		t.Errorf("tolerations = %+v", got.Spec.Tolerations)
	}

	_, err = c.CoreV1().Pods("default").Create(ctx, pod("missing-class", "no-such-class"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `RuntimeClass "no-such-class" not found`) {
		t.Errorf("pod naming a missing class: %v", err)
	}
	if err := c.NodeV1().RuntimeClasses().Delete(ctx, rc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The admission reads classes from an informer: the deletion reaches
	// it shortly after the delete returns (dry runs until then).
	if werr := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err = c.CoreV1().Pods("default").Create(ctx, pod("deleted-class", rc.Name), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	}); werr != nil || !apierrors.IsForbidden(err) {
		t.Errorf("pod naming a deleted class: %v", err)
	}
	// A pod may not bring its own overhead without a class defining one.
	p := pod("own-overhead", "")
	p.Spec.RuntimeClassName = nil
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("pod with its own overhead: %v", err)
	}
}

// TestHPAVersions: an HPA written as autoscaling/v2 reads as
// autoscaling/v1 (the CPU target as a field, the rest in annotations) and
// back; one written as autoscaling/v1 reads as autoscaling/v2.
func TestHPAVersions(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)
	ref := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	_, err := c.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "v2"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MaxReplicas: 4, Metrics: []autoscalingv2.MetricSpec{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}},
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("100Mi"))}}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := c.AutoscalingV1().HorizontalPodAutoscalers("default").Get(ctx, "v2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v1.Spec.TargetCPUUtilizationPercentage == nil || *v1.Spec.TargetCPUUtilizationPercentage != 50 || *v1.Spec.MinReplicas != 1 {
		t.Errorf("v1 spec = %+v", v1.Spec)
	}
	if !strings.Contains(v1.Annotations["autoscaling.alpha.kubernetes.io/metrics"], "memory") {
		t.Errorf("v1 annotations = %v", v1.Annotations)
	}
	// An update through v1 keeps the metrics v1 has no field for.
	v1.Spec.MaxReplicas = 6
	if _, err := c.AutoscalingV1().HorizontalPodAutoscalers("default").Update(ctx, v1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	v2, err := c.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "v2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Spec.MaxReplicas != 6 || len(v2.Spec.Metrics) != 2 || len(v2.Annotations) != 0 {
		t.Errorf("v2 after a v1 update: %+v, annotations %v", v2.Spec, v2.Annotations)
	}

	_, err = c.AutoscalingV1().HorizontalPodAutoscalers("default").Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "v1"},
		Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(ref), MaxReplicas: 2},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v2, err = c.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v2.Spec.Metrics) != 1 || v2.Spec.Metrics[0].Resource == nil || *v2.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("metrics of a v1 HPA read as v2: %+v", v2.Spec.Metrics)
	}
}

// TestEphemeralContainers: pods/ephemeralcontainers adds an ephemeral
// container (and only that), which may then be neither changed nor
// removed; a plain pod update may not add one.
func TestEphemeralContainers(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)
	pods := c.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "target"}, Spec: podSpec()}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	debugger := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:1.36", Command: []string{"sh"}, Stdin: true, TTY: true,
		ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}, TargetContainerName: "c"}

	plain := pod.DeepCopy()
	plain.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger}
	if _, err := pods.Update(ctx, plain, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("plain update adding an ephemeral container: %v", err)
	}

	withEC := pod.DeepCopy()
	withEC.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger}
	withEC.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) // not the subresource's to change
	got, err := pods.UpdateEphemeralContainers(ctx, "target", withEC, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.EphemeralContainers) != 1 || got.Spec.EphemeralContainers[0].Name != "debugger" {
		t.Fatalf("ephemeral containers = %+v", got.Spec.EphemeralContainers)
	}
	if got.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("the subresource changed activeDeadlineSeconds")
	}
	if got.Generation != pod.Generation+1 {
		t.Errorf("generation %d → %d", pod.Generation, got.Generation)
	}

	changed := got.DeepCopy()
	changed.Spec.EphemeralContainers[0].Image = "busybox:1.37"
	if _, err := pods.UpdateEphemeralContainers(ctx, "target", changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not be changed") {
		t.Errorf("changing an ephemeral container: %v", err)
	}
	removed := got.DeepCopy()
	removed.Spec.EphemeralContainers = nil
	if _, err := pods.UpdateEphemeralContainers(ctx, "target", removed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not be removed") {
		t.Errorf("removing an ephemeral container: %v", err)
	}
	// The e2e spec's way: a strategic merge patch of the subresource.
	patch := `{"spec":{"ephemeralContainers":[{"name":"debugger-2","image":"busybox:1.36","command":["sh"],"targetContainerName":"c"}]}}`
	patched, err := pods.Patch(ctx, "target", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatal(err)
	}
	if len(patched.Spec.EphemeralContainers) != 2 {
		t.Errorf("after the patch: %+v", patched.Spec.EphemeralContainers)
	}
}

// TestSignerPermissions: a ClusterTrustBundle naming a signer needs
// "attest" on it; a PodCertificateRequest's status needs "sign".
func TestSignerPermissions(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	admin := s.Client(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "signer-tester"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"clustertrustbundles", "podcertificaterequests", "podcertificaterequests/status"}, Verbs: []string{"*"}},
	}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "signer-tester"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice, err := kubernetes.NewForConfig(s.UserConfig(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	bundle := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:signer:1"},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: caPEM(t, "signer")}}
	waitFor(t, func() error {
		_, err := alice.CertificatesV1().ClusterTrustBundles().List(ctx, metav1.ListOptions{})
		return err
	})
	if _, err := alice.CertificatesV1().ClusterTrustBundles().Create(ctx, bundle, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bundle without attest: %v", err)
	}
	signerRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "signer-tester-attest"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}, Verbs: []string{"attest", "sign"}},
	}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, signerRole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	csr, key := stubCSR(t)
	pcr, err := alice.CertificatesV1().PodCertificateRequests("default").Create(ctx, &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "pcr"},
		Spec: certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/signer", PodName: "p", PodUID: "6b1f5a26-8d7c-4b1a-9e34-1f0c2b3d4e5f",
			ServiceAccountName: "default", ServiceAccountUID: "6b1f5a26-8d7c-4b1a-9e34-1f0c2b3d4e60", NodeName: "n", NodeUID: "6b1f5a26-8d7c-4b1a-9e34-1f0c2b3d4e61",
			StubPKCS10Request: csr}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	notBefore := time.Now().Add(-time.Minute).Truncate(time.Second)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "p"}, NotBefore: notBefore, NotAfter: notBefore.Add(2 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	pcr.Status = certificatesv1.PodCertificateRequestStatus{
		CertificateChain: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		NotBefore:        &metav1.Time{Time: notBefore}, NotAfter: &metav1.Time{Time: notBefore.Add(2 * time.Hour)},
		BeginRefreshAt: &metav1.Time{Time: notBefore.Add(time.Hour)},
		Conditions: []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue,
			Reason: "Issued", Message: "test", LastTransitionTime: metav1.Now()}},
	}
	if _, err := alice.CertificatesV1().PodCertificateRequests("default").UpdateStatus(ctx, pcr, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), `not permitted to "sign"`) {
		t.Errorf("status without sign: %v", err)
	}

	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "signer-tester-attest"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: signerRole.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() error {
		_, err := alice.CertificatesV1().ClusterTrustBundles().Create(ctx, bundle, metav1.CreateOptions{})
		return err
	})
	issued, err := alice.CertificatesV1().PodCertificateRequests("default").UpdateStatus(ctx, pcr, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Issued is final.
	issued.Status.Conditions[0].Message = "again"
	if _, err := alice.CertificatesV1().PodCertificateRequests("default").UpdateStatus(ctx, issued, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing an issued request: %v", err)
	}
}

// waitFor retries fn for a few seconds (RBAC changes reach the authorizer
// through its informers).
func waitFor(t *testing.T, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLegacyBindings: a Binding POSTed to the namespace's bindings
// resource binds the pod it names, as pods/binding does.
func TestLegacyBindings(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	c := s.Client(t)
	if _, err := c.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unbound"}, Spec: podSpec()}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "unbound"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-x"}}
	if err := c.CoreV1().RESTClient().Post().Namespace("default").Resource("bindings").Body(binding).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	pod, err := c.CoreV1().Pods("default").Get(ctx, "unbound", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != "node-x" {
		t.Errorf("nodeName = %q", pod.Spec.NodeName)
	}
}
