package serviceaccount

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

// ServiceAccountTokenGetter looks up the objects a token is bound to. A
// missing object is reported as an apierrors NotFound error. Implementations
// must be safe for concurrent use, and callers must not mutate the returned
// objects (they may be shared cache entries).
type ServiceAccountTokenGetter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// NewListerGetter returns a ServiceAccountTokenGetter reading from informer
// caches. Caches lag behind writes, so an apiserver usually wraps it with
// WithFallback(NewListerGetter(...), NewClientGetter(loopbackClient)).
func NewListerGetter(serviceAccounts corev1listers.ServiceAccountLister, pods corev1listers.PodLister,
	secrets corev1listers.SecretLister, nodes corev1listers.NodeLister) ServiceAccountTokenGetter {
	return &listerGetter{serviceAccounts: serviceAccounts, pods: pods, secrets: secrets, nodes: nodes}
}

type listerGetter struct {
	serviceAccounts corev1listers.ServiceAccountLister
	pods            corev1listers.PodLister
	secrets         corev1listers.SecretLister
	nodes           corev1listers.NodeLister
}

func (l *listerGetter) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return l.serviceAccounts.ServiceAccounts(namespace).Get(name)
}

func (l *listerGetter) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	return l.pods.Pods(namespace).Get(name)
}

func (l *listerGetter) GetSecret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	return l.secrets.Secrets(namespace).Get(name)
}

func (l *listerGetter) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	return l.nodes.Get(name)
}

// NewClientGetter returns a ServiceAccountTokenGetter that reads live from the
// apiserver through client.
func NewClientGetter(client kubernetes.Interface) ServiceAccountTokenGetter {
	return &clientGetter{client: client}
}

type clientGetter struct {
	client kubernetes.Interface
}

func (c *clientGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return c.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c *clientGetter) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c *clientGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return c.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c *clientGetter) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

// WithFallback returns a getter that asks primary first and, only when
// primary reports NotFound, asks fallback. Other errors from primary are
// returned as they are.
func WithFallback(primary, fallback ServiceAccountTokenGetter) ServiceAccountTokenGetter {
	return &fallbackGetter{primary: primary, fallback: fallback}
}

type fallbackGetter struct {
	primary, fallback ServiceAccountTokenGetter
}

func (f *fallbackGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa, err := f.primary.GetServiceAccount(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return f.fallback.GetServiceAccount(ctx, namespace, name)
	}
	return sa, err
}

func (f *fallbackGetter) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod, err := f.primary.GetPod(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return f.fallback.GetPod(ctx, namespace, name)
	}
	return pod, err
}

func (f *fallbackGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	secret, err := f.primary.GetSecret(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return f.fallback.GetSecret(ctx, namespace, name)
	}
	return secret, err
}

func (f *fallbackGetter) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	node, err := f.primary.GetNode(ctx, name)
	if apierrors.IsNotFound(err) {
		return f.fallback.GetNode(ctx, name)
	}
	return node, err
}
