package scheduler

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
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/volume"
	testingclock "k8s.io/utils/clock/testing"
)

func vbClass(name, provisioner string, mode storagev1.VolumeBindingMode, zones ...string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
	if len(zones) > 0 {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: zones}}}}
	}
	return sc
}

func vbClaim(name, class, volumeName string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if volumeName != "" {
		pvc.Spec.VolumeName = volumeName
		pvc.Annotations = map[string]string{volume.AnnBindCompleted: "yes"}
		pvc.Status.Phase = corev1.ClaimBound
	}
	return pvc
}

// vbVolume is a local volume on node (no node: reachable from all).
func vbVolume(name, class, node string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName: class,
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}
	}
	return pv
}

func withClaims(names ...string) podOpt {
	return func(p *corev1.Pod) {
		for _, n := range names {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: n}}})
		}
	}
}

// vbListers holds what the volume binder reads.
type vbListers struct {
	pvcs, pvs, classes cache.Indexer
}

func newVBListers(objs ...runtime.Object) vbListers {
	l := vbListers{
		pvcs:    cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		pvs:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		classes: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.PersistentVolumeClaim:
			_ = l.pvcs.Add(v)
		case *corev1.PersistentVolume:
			_ = l.pvs.Add(v)
		case *storagev1.StorageClass:
			_ = l.classes.Add(v)
		}
	}
	return l
}

func (l vbListers) binder(client *fake.Clientset, clk *testingclock.FakeClock) *volumeBinder {
	return newVolumeBinder(client, clk, corelisters.NewPersistentVolumeClaimLister(l.pvcs), corelisters.NewPersistentVolumeLister(l.pvs),
		storagelisters.NewStorageClassLister(l.classes))
}

func TestVolumeBindingFindNode(t *testing.T) {
	objs := []runtime.Object{
		vbClass("local", "rancher.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer),
		vbClass("zoned", "example.com/zoned", storagev1.VolumeBindingWaitForFirstConsumer, "a"),
		vbClass("static", volume.NotSupportedProvisioner, storagev1.VolumeBindingWaitForFirstConsumer),
		vbClass("now", "example.com/now", storagev1.VolumeBindingImmediate),
		vbVolume("pv-n2", "static", "n2"),
		boundVolume(vbVolume("bound-n3", "static", "n3"), "bound"),
		vbVolume("static-n1", "static", "n1"),
		vbClaim("bound", "static", "bound-n3"),
		vbClaim("dangling", "static", "no-such-pv"),
		vbClaim("wffc-static", "static", ""),
		vbClaim("wffc-local", "local", ""),
		vbClaim("wffc-zoned", "zoned", ""),
		vbClaim("immediate", "now", ""),
		vbClaim("elsewhere", "local", ""),
	}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		assumed  []string // volumes another pod's binding holds
		want     []string // acceptable nodes
		wantErr  string
		wantBind []string // volumes to bind on the chosen node
		wantProv []string // claims to provision on it
	}{
		{name: "no claims", pod: makePod("p"), want: []string{"n1", "n2", "n3"}},
		{name: "bound volume's node affinity", pod: makePod("p", withClaims("bound")), want: []string{"n3"}},
		{name: "bound to a missing volume", pod: makePod("p", withClaims("dangling")),
			wantErr: "0/3 nodes are available: 3 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)."},
		{name: "missing claim", pod: makePod("p", withClaims("nope")), wantErr: `0/3 nodes are available: persistentvolumeclaim "nope" not found.`},
		{name: "unbound immediate claim", pod: makePod("p", withClaims("immediate")), wantErr: "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
		{name: "wait for first consumer: a matching volume", pod: makePod("p", withClaims("wffc-static")), want: []string{"n1", "n2"}},
		{name: "matching volume assumed by another pod", pod: makePod("p", withClaims("wffc-static")), assumed: []string{"static-n1"}, want: []string{"n2"}, wantBind: []string{"pv-n2"}},
		{name: "no volume and no provisioner", pod: makePod("p", withClaims("wffc-static")), assumed: []string{"static-n1", "pv-n2"},
			wantErr: "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."},
		{name: "bound and unbound together", pod: makePod("p", withClaims("bound", "wffc-static")),
			wantErr: "0/3 nodes are available: 1 node(s) didn't find available persistent volumes to bind, 2 node(s) didn't match PersistentVolume's node affinity."},
		{name: "provisioning anywhere", pod: makePod("p", withClaims("wffc-local")), want: []string{"n1", "n2", "n3"}, wantProv: []string{"wffc-local"}},
		{name: "provisioning in allowed topologies", pod: makePod("p", withClaims("wffc-zoned")), want: []string{"n1"}, wantProv: []string{"wffc-zoned"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newCycleScheduler()
			s.cache.addNode(makeNode("n1", "4", "8Gi", nodeLabels("kubernetes.io/hostname", "n1", "zone", "a")))
			s.cache.addNode(makeNode("n2", "4", "8Gi", nodeLabels("kubernetes.io/hostname", "n2", "zone", "b")))
			s.cache.addNode(makeNode("n3", "4", "8Gi", nodeLabels("kubernetes.io/hostname", "n3", "zone", "b")))
			s.cache.update(s.snap)
			s.volumes = newVBListers(objs...).binder(fake.NewClientset(), testingclock.NewFakeClock(time.Now()))
			for _, a := range tc.assumed {
				s.volumes.assumed[a] = "default/other"
			}
			node, fe, err := s.findNode(newPodInfo(tc.pod), nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" {
				if fe == nil {
					t.Fatalf("placed on %s, want %q", node, tc.wantErr)
				}
				if fe.Error() != tc.wantErr {
					t.Errorf("error %q\nwant  %q", fe.Error(), tc.wantErr)
				}
				if fe.rejectedBy()&plVolumeBinding == 0 {
					t.Errorf("rejected by %v, want VolumeBinding so volume events retry it", fe.rejectedBy())
				}
				return
			}
			if fe != nil {
				t.Fatalf("unschedulable: %v", fe)
			}
			if !contains(tc.want, node) {
				t.Errorf("placed on %s, want one of %v", node, tc.want)
			}
			pv := s.cycleVolumes.forNode(node)
			var binds, provs []string
			if pv != nil {
				for _, b := range pv.bindings {
					binds = append(binds, b.pv.Name)
				}
				for _, p := range pv.provisions {
					provs = append(provs, p.Name)
				}
			}
			if tc.wantBind != nil && strings.Join(binds, ",") != strings.Join(tc.wantBind, ",") {
				t.Errorf("bindings %v, want %v", binds, tc.wantBind)
			}
			if strings.Join(provs, ",") != strings.Join(tc.wantProv, ",") {
				t.Errorf("provisions %v, want %v", provs, tc.wantProv)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// bind binds the chosen volume, selects the node for the provisioned
// claim, and returns once both claims are bound.
func TestVolumeBindingBindWaits(t *testing.T) {
	static := vbClaim("static", "static", "")
	prov := vbClaim("prov", "local", "")
	prov.ResourceVersion = "1"
	pv := vbVolume("pv1", "static", "n1")
	client := fake.NewClientset(static, prov, pv)
	l := newVBListers(static, prov, pv, vbClass("local", "rancher.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer),
		vbClass("static", volume.NotSupportedProvisioner, storagev1.VolumeBindingWaitForFirstConsumer))
	b := l.binder(client, testingclock.NewFakeClock(time.Now()))
	node := makeNode("n1", "1", "1Gi", nodeLabels("kubernetes.io/hostname", "n1"))
	pod := makePod("p", withClaims("static", "prov"))
	done := make(chan error, 1)
	go func() {
		done <- b.bind(context.Background(), pod, node, &podVolumes{bindings: []volumeBinding{{pvc: static, pv: pv}}, provisions: []*corev1.PersistentVolumeClaim{prov}})
	}()
	// What the API saw: the volume's claimRef and the claim's selected node.
	waitFor(t, func() bool {
		got, _ := client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "prov", metav1.GetOptions{})
		return got.Annotations[volume.AnnSelectedNode] == "n1"
	})
	// The informer delivers the selected node.
	sel, _ := client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "prov", metav1.GetOptions{})
	sel.ResourceVersion = "2"
	_ = l.pvcs.Update(sel)
	b.notify()
	got, _ := client.CoreV1().PersistentVolumes().Get(context.Background(), "pv1", metav1.GetOptions{})
	if got.Spec.ClaimRef == nil || got.Spec.ClaimRef.Name != "static" {
		t.Fatalf("volume claimRef %+v, want the static claim", got.Spec.ClaimRef)
	}
	select {
	case err := <-done:
		t.Fatalf("bind returned before the claims were bound: %v", err)
	default:
	}
	// The binder and provisioner finish: both claims bound.
	boundPV := got.DeepCopy()
	_ = l.pvs.Update(boundPV)
	provPV := vbVolume("pvc-prov", "local", "n1")
	_ = l.pvs.Add(provPV)
	_ = l.pvcs.Update(vbClaim("static", "static", "pv1"))
	b.notify()
	select {
	case err := <-done:
		t.Fatalf("bind returned with one claim unbound: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	p := vbClaim("prov", "local", "pvc-prov")
	p.Annotations[volume.AnnSelectedNode] = "n1"
	p.ResourceVersion = "3"
	_ = l.pvcs.Update(p)
	b.notify()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("bind: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("bind did not return once the claims were bound")
	}
}

func TestVolumeBindingBindFails(t *testing.T) {
	prov := vbClaim("prov", "local", "")
	prov.ResourceVersion = "1"
	client := fake.NewClientset(prov)
	l := newVBListers(prov, vbClass("local", "rancher.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer))
	b := l.binder(client, testingclock.NewFakeClock(time.Now()))
	node := makeNode("n1", "1", "1Gi")
	pod := makePod("p", withClaims("prov"))
	done := make(chan error, 1)
	go func() {
		done <- b.bind(context.Background(), pod, node, &podVolumes{provisions: []*corev1.PersistentVolumeClaim{prov}})
	}()
	// The provisioner gives up: selected-node is removed.
	waitFor(t, func() bool {
		got, _ := client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "prov", metav1.GetOptions{})
		return got.Annotations[volume.AnnSelectedNode] == "n1"
	})
	reset := prov.DeepCopy()
	reset.ResourceVersion = "2"
	_ = l.pvcs.Update(reset)
	b.notify()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), `selectedNode annotation reset for PVC "prov"`) {
			t.Fatalf("bind = %v, want the reset reported", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("bind did not fail")
	}
	// And the timeout.
	b.timeout = 20 * time.Millisecond
	p := prov.DeepCopy()
	p.Annotations = map[string]string{volume.AnnSelectedNode: "n1"}
	_ = l.pvcs.Update(p)
	if err := b.bind(context.Background(), pod, node, &podVolumes{provisions: []*corev1.PersistentVolumeClaim{p}}); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("bind = %v, want a timeout", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func boundVolume(pv *corev1.PersistentVolume, claim string) *corev1.PersistentVolume {
	pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: claim, UID: types.UID("uid-" + claim)}
	pv.Status.Phase = corev1.VolumeBound
	return pv
}
