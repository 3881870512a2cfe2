package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Directory names of the volume plugins under <pod-dir>/volumes/.
const (
	EmptyDirPluginDir    = "kubernetes.io~empty-dir"
	ConfigMapPluginDir   = "kubernetes.io~configmap"
	SecretPluginDir      = "kubernetes.io~secret"
	ProjectedPluginDir   = "kubernetes.io~projected"
	DownwardAPIPluginDir = "kubernetes.io~downward-api"
)

// Manager prepares pods' volumes and gives containers their mounts. It is
// safe for concurrent use; calls for one pod are serialized.
type Manager interface {
	// SetUpPod makes every volume of pod ready and returns the host path of
	// each one that is (volume name → path). It is idempotent and meant to
	// be called on every sync of the pod: it refreshes configMap, secret and
	// downward API contents and service account tokens, fetching each
	// volume's objects at most once per RefreshInterval unless the pod
	// changed (generation, labels or annotations) and renewing tokens at 80%
	// of their lifetime or after 24 hours. A volume that could not be set up
	// is missing from the map and reported in the error as a *VolumeError
	// (see VolumeErrors); a refresh that fails while earlier content is in
	// place keeps that content, logs, and is retried after RefreshInterval.
	SetUpPod(ctx context.Context, pod *corev1.Pod) (map[string]string, error)
	// Mounts returns the CRI mounts of one container of pod: its
	// volumeMounts (volumePaths as SetUpPod returned them), the pod's
	// /etc/hosts and the container's termination message file. It creates
	// a new termination message file on every call, so it is called once
	// per container instance, right before CreateContainer.
	Mounts(pod *corev1.Pod, container *corev1.Container, volumePaths map[string]string, opts ContainerOptions) ([]*runtimeapi.Mount, error)
	// TearDownPod unmounts everything under the pod's directory and removes
	// it. Call it only once no container of the pod exists any more.
	TearDownPod(ctx context.Context, podUID types.UID) error
	// CleanupOrphans tears down the directory of every pod not in active.
	// active must hold every pod the agent knows whose containers may still
	// exist, terminating ones included.
	CleanupOrphans(ctx context.Context, active sets.Set[types.UID]) error
}

// Objects reads the API objects volumes project. The agent's implementation
// may serve them from a cache; an error for which apierrors.IsNotFound is
// true means the object does not exist.
type Objects interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// Claims reads the PersistentVolumeClaims and PersistentVolumes behind
// persistentVolumeClaim and ephemeral volumes. An error for which
// apierrors.IsNotFound is true means the object does not exist.
type Claims interface {
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error)
}

// TokenRequester issues a service account token bound to pod (the TokenRequest
// API: serviceaccounts/<name>/token with a boundObjectRef to the pod). A nil
// audiences means the apiserver's default audiences. A zero expiry means
// now + expirationSeconds.
type TokenRequester func(ctx context.Context, namespace, serviceAccount string, audiences []string, expirationSeconds int64, pod *corev1.Pod) (token string, expiry time.Time, err error)

// Deps are the manager's handles on the rest of the agent.
type Deps struct {
	// Objects reads configMaps and secrets. Required.
	Objects Objects
	// Claims reads claims and volumes. Pods with persistentVolumeClaim or
	// ephemeral volumes fail to set up without it.
	Claims Claims
	// RequestToken issues projected service account tokens. Pods with a
	// serviceAccountToken projection fail to set up without it.
	RequestToken TokenRequester
	// TrustBundles reads ClusterTrustBundles. Pods with a
	// clusterTrustBundle projection fail to set up without it.
	TrustBundles TrustBundles
	// PodCertificates creates PodCertificateRequests. Pods with a
	// podCertificate projection fail to set up without it.
	PodCertificates PodCertificates
	// NodeAllocatable returns the node's allocatable resources: the limits
	// of containers without their own for resourceFieldRef, and the largest
	// tmpfs. Nil means none known.
	NodeAllocatable func() corev1.ResourceList
	// Mounter mounts tmpfs and bind mounts. Default SystemMounter.
	Mounter Mounter
	// Clock is the time source. Default the real clock.
	Clock clock.PassiveClock
}

type manager struct {
	cfg     Config
	objects Objects
	claims  Claims
	token   TokenRequester
	bundles TrustBundles
	certs   PodCertificates
	alloc   func() corev1.ResourceList
	mounter Mounter
	clock   clock.PassiveClock

	mu   sync.Mutex
	pods map[types.UID]*podState
}

// podState is what the manager remembers of one pod between calls.
type podState struct {
	mu          sync.Mutex
	known       bool
	generation  int64
	labels      map[string]string
	annotations map[string]string
	volumes     map[string]*volumeState
}

// volumeState is what the manager remembers of one volume.
type volumeState struct {
	// ready says the volume was set up by this process.
	ready bool
	// mounted says its tmpfs is known to be mounted.
	mounted bool
	// refreshed is when its objects were last fetched (or tried, with stale
	// content kept).
	refreshed time.Time
	// path is the host path of a persistentVolumeClaim or ephemeral
	// volume once ready.
	path string
	// tokens are the tokens of a projected volume by source index.
	tokens map[int]*tokenState
	// certs are the pod certificates of a projected volume by source index.
	certs map[int]*certState
}

// New returns a volume manager. It starts nothing.
func New(cfg Config, deps Deps) (Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	if deps.Objects == nil {
		return nil, errors.New("volume: Objects is required")
	}
	if deps.Mounter == nil {
		deps.Mounter = SystemMounter{}
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.NodeAllocatable == nil {
		deps.NodeAllocatable = func() corev1.ResourceList { return nil }
	}
	return &manager{
		cfg:     cfg,
		objects: deps.Objects,
		claims:  deps.Claims,
		token:   deps.RequestToken,
		bundles: deps.TrustBundles,
		certs:   deps.PodCertificates,
		alloc:   deps.NodeAllocatable,
		mounter: deps.Mounter,
		clock:   deps.Clock,
		pods:    map[types.UID]*podState{},
	}, nil
}

func (m *manager) podDir(uid types.UID) string { return filepath.Join(m.cfg.PodsDir, string(uid)) }

func (m *manager) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(m.podDir(uid), "volumes", plugin, name)
}

// lockPod returns the locked state of a pod, created when missing.
func (m *manager) lockPod(uid types.UID) *podState {
	m.mu.Lock()
	ps, ok := m.pods[uid]
	if !ok {
		ps = &podState{volumes: map[string]*volumeState{}}
		m.pods[uid] = ps
	}
	m.mu.Unlock()
	ps.mu.Lock()
	return ps
}

// observe records the parts of pod that volumes depend on and says whether
// they changed since the last call.
func (ps *podState) observe(pod *corev1.Pod) bool {
	changed := !ps.known || ps.generation != pod.Generation ||
		!maps.Equal(ps.labels, pod.Labels) || !maps.Equal(ps.annotations, pod.Annotations)
	ps.known = true
	ps.generation = pod.Generation
	ps.labels = maps.Clone(pod.Labels)
	ps.annotations = maps.Clone(pod.Annotations)
	return changed
}

func (ps *podState) volume(name string) *volumeState {
	vs, ok := ps.volumes[name]
	if !ok {
		vs = &volumeState{tokens: map[int]*tokenState{}, certs: map[int]*certState{}}
		ps.volumes[name] = vs
	}
	return vs
}

func (m *manager) SetUpPod(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	ps := m.lockPod(pod.UID)
	defer ps.mu.Unlock()
	if err := os.MkdirAll(m.podDir(pod.UID), 0o750); err != nil {
		return nil, fmt.Errorf("create pod directory: %w", err)
	}
	podChanged := ps.observe(pod)
	paths := make(map[string]string, len(pod.Spec.Volumes))
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		p, err := m.setUpVolume(ctx, pod, ps.volume(vol.Name), vol, podChanged)
		if err != nil {
			errs = append(errs, &VolumeError{Volume: vol.Name, Err: err})
			continue
		}
		paths[vol.Name] = p
	}
	return paths, errors.Join(errs...)
}

func (m *manager) setUpVolume(ctx context.Context, pod *corev1.Pod, vs *volumeState, vol *corev1.Volume, podChanged bool) (string, error) {
	switch {
	case vol.HostPath != nil:
		return m.setUpHostPath(vs, vol.HostPath)
	case vol.EmptyDir != nil:
		return m.setUpEmptyDir(pod, vs, vol)
	case vol.PersistentVolumeClaim != nil:
		return m.setUpClaim(ctx, pod, vs, vol.PersistentVolumeClaim.ClaimName, false)
	case vol.Ephemeral != nil:
		return m.setUpClaim(ctx, pod, vs, EphemeralClaimName(pod, vol), true)
	case vol.ConfigMap != nil:
		src := vol.ConfigMap
		return m.setUpFiles(ctx, pod, vs, vol.Name, ConfigMapPluginDir, false, podChanged, func(context.Context) (map[string]file, error) {
			out := map[string]file{}
			err := m.configMapFiles(ctx, pod.Namespace, src.Name, src.Items, modeOr(src.DefaultMode), src.DefaultUser, isTrue(src.Optional), out)
			return out, err
		})
	case vol.Secret != nil:
		src := vol.Secret
		return m.setUpFiles(ctx, pod, vs, vol.Name, SecretPluginDir, true, podChanged, func(context.Context) (map[string]file, error) {
			out := map[string]file{}
			err := m.secretFiles(ctx, pod.Namespace, src.SecretName, src.Items, modeOr(src.DefaultMode), src.DefaultUser, isTrue(src.Optional), out)
			return out, err
		})
	case vol.DownwardAPI != nil:
		src := vol.DownwardAPI
		return m.setUpFiles(ctx, pod, vs, vol.Name, DownwardAPIPluginDir, true, podChanged, func(context.Context) (map[string]file, error) {
			out := map[string]file{}
			err := downwardFiles(pod, src.Items, modeOr(src.DefaultMode), m.alloc(), out)
			return out, err
		})
	case vol.Projected != nil:
		return m.setUpFiles(ctx, pod, vs, vol.Name, ProjectedPluginDir, true, podChanged, func(ctx context.Context) (map[string]file, error) {
			return m.projectedFiles(ctx, pod, vs, vol.Projected)
		})
	}
	return "", fmt.Errorf("volume type %s is not supported by this node", volumeTypeName(vol))
}

// setUpFiles sets up a volume whose files come from build, written by the
// atomic writer into a directory (tmpfs when onTmpfs).
func (m *manager) setUpFiles(ctx context.Context, pod *corev1.Pod, vs *volumeState, name, plugin string, onTmpfs, podChanged bool, build func(context.Context) (map[string]file, error)) (string, error) {
	logger := klog.FromContext(ctx)
	dir := m.volumeDir(pod.UID, plugin, name)
	now := m.clock.Now()
	if vs.ready && !podChanged && now.Sub(vs.refreshed) < m.cfg.RefreshInterval && !vs.tokenDue(now) && !vs.certDue(now) {
		return dir, nil
	}
	if err := m.ensureDir(pod, vs, dir, onTmpfs); err != nil {
		return "", err
	}
	files, err := build(ctx)
	if err != nil {
		if !hasContent(dir) {
			return "", err
		}
		logger.Error(err, "Volume refresh failed, keeping its previous content", "pod", klog.KObj(pod), "volume", name)
		vs.ready, vs.refreshed = true, now
		return dir, nil
	}
	var prepare func() error
	if gid := fsGroup(pod); gid != nil {
		prepare = func() error { return applyFSGroup(dir, *gid, true) }
	}
	written, err := atomicWrite(dir, files, now, prepare)
	if err != nil {
		return "", fmt.Errorf("write volume files: %w", err)
	}
	if written {
		logger.V(2).Info("Volume content written", "pod", klog.KObj(pod), "volume", name, "files", len(files))
	}
	vs.ready, vs.refreshed = true, now
	return dir, nil
}

// ensureDir creates the directory of a file-backed volume, mounting a tmpfs
// on it when asked.
func (m *manager) ensureDir(pod *corev1.Pod, vs *volumeState, dir string, onTmpfs bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create volume directory: %w", err)
	}
	if !onTmpfs || vs.mounted {
		return nil
	}
	mounted, err := m.mounter.IsMountPoint(dir)
	if err != nil {
		return fmt.Errorf("check volume mount: %w", err)
	}
	if !mounted {
		if err := m.mounter.MountTmpfs(dir, tmpfsSize(pod, nil, m.alloc())); err != nil {
			return fmt.Errorf("mount tmpfs: %w", err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return fmt.Errorf("chmod volume directory: %w", err)
		}
	}
	vs.mounted = true
	return nil
}

func (m *manager) setUpHostPath(vs *volumeState, src *corev1.HostPathVolumeSource) (string, error) {
	if vs.ready {
		return src.Path, nil
	}
	if err := checkHostPath(src); err != nil {
		return "", err
	}
	vs.ready = true
	return src.Path, nil
}

func (m *manager) setUpEmptyDir(pod *corev1.Pod, vs *volumeState, vol *corev1.Volume) (string, error) {
	dir := m.volumeDir(pod.UID, EmptyDirPluginDir, vol.Name)
	if vs.ready {
		return dir, nil
	}
	src := vol.EmptyDir
	fresh := false
	switch src.Medium {
	case corev1.StorageMediumDefault:
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			fresh = true
		}
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", fmt.Errorf("create emptyDir: %w", err)
		}
		if fresh {
			if err := os.Chmod(dir, emptyDirMode(src)); err != nil {
				return "", fmt.Errorf("chmod emptyDir: %w", err)
			}
		}
	case corev1.StorageMediumMemory:
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", fmt.Errorf("create emptyDir: %w", err)
		}
		mounted, err := m.mounter.IsMountPoint(dir)
		if err != nil {
			return "", fmt.Errorf("check emptyDir mount: %w", err)
		}
		if !mounted {
			if err := m.mounter.MountTmpfs(dir, tmpfsSize(pod, src.SizeLimit, m.alloc())); err != nil {
				return "", fmt.Errorf("mount tmpfs for emptyDir: %w", err)
			}
			fresh = true
			// A new tmpfs root is 1777; an explicit mode replaces it.
			if src.Mode != nil {
				if err := os.Chmod(dir, emptyDirMode(src)); err != nil {
					return "", fmt.Errorf("chmod emptyDir: %w", err)
				}
			}
		}
		vs.mounted = true
	default:
		return "", fmt.Errorf("emptyDir medium %q is not supported", src.Medium)
	}
	if gid := fsGroup(pod); fresh && gid != nil {
		if err := applyFSGroup(dir, *gid, false); err != nil {
			return "", err
		}
	}
	vs.ready = true
	return dir, nil
}

func emptyDirMode(src *corev1.EmptyDirVolumeSource) fs.FileMode {
	if src.Mode != nil {
		return fs.FileMode(*src.Mode) & fs.ModePerm
	}
	return 0o777
}

func (m *manager) TearDownPod(ctx context.Context, podUID types.UID) error {
	ps := m.lockPod(podUID)
	defer ps.mu.Unlock()
	if err := m.tearDown(ctx, podUID); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.pods, podUID)
	m.mu.Unlock()
	return nil
}

// tearDown unmounts what is mounted under a pod's directory, deepest first,
// and removes the directory only once nothing is mounted there any more, so
// that the removal can never reach into a volume's source.
func (m *manager) tearDown(ctx context.Context, uid types.UID) error {
	dir := m.podDir(uid)
	if uid == "" || strings.ContainsAny(string(uid), "/\\") || string(uid) == "." || string(uid) == ".." {
		return fmt.Errorf("invalid pod UID %q", uid)
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	points, err := m.mounter.MountPoints(dir)
	if err != nil {
		return fmt.Errorf("list mounts of pod %s: %w", uid, err)
	}
	// subPath binds first (they pin parts of volumes), then deepest first.
	subpaths := filepath.Join(dir, "volume-subpaths") + "/"
	sort.SliceStable(points, func(i, j int) bool {
		si, sj := strings.HasPrefix(points[i], subpaths), strings.HasPrefix(points[j], subpaths)
		if si != sj {
			return si
		}
		return len(points[i]) > len(points[j])
	})
	var errs []error
	for _, p := range points {
		if err := m.mounter.Unmount(p); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if left, err := m.mounter.MountPoints(dir); err != nil {
		return fmt.Errorf("list mounts of pod %s: %w", uid, err)
	} else if len(left) > 0 {
		return fmt.Errorf("pod %s: %s still mounted, not removing its directory", uid, strings.Join(left, ", "))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove pod directory: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Pod volumes torn down", "podUID", uid, "unmounted", len(points))
	return nil
}

func (m *manager) CleanupOrphans(ctx context.Context, active sets.Set[types.UID]) error {
	entries, err := os.ReadDir(m.cfg.PodsDir)
	if errors.Is(err, fs.ErrNotExist) {
		entries = nil
	} else if err != nil {
		return fmt.Errorf("list pod directories: %w", err)
	}
	var errs []error
	for _, e := range entries {
		uid := types.UID(e.Name())
		if !e.IsDir() || active.Has(uid) {
			continue
		}
		if err := m.TearDownPod(ctx, uid); err != nil {
			errs = append(errs, err)
		}
	}
	// Forget pods whose directory was already gone.
	m.mu.Lock()
	for uid := range m.pods {
		if !active.Has(uid) {
			delete(m.pods, uid)
		}
	}
	m.mu.Unlock()
	return errors.Join(errs...)
}

func volumeTypeName(vol *corev1.Volume) string {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case vol.Ephemeral != nil:
		return "ephemeral"
	case vol.CSI != nil:
		return "csi"
	case vol.Image != nil:
		return "image"
	case vol.NFS != nil:
		return "nfs"
	case vol.ISCSI != nil:
		return "iscsi"
	case vol.FC != nil:
		return "fc"
	}
	return "(unknown)"
}

func modeOr(m *int32) int32 {
	if m != nil {
		return *m
	}
	return corev1.ConfigMapVolumeSourceDefaultMode
}

func isTrue(b *bool) bool { return b != nil && *b }

func fsGroup(pod *corev1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}
