package localpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/internal/cachesync"
)

// Annotations of the external provisioning protocol (upstream's
// persistentvolume controller and external-provisioner).
const (
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	AnnSelectedNode           = "volume.kubernetes.io/selected-node"
	AnnProvisionedBy          = "pv.kubernetes.io/provisioned-by"
	// annBetaStorageClass is the claim's class before spec.storageClassName.
	annBetaStorageClass = "volume.beta.kubernetes.io/storage-class"
)

// Event reasons, upstream's external-provisioner's and external-resizer's.
const (
	ReasonProvisioningSucceeded  = "ProvisioningSucceeded"
	ReasonProvisioningFailed     = "ProvisioningFailed"
	ReasonVolumeFailedDelete     = "VolumeFailedDelete"
	ReasonVolumeResizeSuccessful = "VolumeResizeSuccessful"
)

// Provisioner provisions, deletes and resizes the local-path volumes of
// one node. Run it once.
type Provisioner struct {
	cfg      Config
	client   kubernetes.Interface
	factory  informers.SharedInformerFactory
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	events   record.EventBroadcaster
}

// Queue keys: a claim's or a volume's, told apart by a prefix.
const (
	claimKeyPrefix  = "claim/"
	volumeKeyPrefix = "volume/"
)

// New validates cfg and builds the provisioner on client (the node's
// identity). It starts nothing.
func New(cfg Config, client kubernetes.Interface) (*Provisioner, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.New("local-path provisioner: an API client is required")
	}
	cfg.StoragePath = filepath.Clean(cfg.StoragePath)
	factory := informers.NewSharedInformerFactory(client, 0)
	claims := factory.Core().V1().PersistentVolumeClaims()
	volumes := factory.Core().V1().PersistentVolumes()
	classes := factory.Storage().V1().StorageClasses()
	p := &Provisioner{
		cfg:     cfg,
		client:  client,
		factory: factory,
		claims:  claims.Lister(),
		volumes: volumes.Lister(),
		classes: classes.Lister(),
		synced:  []cache.InformerSynced{claims.Informer().HasSynced, volumes.Informer().HasSynced, classes.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "local-path"}),
	}
	p.events = record.NewBroadcaster()
	p.recorder = p.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ProvisionerName, Host: cfg.NodeName})
	enqueue := func(prefix string) func(obj any) {
		return func(obj any) {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				p.queue.Add(prefix + key)
			}
		}
	}
	if _, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue(claimKeyPrefix),
		UpdateFunc: func(_, obj any) { enqueue(claimKeyPrefix)(obj) },
	}); err != nil {
		return nil, fmt.Errorf("local-path provisioner: watch claims: %w", err)
	}
	ours := func(obj any) bool {
		pv, ok := obj.(*corev1.PersistentVolume)
		return ok && pv.Annotations[AnnProvisionedBy] == ProvisionerName
	}
	if _, err := volumes.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: ours,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue(volumeKeyPrefix),
			UpdateFunc: func(_, obj any) { enqueue(volumeKeyPrefix)(obj) },
		},
	}); err != nil {
		return nil, fmt.Errorf("local-path provisioner: watch volumes: %w", err)
	}
	return p, nil
}

// Run provisions until ctx is cancelled; it returns nil then.
func (p *Provisioner) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("local-path")
	ctx = klog.NewContext(ctx, logger)
	defer runtime.HandleCrashWithContext(ctx)
	p.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: p.client.CoreV1().Events("")})
	defer p.events.Shutdown()
	defer p.queue.ShutDown()
	p.factory.Start(ctx.Done())
	defer p.factory.Shutdown()
	if !cachesync.WaitForCacheSync(ctx, p.synced...) {
		return nil
	}
	logger.V(2).Info("Local-path provisioner started", "node", p.cfg.NodeName, "storagePath", p.cfg.StoragePath)
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	for p.processNext(ctx) {
	}
	return nil
}

func (p *Provisioner) processNext(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	err := p.sync(ctx, key)
	if err == nil {
		p.queue.Forget(key)
		return true
	}
	klog.FromContext(ctx).Error(err, "Local-path sync failed, will retry", "key", key)
	p.queue.AddRateLimited(key)
	return true
}

// sync handles one queue key.
func (p *Provisioner) sync(ctx context.Context, key string) error {
	switch {
	case strings.HasPrefix(key, claimKeyPrefix):
		ns, name, err := cache.SplitMetaNamespaceKey(strings.TrimPrefix(key, claimKeyPrefix))
		if err != nil {
			return nil
		}
		return p.syncClaim(ctx, ns, name)
	case strings.HasPrefix(key, volumeKeyPrefix):
		return p.syncVolume(ctx, strings.TrimPrefix(key, volumeKeyPrefix))
	}
	return nil
}

// syncClaim provisions a volume for a claim waiting for this node, or
// resizes the volume of a bound claim that grew.
func (p *Provisioner) syncClaim(ctx context.Context, ns, name string) error {
	claim, err := p.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if claim.DeletionTimestamp != nil {
		return nil
	}
	if claim.Spec.VolumeName != "" {
		return p.expand(ctx, claim)
	}
	if provisionerOf(claim) != ProvisionerName || claim.Annotations[AnnSelectedNode] != p.cfg.NodeName {
		return nil
	}
	return p.provision(ctx, claim)
}

// provisionerOf returns the provisioner the binder asked for.
func provisionerOf(claim *corev1.PersistentVolumeClaim) string {
	if v := claim.Annotations[AnnStorageProvisioner]; v != "" {
		return v
	}
	return claim.Annotations[AnnBetaStorageProvisioner]
}

func classOf(claim *corev1.PersistentVolumeClaim) string {
	if claim.Spec.StorageClassName != nil {
		return *claim.Spec.StorageClassName
	}
	return claim.Annotations[annBetaStorageClass]
}

// VolumeName is the PersistentVolume provisioned for a claim (the
// external-provisioner's naming).
func VolumeName(claim *corev1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

// VolumeDir is the directory of a claim's volume under storagePath
// (k3s's naming).
func VolumeDir(storagePath string, claim *corev1.PersistentVolumeClaim) string {
	return filepath.Join(storagePath, fmt.Sprintf("pvc-%s_%s_%s", claim.UID, claim.Namespace, claim.Name))
}

// unsupported names why a claim cannot get a local-path volume; "" when it can.
func unsupported(claim *corev1.PersistentVolumeClaim) string {
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return "volumeMode Block is not supported by " + ProvisionerName + ": it provisions directories (volumeMode Filesystem)"
	}
	for _, m := range claim.Spec.AccessModes {
		if m == corev1.ReadWriteMany {
			return "access mode ReadWriteMany is not supported by " + ProvisionerName + ": its volumes live on one node (use ReadWriteOnce, ReadWriteOncePod or ReadOnlyMany)"
		}
	}
	if _, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		return "the claim has no spec.resources.requests.storage"
	}
	return ""
}

func (p *Provisioner) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	logger := klog.FromContext(ctx)
	pvName := VolumeName(claim)
	if _, err := p.volumes.Get(pvName); err == nil {
		return nil // provisioned; the binder binds it
	}
	className := classOf(claim)
	class, err := p.classes.Get(className)
	if err != nil {
		return fmt.Errorf("claim %s/%s: storage class %q: %w", claim.Namespace, claim.Name, className, err)
	}
	if class.Provisioner != ProvisionerName {
		return nil
	}
	if reason := unsupported(claim); reason != "" {
		// As k3s's provisioner: refused, said on the claim, not retried
		// until the claim changes.
		p.recorder.Event(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, reason)
		logger.V(2).Info("Refused to provision a local-path volume", "claim", klog.KObj(claim), "reason", reason)
		return nil
	}
	dir := VolumeDir(p.cfg.StoragePath, claim)
	created := false
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return fmt.Errorf("create volume directory %s: %w", dir, err)
		}
		created = true
		// Writable by any user of the pod, as k3s's volumes are.
		if err := os.Chmod(dir, 0o777); err != nil {
			_ = os.Remove(dir)
			return fmt.Errorf("chmod volume directory %s: %w", dir, err)
		}
	} else if err != nil {
		return fmt.Errorf("volume directory %s: %w", dir, err)
	}
	pv := p.newVolume(claim, class, pvName, dir)
	if _, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if created {
			_ = os.Remove(dir)
		}
		p.recorder.Eventf(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, "create persistentvolume %s: %v", pvName, err)
		return fmt.Errorf("create persistentvolume %s: %w", pvName, err)
	}
	logger.V(2).Info("Provisioned a local-path volume", "claim", klog.KObj(claim), "volume", pvName, "path", dir)
	p.recorder.Eventf(claim, corev1.EventTypeNormal, ReasonProvisioningSucceeded, "Successfully provisioned volume %s on node %s", pvName, p.cfg.NodeName)
	return nil
}

// newVolume is the PersistentVolume of a claim: a hostPath directory on
// this node, the claim's size, modes and class, reserved for the claim.
func (p *Provisioner) newVolume(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, name, dir string) *corev1.PersistentVolume {
	mode := corev1.PersistentVolumeFilesystem
	if claim.Spec.VolumeMode != nil {
		mode = *claim.Spec.VolumeMode
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	dirType := corev1.HostPathDirectoryOrCreate
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{AnnProvisionedBy: ProvisionerName},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes: append([]corev1.PersistentVolumeAccessMode(nil), claim.Spec.AccessModes...),
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType},
			},
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			VolumeMode:                    &mode,
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{p.cfg.NodeName},
				}}}},
			}},
		},
	}
}

// onNode says whether a volume's node affinity pins it to node.
func onNode(pv *corev1.PersistentVolume, node string) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return false
	}
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, r := range t.MatchExpressions {
			if r.Key == corev1.LabelHostname && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 && r.Values[0] == node {
				return true
			}
		}
	}
	return false
}

func volumePath(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	}
	return ""
}

// syncVolume deletes a Released volume of this node with reclaim policy
// Delete: its directory first, then the object.
func (p *Provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Annotations[AnnProvisionedBy] != ProvisionerName || !onNode(pv, p.cfg.NodeName) || pv.DeletionTimestamp != nil {
		return nil
	}
	if pv.Status.Phase != corev1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	dir := volumePath(pv)
	if err := p.removeData(dir); err != nil {
		p.recorder.Event(pv, corev1.EventTypeWarning, ReasonVolumeFailedDelete, err.Error())
		return err
	}
	uid := pv.UID
	err = p.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete persistentvolume %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted a released local-path volume", "volume", name, "path", dir)
	return nil
}

// removeData removes a volume's directory and everything in it. It
// refuses a path that is not a pvc-* directory right under the storage
// path: a volume's path is never trusted to point anywhere else.
func (p *Provisioner) removeData(dir string) error {
	clean := filepath.Clean(dir)
	if dir == "" || !filepath.IsAbs(dir) || filepath.Dir(clean) != p.cfg.StoragePath || !strings.HasPrefix(filepath.Base(clean), "pvc-") {
		return fmt.Errorf("volume path %q is not a pvc-* directory of this node's storage path %s (--default-local-storage-path): not deleting it", dir, p.cfg.StoragePath)
	}
	if err := os.RemoveAll(clean); err != nil {
		return fmt.Errorf("remove volume directory %s: %w", clean, err)
	}
	return nil
}

// expand gives a bound claim of this node's volumes the size it asks for,
// when its class allows expansion: the volume's capacity, then the claim's
// status. hostPath has no quota: the size is not enforced.
func (p *Provisioner) expand(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Status.Phase != corev1.ClaimBound {
		return nil
	}
	want, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	pv, err := p.volumes.Get(claim.Spec.VolumeName)
	if err != nil {
		// Not seen yet (or gone): the volume's own events do not bring
		// the claim back, the claim's next update does.
		return nil
	}
	if pv.Annotations[AnnProvisionedBy] != ProvisionerName || !onNode(pv, p.cfg.NodeName) ||
		pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID {
		return nil
	}
	have := pv.Spec.Capacity[corev1.ResourceStorage]
	status := claim.Status.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 && want.Cmp(status) <= 0 {
		return nil
	}
	class, err := p.classes.Get(classOf(claim))
	if err != nil || class.AllowVolumeExpansion == nil || !*class.AllowVolumeExpansion {
		return nil
	}
	if want.Cmp(have) > 0 {
		pv = pv.DeepCopy()
		pv.Spec.Capacity[corev1.ResourceStorage] = want
		if _, err := p.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("resize persistentvolume %s: %w", pv.Name, err)
		}
	}
	if want.Cmp(status) > 0 {
		c := claim.DeepCopy()
		if c.Status.Capacity == nil {
			c.Status.Capacity = corev1.ResourceList{}
		}
		c.Status.Capacity[corev1.ResourceStorage] = want
		if c.Status.AllocatedResources == nil {
			c.Status.AllocatedResources = corev1.ResourceList{}
		}
		c.Status.AllocatedResources[corev1.ResourceStorage] = want
		delete(c.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
		var conds []corev1.PersistentVolumeClaimCondition
		for _, cond := range c.Status.Conditions {
			if cond.Type != corev1.PersistentVolumeClaimResizing && cond.Type != corev1.PersistentVolumeClaimFileSystemResizePending {
				conds = append(conds, cond)
			}
		}
		c.Status.Conditions = conds
		if _, err := p.client.CoreV1().PersistentVolumeClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update status of claim %s/%s: %w", c.Namespace, c.Name, err)
		}
	}
	klog.FromContext(ctx).V(2).Info("Resized a local-path volume", "claim", klog.KObj(claim), "volume", pv.Name, "size", want.String())
	p.recorder.Eventf(claim, corev1.EventTypeNormal, ReasonVolumeResizeSuccessful, "Resized volume %s to %s (hostPath: the size is not enforced)", pv.Name, want.String())
	return nil
}
