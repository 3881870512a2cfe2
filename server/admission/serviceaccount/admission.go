package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"
)

const (
	// Name is the name of the plugin, as upstream registers it.
	Name = "ServiceAccount"

	// DefaultServiceAccountName is the ServiceAccount given to pods that
	// name none.
	DefaultServiceAccountName = "default"

	// EnforceMountableSecretsAnnotation, set to "true" on a ServiceAccount,
	// restricts its pods to the secrets the ServiceAccount lists.
	EnforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"

	// TokenVolumeNamePrefix starts the name of the projected token volume;
	// five random characters follow it.
	TokenVolumeNamePrefix = "kube-api-access-"

	// DefaultAPITokenMountPath is where containers find the token, the CA
	// bundle and the namespace.
	DefaultAPITokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

	// TokenExpirationSeconds is the expirationSeconds of the projected
	// token: one hour and seven seconds, the value the token issuer
	// recognises to hand out a longer-lived token and warn on its use after
	// an hour.
	TokenExpirationSeconds int64 = 3607

	// RootCAConfigMapName is the ConfigMap, present in every namespace,
	// that holds the cluster CA bundle under the key "ca.crt".
	RootCAConfigMapName = "kube-root-ca.crt"

	// mirrorPodAnnotation marks a pod that mirrors a kubelet static pod.
	mirrorPodAnnotation = corev1.MirrorPodAnnotationKey

	// defaultSALookups is how many times the API is asked for the "default"
	// ServiceAccount before a pod is rejected; other names are asked once.
	defaultSALookups = 10
)

// Plugin is the ServiceAccount admission plugin. Safe for concurrent use.
// It is ready once its ServiceAccount informer has synced, but it answers
// before that too, by asking the API.
type Plugin struct {
	*admission.Handler

	client   kubernetes.Interface
	lister   corev1listers.ServiceAccountLister
	makeName func(prefix string) string
	// retryWait returns the pause between two API lookups of the default
	// ServiceAccount.
	retryWait func() time.Duration
}

var (
	_ admission.MutationInterface       = (*Plugin)(nil)
	_ admission.ValidationInterface     = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
)

// New returns the plugin. It reads ServiceAccounts from the factory's
// informer (registering it, so the caller must start the factory after
// New) and from client when the informer has not seen one yet. The plugin's
// ready func reports the informer's sync.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory) (*Plugin, error) {
	if client == nil || factory == nil {
		return nil, fmt.Errorf("%s admission needs a client and an informer factory", Name)
	}
	informer := factory.Core().V1().ServiceAccounts()
	p := &Plugin{
		Handler:   admission.NewHandler(admission.Create),
		client:    client,
		lister:    informer.Lister(),
		makeName:  names.SimpleNameGenerator.GenerateName,
		retryWait: func() time.Duration { return time.Duration(100+rand.IntN(100)) * time.Millisecond },
	}
	p.SetReadyFunc(informer.Informer().HasSynced)
	return p, nil
}

// ValidateInitialization reports a missing dependency.
func (p *Plugin) ValidateInitialization() error {
	if p.client == nil {
		return errors.New("missing client")
	}
	if p.lister == nil {
		return errors.New("missing ServiceAccount lister")
	}
	return nil
}

// Admit defaults the pod's ServiceAccount, mounts its token and copies its
// image pull secrets, then validates the result as Validate does.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	pod, ok := podOf(a)
	if !ok || a.GetOperation() != admission.Create {
		return nil
	}
	if isMirrorPod(pod) {
		return p.Validate(ctx, a, o)
	}

	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
		// Set the deprecated alias too, as defaulting would, so the stored
		// pod round-trips unchanged.
		pod.Spec.DeprecatedServiceAccount = DefaultServiceAccountName //nolint:staticcheck // the alias must stay in sync
	}

	sa, err := p.getServiceAccount(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	if shouldAutomount(sa, pod) {
		p.mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, ref := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets[i] = corev1.LocalObjectReference{Name: ref.Name}
		}
	}
	return p.Validate(ctx, a, o)
}

// Validate checks a pod being created: a mirror pod may not use a
// ServiceAccount, a secret or a projected token; any other pod must name an
// existing ServiceAccount and, if that account enforces mountable secrets,
// use only the secrets it lists.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ok := podOf(a)
	if !ok || a.GetOperation() != admission.Create {
		return nil
	}

	if isMirrorPod(pod) {
		if err := validateMirrorPod(pod); err != nil {
			return admission.NewForbidden(a, err)
		}
		return nil
	}

	if pod.Spec.ServiceAccountName == "" {
		return admission.NewForbidden(a, fmt.Errorf("no service account specified for pod %s/%s", a.GetNamespace(), pod.Name))
	}
	sa, err := p.getServiceAccount(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	if enforcesMountableSecrets(sa) {
		if err := checkSecretReferences(sa, pod); err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	return nil
}

// podOf returns the pod of a request on the pods resource proper.
func podOf(a admission.Attributes) (*corev1.Pod, bool) {
	if a.GetResource().GroupResource() != corev1.Resource("pods") || a.GetSubresource() != "" {
		return nil, false
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	return pod, ok && pod != nil
}

func isMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[mirrorPodAnnotation]
	return ok
}

func validateMirrorPod(pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return errors.New("a mirror pod may not reference service accounts")
	}
	if len(podSecretNames(pod)) > 0 {
		return errors.New("a mirror pod may not reference secrets")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return errors.New("a mirror pod may not use ServiceAccountToken volume projections")
			}
		}
	}
	return nil
}

// shouldAutomount lets the pod's choice win over the ServiceAccount's;
// both unset means mount.
func shouldAutomount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

func enforcesMountableSecrets(sa *corev1.ServiceAccount) bool {
	v, ok := sa.Annotations[EnforceMountableSecretsAnnotation]
	if !ok {
		return false
	}
	enforce, _ := strconv.ParseBool(v)
	return enforce
}

// getServiceAccount reads the ServiceAccount from the informer cache and,
// on a miss, from the API: once for most names, up to defaultSALookups
// times for "default", which the ServiceAccount controller creates shortly
// after its namespace.
func (p *Plugin) getServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa, err := p.lister.ServiceAccounts(namespace).Get(name)
	if err == nil {
		return sa, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}

	attempts := 1
	if name == DefaultServiceAccountName {
		attempts = defaultSALookups
	}
	wait := p.retryWait()
	for i := range attempts {
		if i > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, ctx.Err()
			case <-timer.C:
			}
		}
		sa, err := p.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return sa, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

// mountToken mounts the projected token volume at DefaultAPITokenMountPath
// in each container and init container that has nothing mounted there,
// adding the volume if some container needs it. A volume already named
// kube-api-access-* is reused.
func (p *Plugin) mountToken(pod *corev1.Pod) {
	volumeName := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, TokenVolumeNamePrefix) {
			volumeName = v.Name
			break
		}
	}
	haveVolume := volumeName != ""
	if !haveVolume {
		volumeName = p.makeName(TokenVolumeNamePrefix)
	}
	mount := corev1.VolumeMount{Name: volumeName, ReadOnly: true, MountPath: DefaultAPITokenMountPath}

	mounted := false
	addMount := func(c *corev1.Container) {
		for _, m := range c.VolumeMounts {
			if m.MountPath == DefaultAPITokenMountPath {
				return
			}
		}
		c.VolumeMounts = append(c.VolumeMounts, mount)
		mounted = true
	}
	for i := range pod.Spec.InitContainers {
		addMount(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		addMount(&pod.Spec.Containers[i])
	}

	if mounted && !haveVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         volumeName,
			VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()},
		})
	}
}

// TokenVolumeSource returns the projected volume source of the automounted
// ServiceAccount token: the bound token at "token", the cluster CA at
// "ca.crt" and the pod's namespace at "namespace", mode 0644.
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Path:              "token",
				ExpirationSeconds: ptr.To(TokenExpirationSeconds),
			}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMapName},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{
				Items: []corev1.DownwardAPIVolumeFile{{
					Path:     "namespace",
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
				}},
			}},
		},
	}
}

// checkSecretReferences rejects secret volumes, secret env references and
// image pull secrets that the ServiceAccount does not list.
func checkSecretReferences(sa *corev1.ServiceAccount, pod *corev1.Pod) error {
	mountable := sets.New[string]()
	for _, ref := range sa.Secrets {
		mountable.Insert(ref.Name)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		if !mountable.Has(v.Secret.SecretName) {
			return fmt.Errorf("volume with secret.secretName=%q is not allowed because service account %s does not reference that secret", v.Secret.SecretName, sa.Name)
		}
	}
	check := func(kind string, c *corev1.Container) error {
		for _, env := range c.Env {
			if env.ValueFrom != nil && env.ValueFrom.SecretKeyRef != nil && !mountable.Has(env.ValueFrom.SecretKeyRef.Name) {
				return fmt.Errorf("%s %s with envVar %s referencing secret.secretName=%q is not allowed because service account %s does not reference that secret", kind, c.Name, env.Name, env.ValueFrom.SecretKeyRef.Name, sa.Name)
			}
		}
		for _, from := range c.EnvFrom {
			if from.SecretRef != nil && !mountable.Has(from.SecretRef.Name) {
				return fmt.Errorf("%s %s with envFrom referencing secret.secretName=%q is not allowed because service account %s does not reference that secret", kind, c.Name, from.SecretRef.Name, sa.Name)
			}
		}
		return nil
	}
	for i := range pod.Spec.InitContainers {
		if err := check("init container", &pod.Spec.InitContainers[i]); err != nil {
			return err
		}
	}
	for i := range pod.Spec.Containers {
		if err := check("container", &pod.Spec.Containers[i]); err != nil {
			return err
		}
	}

	pullable := sets.New[string]()
	for _, ref := range sa.ImagePullSecrets {
		pullable.Insert(ref.Name)
	}
	for i, ref := range pod.Spec.ImagePullSecrets {
		if !pullable.Has(ref.Name) {
			return fmt.Errorf("imagePullSecrets[%d].name=%q is not allowed because service account %s does not reference that imagePullSecret", i, ref.Name, sa.Name)
		}
	}
	return nil
}

// podSecretNames returns the names of all secrets the pod spec references
// directly: image pull secrets, container env, and volume sources.
func podSecretNames(pod *corev1.Pod) sets.Set[string] {
	out := sets.New[string]()
	add := func(name string) {
		if name != "" {
			out.Insert(name)
		}
	}
	for _, ref := range pod.Spec.ImagePullSecrets {
		add(ref.Name)
	}
	addEnv := func(env []corev1.EnvVar, from []corev1.EnvFromSource) {
		for _, e := range from {
			if e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		addEnv(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.Containers {
		addEnv(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		addEnv(c.Env, c.EnvFrom)
	}
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.Secret != nil:
			add(s.Secret.SecretName)
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				if src.Secret != nil {
					add(src.Secret.Name)
				}
			}
		case s.AzureFile != nil:
			add(s.AzureFile.SecretName)
		case s.CephFS != nil && s.CephFS.SecretRef != nil:
			add(s.CephFS.SecretRef.Name)
		case s.Cinder != nil && s.Cinder.SecretRef != nil:
			add(s.Cinder.SecretRef.Name)
		case s.FlexVolume != nil && s.FlexVolume.SecretRef != nil:
			add(s.FlexVolume.SecretRef.Name)
		case s.RBD != nil && s.RBD.SecretRef != nil:
			add(s.RBD.SecretRef.Name)
		case s.ScaleIO != nil && s.ScaleIO.SecretRef != nil:
			add(s.ScaleIO.SecretRef.Name)
		case s.ISCSI != nil && s.ISCSI.SecretRef != nil:
			add(s.ISCSI.SecretRef.Name)
		case s.StorageOS != nil && s.StorageOS.SecretRef != nil:
			add(s.StorageOS.SecretRef.Name)
		case s.CSI != nil && s.CSI.NodePublishSecretRef != nil:
			add(s.CSI.NodePublishSecretRef.Name)
		}
	}
	return out
}
