package persistentvolume

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-helpers/storage/volume"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/controllers/volume/storageutil"
)

type pvOpt func(*corev1.PersistentVolume)

func makePV(name, size string, opts ...pvOpt) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	for _, o := range opts {
		o(pv)
	}
	return pv
}

func pvClass(c string) pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Spec.StorageClassName = c }
}
func pvModes(m ...corev1.PersistentVolumeAccessMode) pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = m }
}
func pvLabels(k, v string) pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Labels = map[string]string{k: v} }
}
func pvBlock(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }
func pvClaimRef(ns, name, uid string) pvOpt {
	return func(pv *corev1.PersistentVolume) {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name, UID: types.UID(uid)}
	}
}
func pvReclaim(p corev1.PersistentVolumeReclaimPolicy) pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = p }
}
func pvAnn(k, v string) pvOpt {
	return func(pv *corev1.PersistentVolume) { metav1.SetMetaDataAnnotation(&pv.ObjectMeta, k, v) }
}
func pvPhase(p corev1.PersistentVolumePhase) pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Status.Phase = p }
}

type pvcOpt func(*corev1.PersistentVolumeClaim)

func makePVC(name, size string, opts ...pvcOpt) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
			StorageClassName: ptr.To(""),
		},
	}
	for _, o := range opts {
		o(pvc)
	}
	return pvc
}

func pvcClass(c string) pvcOpt {
	return func(p *corev1.PersistentVolumeClaim) { p.Spec.StorageClassName = &c }
}
func pvcNoClass(p *corev1.PersistentVolumeClaim) { p.Spec.StorageClassName = nil }
func pvcModes(m ...corev1.PersistentVolumeAccessMode) pvcOpt {
	return func(p *corev1.PersistentVolumeClaim) { p.Spec.AccessModes = m }
}
func pvcSelector(k, v string) pvcOpt {
	return func(p *corev1.PersistentVolumeClaim) {
		p.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
}
func pvcVolume(name string) pvcOpt {
	return func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeName = name }
}
func pvcAnn(k, v string) pvcOpt {
	return func(p *corev1.PersistentVolumeClaim) { metav1.SetMetaDataAnnotation(&p.ObjectMeta, k, v) }
}
func pvcBound(pv string) pvcOpt {
	return func(p *corev1.PersistentVolumeClaim) {
		p.Spec.VolumeName = pv
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, volume.AnnBindCompleted, "yes")
		p.Status.Phase = corev1.ClaimBound
	}
}

func makeClass(name, provisioner string, mode storagev1.VolumeBindingMode, isDefault bool) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
	if isDefault {
		sc.Annotations = map[string]string{storageutil.IsDefaultClassAnnotation: "true"}
	}
	return sc
}

var (
	wffc      = storagev1.VolumeBindingWaitForFirstConsumer
	immediate = storagev1.VolumeBindingImmediate
)

// harness runs the binder's syncs against a fake clientset until nothing
// changes.
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	c        *Controller
	recorder *record.FakeRecorder
	clock    *testingclock.FakeClock
}

func newHarness(t *testing.T, classes []*storagev1.StorageClass, pods []*corev1.Pod, objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(100)
	clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := New(Config{}, client, factory, rec, clk)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range classes {
		if err := factory.Storage().V1().StorageClasses().Informer().GetIndexer().Add(sc); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return &harness{t: t, client: client, c: c, recorder: rec, clock: clk}
}

// settle loads every volume and claim from the clientset into the
// controller's stores and syncs them, a few rounds.
func (h *harness) settle() {
	h.t.Helper()
	ctx := context.Background()
	for range 4 {
		pvs, _ := h.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		pvcs, _ := h.client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
		h.c.volumes = newStore(func(v *corev1.PersistentVolume) string { return v.Name })
		h.c.claims = newStore(claimKey)
		for i := range pvs.Items {
			h.c.volumes.update(&pvs.Items[i])
		}
		for i := range pvcs.Items {
			h.c.claims.update(&pvcs.Items[i])
		}
		for i := range pvcs.Items {
			if cl, ok := h.c.claims.get(claimKey(&pvcs.Items[i])); ok {
				if err := h.c.syncClaim(ctx, cl); err != nil {
					h.t.Fatalf("sync claim %s: %v", cl.Name, err)
				}
			}
		}
		for i := range pvs.Items {
			if pv, ok := h.c.volumes.get(pvs.Items[i].Name); ok {
				if err := h.c.syncVolume(ctx, pv); err != nil {
					h.t.Fatalf("sync volume %s: %v", pv.Name, err)
				}
			}
		}
	}
}

func (h *harness) pv(name string) *corev1.PersistentVolume {
	h.t.Helper()
	pv, err := h.client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return pv
}

func (h *harness) pvc(name string) *corev1.PersistentVolumeClaim {
	h.t.Helper()
	pvc, err := h.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return pvc
}

func (h *harness) events() string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

func TestBindingMatrix(t *testing.T) {
	local := makeClass("local-path", "rancher.io/local-path", wffc, true)
	fast := makeClass("fast", "example.com/fast", immediate, false)
	classes := []*storagev1.StorageClass{local, fast}
	cases := []struct {
		name   string
		pvs    []*corev1.PersistentVolume
		pvc    *corev1.PersistentVolumeClaim
		pods   []*corev1.Pod
		wantPV string // the volume the claim must be bound to; "" = Pending
		// byController: the claim's bound-by-controller annotation.
		byController bool
		wantEvent    string
		wantAnn      map[string]string
	}{
		{name: "binds an available volume", pvs: []*corev1.PersistentVolume{makePV("pv1", "10Gi")}, pvc: makePVC("c", "5Gi"), wantPV: "pv1", byController: true},
		{name: "smallest that fits", pvs: []*corev1.PersistentVolume{makePV("big", "20Gi"), makePV("mid", "10Gi"), makePV("small", "1Gi")}, pvc: makePVC("c", "5Gi"), wantPV: "mid", byController: true},
		{name: "fewest access modes first", pvs: []*corev1.PersistentVolume{makePV("many", "5Gi", pvModes(corev1.ReadWriteOnce, corev1.ReadOnlyMany)), makePV("one", "10Gi")}, pvc: makePVC("c", "5Gi"), wantPV: "one", byController: true},
		{name: "too small", pvs: []*corev1.PersistentVolume{makePV("pv1", "1Gi")}, pvc: makePVC("c", "5Gi"),
			wantEvent: "Normal FailedBinding no persistent volumes available for this claim and no storage class is set"},
		{name: "access modes", pvs: []*corev1.PersistentVolume{makePV("pv1", "10Gi")}, pvc: makePVC("c", "5Gi", pvcModes(corev1.ReadWriteMany)), wantEvent: "FailedBinding"},
		{name: "class", pvs: []*corev1.PersistentVolume{makePV("pv1", "10Gi", pvClass("other"))}, pvc: makePVC("c", "5Gi"), wantEvent: "FailedBinding"},
		{name: "volume mode", pvs: []*corev1.PersistentVolume{makePV("pv1", "10Gi", pvBlock)}, pvc: makePVC("c", "5Gi"), wantEvent: "FailedBinding"},
		{name: "selector", pvs: []*corev1.PersistentVolume{makePV("a", "5Gi"), makePV("b", "10Gi", pvLabels("tier", "gold"))}, pvc: makePVC("c", "5Gi", pvcSelector("tier", "gold")), wantPV: "b", byController: true},
		{name: "claim names its volume", pvs: []*corev1.PersistentVolume{makePV("a", "5Gi"), makePV("b", "50Gi")}, pvc: makePVC("c", "5Gi", pvcVolume("b")), wantPV: "b"},
		{name: "claim names a volume that does not fit", pvs: []*corev1.PersistentVolume{makePV("b", "1Gi")}, pvc: makePVC("c", "5Gi", pvcVolume("b")),
			wantEvent: `Warning VolumeMismatch Cannot bind to requested volume "b": requested PV is too small`},
		{name: "claim names a missing volume", pvc: makePVC("c", "5Gi", pvcVolume("nope"))},
		{name: "volume pre-bound to the claim", pvs: []*corev1.PersistentVolume{makePV("a", "5Gi"), makePV("pre", "50Gi", pvClaimRef("ns", "c", ""))}, pvc: makePVC("c", "5Gi"), wantPV: "pre", byController: true},
		{name: "volume pre-bound to another claim is skipped", pvs: []*corev1.PersistentVolume{makePV("pre", "50Gi", pvClaimRef("ns", "other", ""))}, pvc: makePVC("c", "5Gi"), wantEvent: "FailedBinding"},
		{name: "wait for first consumer", pvs: []*corev1.PersistentVolume{makePV("pv1", "10Gi", pvClass("local-path"))}, pvc: makePVC("c", "5Gi", pvcClass("local-path")),
			wantEvent: "Normal WaitForFirstConsumer waiting for first consumer to be created before binding"},
		{name: "wait for the pod to be scheduled", pvc: makePVC("c", "5Gi", pvcClass("local-path")),
			pods:      []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}}}},
			wantEvent: "Normal WaitForPodScheduled waiting for pod p to be scheduled"},
		{name: "selected node: external provisioning", pvc: makePVC("c", "5Gi", pvcClass("local-path"), pvcAnn(volume.AnnSelectedNode, "n1")),
			wantEvent: "Normal ExternalProvisioning Waiting for a volume to be created either by the external provisioner 'rancher.io/local-path'",
			wantAnn:   map[string]string{volume.AnnStorageProvisioner: "rancher.io/local-path", volume.AnnBetaStorageProvisioner: "rancher.io/local-path"}},
		{name: "immediate provisioning", pvc: makePVC("c", "5Gi", pvcClass("fast")),
			wantEvent: "ExternalProvisioning", wantAnn: map[string]string{volume.AnnStorageProvisioner: "example.com/fast"}},
		{name: "missing class", pvc: makePVC("c", "5Gi", pvcClass("gone")),
			wantEvent: `Warning ProvisioningFailed storageclass.storage.k8s.io "gone" not found`},
		{name: "provisioned volume binds", pvs: []*corev1.PersistentVolume{makePV("pvc-1", "5Gi", pvClass("local-path"), pvClaimRef("ns", "c", "uid-c"), pvAnn(volume.AnnDynamicallyProvisioned, "rancher.io/local-path"))},
			pvc: makePVC("c", "5Gi", pvcClass("local-path"), pvcAnn(volume.AnnSelectedNode, "n1")), wantPV: "pvc-1", byController: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{tc.pvc}
			for _, pv := range tc.pvs {
				objs = append(objs, pv)
			}
			h := newHarness(t, classes, tc.pods, objs...)
			h.settle()
			got := h.pvc(tc.pvc.Name)
			if tc.wantPV == "" {
				if got.Status.Phase != corev1.ClaimPending || (got.Spec.VolumeName != tc.pvc.Spec.VolumeName) {
					t.Errorf("claim: phase %q volume %q, want Pending and unchanged", got.Status.Phase, got.Spec.VolumeName)
				}
				for _, pv := range tc.pvs {
					if p := h.pv(pv.Name); p.Spec.ClaimRef != nil && p.Spec.ClaimRef.UID == got.UID {
						t.Errorf("volume %s bound to the pending claim", p.Name)
					}
				}
			} else {
				if got.Status.Phase != corev1.ClaimBound || got.Spec.VolumeName != tc.wantPV {
					t.Fatalf("claim: phase %q volume %q, want Bound to %s", got.Status.Phase, got.Spec.VolumeName, tc.wantPV)
				}
				if !metav1.HasAnnotation(got.ObjectMeta, volume.AnnBindCompleted) {
					t.Error("claim lacks bind-completed")
				}
				if metav1.HasAnnotation(got.ObjectMeta, volume.AnnBoundByController) != tc.byController {
					t.Errorf("claim bound-by-controller = %v, want %v", !tc.byController, tc.byController)
				}
				pv := h.pv(tc.wantPV)
				if pv.Status.Phase != corev1.VolumeBound || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != got.UID {
					t.Errorf("volume: phase %q claimRef %+v, want Bound to the claim", pv.Status.Phase, pv.Spec.ClaimRef)
				}
				if pv.Status.LastPhaseTransitionTime == nil {
					t.Error("volume lacks lastPhaseTransitionTime")
				}
				want := pv.Spec.Capacity[corev1.ResourceStorage]
				if c := got.Status.Capacity[corev1.ResourceStorage]; c.Cmp(want) != 0 {
					t.Errorf("claim capacity %s, want the volume's %s", c.String(), want.String())
				}
			}
			for k, v := range tc.wantAnn {
				if got.Annotations[k] != v {
					t.Errorf("claim annotation %s = %q, want %q", k, got.Annotations[k], v)
				}
			}
			if ev := h.events(); !strings.Contains(ev, tc.wantEvent) {
				t.Errorf("events %q lack %q", ev, tc.wantEvent)
			}
		})
	}
}

func TestDefaultClassRetroactive(t *testing.T) {
	old := makeClass("old", "a", immediate, true)
	newer := makeClass("newer", "b", immediate, true)
	newer.CreationTimestamp = metav1.NewTime(time.Now())
	h := newHarness(t, []*storagev1.StorageClass{old, newer}, nil, makePVC("c", "1Gi", pvcNoClass))
	h.settle()
	got := h.pvc("c")
	if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != "newer" {
		t.Fatalf("class %v, want the newest default", got.Spec.StorageClassName)
	}
	if got.Annotations[volume.AnnStorageProvisioner] != "b" {
		t.Errorf("claim not handed to the class's provisioner: %v", got.Annotations)
	}
	// An explicit "" is a class: left alone.
	h = newHarness(t, []*storagev1.StorageClass{old}, nil, makePVC("c", "1Gi"))
	h.settle()
	if got := h.pvc("c"); *got.Spec.StorageClassName != "" {
		t.Errorf("class %q, want \"\" kept", *got.Spec.StorageClassName)
	}
}

func TestReclaim(t *testing.T) {
	cases := []struct {
		name      string
		pv        *corev1.PersistentVolume
		wantPhase corev1.PersistentVolumePhase
		wantEvent string
	}{
		{name: "retain", pv: makePV("pv", "1Gi", pvReclaim(corev1.PersistentVolumeReclaimRetain)), wantPhase: corev1.VolumeReleased},
		{name: "delete by its external provisioner", pv: makePV("pv", "1Gi", pvReclaim(corev1.PersistentVolumeReclaimDelete), pvAnn(volume.AnnDynamicallyProvisioned, "rancher.io/local-path")), wantPhase: corev1.VolumeReleased},
		{name: "delete without a provisioner", pv: makePV("pv", "1Gi", pvReclaim(corev1.PersistentVolumeReclaimDelete)), wantPhase: corev1.VolumeFailed,
			wantEvent: `Warning VolumeFailedDelete error getting deleter volume plugin for volume "pv": no deletable volume plugin matched`},
		{name: "recycle", pv: makePV("pv", "1Gi", pvReclaim(corev1.PersistentVolumeReclaimRecycle)), wantPhase: corev1.VolumeFailed, wantEvent: "VolumeFailedRecycle"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, nil, tc.pv, makePVC("c", "1Gi"))
			h.settle()
			if p := h.pv("pv"); p.Status.Phase != corev1.VolumeBound {
				t.Fatalf("phase %q before the claim is deleted, want Bound", p.Status.Phase)
			}
			bound := h.pv("pv").Status.LastPhaseTransitionTime
			h.clock.Step(time.Minute)
			if err := h.client.CoreV1().PersistentVolumeClaims("ns").Delete(context.Background(), "c", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			h.settle()
			p := h.pv("pv")
			if p.Status.Phase != tc.wantPhase {
				t.Errorf("phase %q, want %q", p.Status.Phase, tc.wantPhase)
			}
			if p.Status.LastPhaseTransitionTime == nil || !p.Status.LastPhaseTransitionTime.After(bound.Time) {
				t.Errorf("lastPhaseTransitionTime %v not moved past %v", p.Status.LastPhaseTransitionTime, bound)
			}
			if ev := h.events(); !strings.Contains(ev, tc.wantEvent) {
				t.Errorf("events %q lack %q", ev, tc.wantEvent)
			}
		})
	}
}

func TestLostClaims(t *testing.T) {
	h := newHarness(t, nil, nil, makePVC("c", "1Gi", pvcBound("gone")))
	h.settle()
	if got := h.pvc("c"); got.Status.Phase != corev1.ClaimLost {
		t.Errorf("phase %q, want Lost", got.Status.Phase)
	}
	if ev := h.events(); !strings.Contains(ev, "Warning ClaimLost Bound claim has lost its PersistentVolume. Data on the volume is lost!") {
		t.Errorf("events %q", ev)
	}
	// Two claims, one volume: the one the volume does not name is misbound.
	h = newHarness(t, nil, nil, makePVC("c", "1Gi", pvcBound("pv")), makePV("pv", "1Gi", pvClaimRef("ns", "other", "uid-other"), pvPhase(corev1.VolumeBound)),
		makePVC("other", "1Gi", pvcBound("pv")))
	h.settle()
	if got := h.pvc("c"); got.Status.Phase != corev1.ClaimLost {
		t.Errorf("misbound claim phase %q, want Lost", got.Status.Phase)
	}
	if got := h.pvc("other"); got.Status.Phase != corev1.ClaimBound {
		t.Errorf("rightful claim phase %q, want Bound", got.Status.Phase)
	}
}

// A volume the controller bound to a claim that then bound elsewhere is
// given back.
func TestUnbindVolumeOfClaimBoundElsewhere(t *testing.T) {
	h := newHarness(t, nil, nil,
		makePV("pv", "1Gi", pvClaimRef("ns", "c", "uid-c"), pvAnn(volume.AnnBoundByController, "yes"), pvPhase(corev1.VolumeBound)),
		makePV("other", "1Gi", pvClaimRef("ns", "c", "uid-c"), pvPhase(corev1.VolumeBound)),
		makePVC("c", "1Gi", pvcBound("other")))
	h.settle()
	p := h.pv("pv")
	if p.Spec.ClaimRef != nil || p.Status.Phase != corev1.VolumeAvailable {
		t.Errorf("volume claimRef %+v phase %q, want unbound and Available", p.Spec.ClaimRef, p.Status.Phase)
	}
}

func TestStoreKeepsNewest(t *testing.T) {
	s := newStore(func(v *corev1.PersistentVolume) string { return v.Name })
	v5 := makePV("a", "1Gi")
	v5.ResourceVersion = "5"
	v3 := v5.DeepCopy()
	v3.ResourceVersion = "3"
	s.update(v5)
	if s.update(v3) {
		t.Error("older version replaced a newer one")
	}
	if got, _ := s.get("a"); got.ResourceVersion != "5" {
		t.Errorf("stored %s", got.ResourceVersion)
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{SyncPeriod: -time.Second}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--pvclaimbinder-sync-period") {
		t.Errorf("Validate = %v, want an error naming the flag", err)
	}
}
