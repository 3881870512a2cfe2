package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/volume/storageutil"
)

// DefaultBindTimeout is how long binding a pod waits for its volumes to
// be bound (kube-scheduler's VolumeBinding bindTimeoutSeconds default).
const DefaultBindTimeout = 600 * time.Second

// Reasons of the VolumeBinding filter, worded as upstream's.
const (
	reasonBindConflict   = "node(s) didn't find available persistent volumes to bind"
	reasonNodeConflict   = "node(s) didn't match PersistentVolume's node affinity"
	reasonPVNotExist     = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	reasonUnboundClaims  = "pod has unbound immediate PersistentVolumeClaims"
	volumeRecheckPeriod  = time.Second
	selectedNodeAnnotate = volume.AnnSelectedNode
)

// volumeBinder is the scheduler's VolumeBinding plugin: it keeps pods off
// nodes their bound volumes cannot reach, finds a volume (or a
// provisioner) for their unbound WaitForFirstConsumer claims on each node,
// and, once a node is chosen, binds those volumes (or asks for them with
// volume.kubernetes.io/selected-node) and waits until every claim is bound
// before the pod is. Safe for concurrent use.
type volumeBinder struct {
	client  kubernetes.Interface
	clock   clock.WithTicker
	pvcs    corelisters.PersistentVolumeClaimLister
	pvs     corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	timeout time.Duration

	mu sync.Mutex
	// assumed are the volumes chosen for pods whose binding is in flight,
	// by volume name, with the claim (namespace/name) they go to: no other
	// claim may take them meanwhile.
	assumed map[string]string
	// changed is closed (and replaced) whenever a claim or volume changes,
	// waking the bindings that wait for their claims.
	changed chan struct{}
}

func newVolumeBinder(client kubernetes.Interface, clk clock.WithTicker, pvcs corelisters.PersistentVolumeClaimLister, pvs corelisters.PersistentVolumeLister, classes storagelisters.StorageClassLister) *volumeBinder {
	return &volumeBinder{
		client: client, clock: clk, pvcs: pvcs, pvs: pvs, classes: classes, timeout: DefaultBindTimeout,
		assumed: map[string]string{}, changed: make(chan struct{}),
	}
}

// notify wakes the waiting bindings.
func (b *volumeBinder) notify() {
	b.mu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

func (b *volumeBinder) changedCh() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// volumeState is the pod's VolumeBinding state of one scheduling cycle.
type volumeState struct {
	bound   []*corev1.PersistentVolumeClaim
	delayed []*corev1.PersistentVolumeClaim
	// candidates are the volumes of each delayed claim's class.
	candidates map[string][]*corev1.PersistentVolume
	classes    map[string]*storagev1.StorageClass
	// excluded are the volumes assumed for other pods.
	excluded map[string]*corev1.PersistentVolume

	mu     sync.Mutex
	byNode map[string]*podVolumes
}

// podVolumes is what must happen on a node before the pod is bound.
type podVolumes struct {
	// bindings are volumes to bind to claims.
	bindings []volumeBinding
	// provisions are claims to provision on the node.
	provisions []*corev1.PersistentVolumeClaim
}

type volumeBinding struct {
	pvc *corev1.PersistentVolumeClaim
	pv  *corev1.PersistentVolume
}

func (pv *podVolumes) empty() bool {
	return pv == nil || len(pv.bindings) == 0 && len(pv.provisions) == 0
}

// forNode returns the decisions the filter made for node.
func (vs *volumeState) forNode(node string) *podVolumes {
	if vs == nil {
		return nil
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.byNode[node]
}

func volumeStatus(reasons ...string) *status {
	return newStatus(codeUnresolvable, plVolumeBinding, reasons...)
}

// preFilter reads the pod's claims. A nil state with a nil status means
// the pod has none (the plugin is skipped).
func (b *volumeBinder) preFilter(pod *corev1.Pod) (*volumeState, *status) {
	claims := storageutil.PodClaims(pod)
	if len(claims) == 0 {
		return nil, nil
	}
	vs := &volumeState{byNode: map[string]*podVolumes{}, candidates: map[string][]*corev1.PersistentVolume{}, classes: map[string]*storagev1.StorageClass{}}
	immediate := false
	for _, pc := range claims {
		pvc, err := b.pvcs.PersistentVolumeClaims(pod.Namespace).Get(pc.Name)
		if err != nil {
			if pc.Ephemeral && apierrors.IsNotFound(err) {
				return nil, volumeStatus(fmt.Sprintf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", pc.Name))
			}
			return nil, volumeStatus(err.Error())
		}
		switch {
		case pvc.Status.Phase == corev1.ClaimLost:
			return nil, volumeStatus(fmt.Sprintf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", pvc.Name, pvc.Spec.VolumeName))
		case pvc.DeletionTimestamp != nil:
			return nil, volumeStatus(fmt.Sprintf("persistentvolumeclaim %q is being deleted", pvc.Name))
		}
		if pc.Ephemeral {
			if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
				return nil, volumeStatus(err.Error())
			}
		}
		if pvc.Spec.VolumeName != "" && metav1.HasAnnotation(pvc.ObjectMeta, volume.AnnBindCompleted) {
			vs.bound = append(vs.bound, pvc)
			continue
		}
		delay, err := volume.IsDelayBindingMode(pvc, b.classes)
		if err != nil {
			return nil, newStatus(codeError, plVolumeBinding, err.Error())
		}
		if !delay || pvc.Spec.VolumeName != "" {
			immediate = true
			continue
		}
		vs.delayed = append(vs.delayed, pvc)
	}
	if immediate {
		return nil, volumeStatus(reasonUnboundClaims)
	}
	if len(vs.delayed) > 0 {
		all, err := b.pvs.List(labels.Everything())
		if err != nil {
			return nil, newStatus(codeError, plVolumeBinding, err.Error())
		}
		slices.SortFunc(all, func(a, c *corev1.PersistentVolume) int {
			switch {
			case a.Name < c.Name:
				return -1
			case a.Name > c.Name:
				return 1
			}
			return 0
		})
		for _, pvc := range vs.delayed {
			class := volume.GetPersistentVolumeClaimClass(pvc)
			if _, ok := vs.classes[class]; ok {
				continue
			}
			sc, err := b.classes.Get(class)
			if err != nil {
				return nil, newStatus(codeError, plVolumeBinding, fmt.Sprintf("failed to find storage class %q", class))
			}
			vs.classes[class] = sc
			for _, pv := range all {
				if volume.GetPersistentVolumeClass(pv) == class {
					vs.candidates[class] = append(vs.candidates[class], pv)
				}
			}
		}
		b.mu.Lock()
		vs.excluded = make(map[string]*corev1.PersistentVolume, len(b.assumed))
		for name := range b.assumed {
			vs.excluded[name] = nil
		}
		b.mu.Unlock()
	}
	return vs, nil
}

// filter decides whether the pod's volumes work on node n, and records
// what binding them there takes.
func (b *volumeBinder) filter(vs *volumeState, n *nodeInfo) *status {
	if vs == nil {
		return nil
	}
	node := n.node
	var reasons []string
	for _, pvc := range vs.bound {
		pv, err := b.pvs.Get(pvc.Spec.VolumeName)
		if err != nil {
			reasons = append(reasons, reasonPVNotExist)
			break
		}
		if volume.CheckNodeAffinity(pv, node.Labels) != nil {
			reasons = append(reasons, reasonNodeConflict)
			break
		}
	}
	decision := &podVolumes{}
	if len(vs.delayed) > 0 {
		chosen := make(map[string]*corev1.PersistentVolume, len(vs.excluded)+len(vs.delayed))
		for k, v := range vs.excluded {
			chosen[k] = v
		}
		ok := true
		for _, pvc := range vs.delayed {
			class := volume.GetPersistentVolumeClaimClass(pvc)
			pv, err := volume.FindMatchingVolume(pvc, vs.candidates[class], node, chosen, true, true)
			if err != nil {
				return newStatus(codeError, plVolumeBinding, err.Error())
			}
			if pv != nil {
				chosen[pv.Name] = pv
				decision.bindings = append(decision.bindings, volumeBinding{pvc: pvc, pv: pv})
				continue
			}
			if !canProvision(vs.classes[class], pvc, node) {
				ok = false
				break
			}
			decision.provisions = append(decision.provisions, pvc)
		}
		if !ok {
			reasons = append(reasons, reasonBindConflict)
		}
	}
	if len(reasons) > 0 {
		return volumeStatus(reasons...)
	}
	vs.mu.Lock()
	vs.byNode[n.name] = decision
	vs.mu.Unlock()
	return nil
}

// canProvision reports whether the class's provisioner may create the
// claim's volume on node: it is a provisioner, the claim was not already
// given to another node, and the class's allowedTopologies admit the node.
func canProvision(sc *storagev1.StorageClass, pvc *corev1.PersistentVolumeClaim, node *corev1.Node) bool {
	if sc == nil || sc.Provisioner == volume.NotSupportedProvisioner {
		return false
	}
	if sel, ok := pvc.Annotations[selectedNodeAnnotate]; ok && sel != node.Name {
		return false
	}
	return matchTopology(sc.AllowedTopologies, node.Labels)
}

// matchTopology: no terms match every node; else some term must have all
// its expressions met by the node's labels.
func matchTopology(terms []corev1.TopologySelectorTerm, nodeLabels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		all := true
		for _, e := range t.MatchLabelExpressions {
			v, ok := nodeLabels[e.Key]
			if !ok || !slices.Contains(e.Values, v) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// assume reserves the volumes chosen for a pod until its binding ends.
func (b *volumeBinder) assume(pv *podVolumes) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, vb := range pv.bindings {
		b.assumed[vb.pv.Name] = vb.pvc.Namespace + "/" + vb.pvc.Name
	}
}

// release ends the reservation of assume.
func (b *volumeBinder) release(pv *podVolumes) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, vb := range pv.bindings {
		delete(b.assumed, vb.pv.Name)
	}
}

// bind binds the chosen volumes to their claims, asks for the others on
// node, and waits until every claim of the pod is bound (at most the bind
// timeout). The persistentvolume-binder completes the bindings.
func (b *volumeBinder) bind(ctx context.Context, pod *corev1.Pod, node *corev1.Node, pv *podVolumes) error {
	logger := klog.FromContext(ctx)
	// written are the resource versions of the volumes as bound here: an
	// older copy in the informer says nothing yet.
	written := map[string]string{}
	for _, vb := range pv.bindings {
		clone, dirty, err := volume.GetBindVolumeToClaim(vb.pv, vb.pvc)
		if err != nil {
			return err
		}
		written[vb.pv.Name] = vb.pv.ResourceVersion
		if dirty {
			updated, err := b.client.CoreV1().PersistentVolumes().Update(ctx, clone, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("binding volumes: bind pv %q to pvc %q: %w", vb.pv.Name, vb.pvc.Name, err)
			}
			written[vb.pv.Name] = updated.ResourceVersion
		}
		logger.V(4).Info("Bound volume to claim for pod", "pod", klog.KObj(pod), "pv", vb.pv.Name, "pvc", klog.KObj(vb.pvc))
	}
	for _, pvc := range pv.provisions {
		written[claimKey(pvc)] = pvc.ResourceVersion
		if pvc.Annotations[selectedNodeAnnotate] == node.Name {
			continue
		}
		clone := pvc.DeepCopy()
		metav1.SetMetaDataAnnotation(&clone.ObjectMeta, selectedNodeAnnotate, node.Name)
		updated, err := b.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("binding volumes: select node %q for pvc %q: %w", node.Name, pvc.Name, err)
		}
		written[claimKey(pvc)] = updated.ResourceVersion
		logger.V(4).Info("Selected node for provisioning", "pod", klog.KObj(pod), "pvc", klog.KObj(pvc), "node", node.Name)
	}
	wctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	tick := b.clock.NewTicker(volumeRecheckPeriod)
	defer tick.Stop()
	for {
		changed := b.changedCh()
		done, err := b.checkBindings(pod, node, pv, written)
		if err != nil || done {
			return err
		}
		select {
		case <-changed:
		case <-tick.C():
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("binding volumes: %w", context.DeadlineExceeded)
		}
	}
}

// checkBindings reports whether every claim of the pod is bound, and an
// error when a binding or provisioning went wrong (the pod is then
// scheduled again).
func (b *volumeBinder) checkBindings(pod *corev1.Pod, node *corev1.Node, pv *podVolumes, written map[string]string) (bool, error) {
	for _, vb := range pv.bindings {
		cur, err := b.pvs.Get(vb.pv.Name)
		if err != nil {
			return false, fmt.Errorf("failed to check binding: %w", err)
		}
		if !versionAtLeast(cur.ResourceVersion, written[vb.pv.Name]) {
			continue
		}
		if cur.Spec.ClaimRef == nil || cur.Spec.ClaimRef.UID != "" && cur.Spec.ClaimRef.UID != vb.pvc.UID ||
			cur.Spec.ClaimRef.Name != vb.pvc.Name || cur.Spec.ClaimRef.Namespace != vb.pvc.Namespace {
			return false, fmt.Errorf("ClaimRef got reset for pv %q", cur.Name)
		}
	}
	for _, pc := range storageutil.PodClaims(pod) {
		pvc, err := b.pvcs.PersistentVolumeClaims(pod.Namespace).Get(pc.Name)
		if err != nil {
			return false, fmt.Errorf("failed to check provisioning pvc: %w", err)
		}
		if slices.ContainsFunc(pv.provisions, func(p *corev1.PersistentVolumeClaim) bool { return p.UID == pvc.UID }) &&
			versionAtLeast(pvc.ResourceVersion, written[claimKey(pvc)]) {
			if pvc.Spec.VolumeName == "" && pvc.Annotations[selectedNodeAnnotate] != node.Name {
				// The provisioner gave up and asks for another node.
				return false, fmt.Errorf("selectedNode annotation reset for PVC %q", pvc.Name)
			}
		}
		if pvc.Spec.VolumeName == "" || !metav1.HasAnnotation(pvc.ObjectMeta, volume.AnnBindCompleted) {
			return false, nil
		}
		vol, err := b.pvs.Get(pvc.Spec.VolumeName)
		if err != nil {
			return false, nil // not in the informer yet
		}
		if err := volume.CheckNodeAffinity(vol, node.Labels); err != nil {
			return false, fmt.Errorf("pv %q node affinity doesn't match node %q: %w", vol.Name, node.Name, err)
		}
	}
	return true, nil
}

func filterVolumeBinding(cs *cycleState, n *nodeInfo) *status {
	if cs.volumes == nil || cs.vb == nil {
		return nil
	}
	return cs.vb.filter(cs.volumes, n)
}

// versionAtLeast reports whether resource version a is b or newer; when
// either does not parse, only an equal one is.
func versionAtLeast(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		return a == b && a != ""
	}
	return x >= y
}

func claimKey(pvc *corev1.PersistentVolumeClaim) string { return pvc.Namespace + "/" + pvc.Name }
