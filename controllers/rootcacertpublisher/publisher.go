package rootcacertpublisher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/manager"
)

const (
	// ConfigMapName is the ConfigMap published in every namespace.
	ConfigMapName = "kube-root-ca.crt"
	// DataKey holds the PEM bundle in it.
	DataKey = "ca.crt"
	// DescriptionAnnotation describes what the ConfigMap is for.
	DescriptionAnnotation = "kubernetes.io/description"
	// Description is the annotation's value, the same as upstream's.
	Description = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Publisher keeps the root CA ConfigMap in every namespace. Create it with
// New; Run may be called once.
type Publisher struct {
	client   kubernetes.Interface
	rootCA   []byte
	cmLister corelisters.ConfigMapLister
	nsLister corelisters.NamespaceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// New returns a publisher of rootCA (PEM) that writes with client and
// watches ConfigMaps and Namespaces through the informers (which the caller
// starts).
func New(client kubernetes.Interface, cmInformer coreinformers.ConfigMapInformer, nsInformer coreinformers.NamespaceInformer, rootCA []byte) (*Publisher, error) {
	if len(rootCA) == 0 {
		return nil, errors.New("root CA publisher: empty root CA bundle")
	}
	p := &Publisher{
		client:   client,
		rootCA:   rootCA,
		cmLister: cmInformer.Lister(),
		nsLister: nsInformer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "root_ca_cert_publisher"}),
	}
	cmReg, err := cmInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { p.configMapChanged(obj) },
		DeleteFunc: p.configMapChanged,
	})
	if err != nil {
		return nil, fmt.Errorf("root CA publisher: watch configmaps: %w", err)
	}
	nsReg, err := nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.namespaceChanged,
		UpdateFunc: func(_, obj any) { p.namespaceChanged(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("root CA publisher: watch namespaces: %w", err)
	}
	p.synced = []cache.InformerSynced{cmReg.HasSynced, nsReg.HasSynced}
	return p, nil
}

// Descriptor is the publisher as kube-controller-manager names it, acting as
// kube-system/root-ca-cert-publisher, publishing rootCA with one worker.
func Descriptor(rootCA []byte) manager.Controller {
	return manager.Controller{
		Name:           "root-ca-certificate-publisher-controller",
		Aliases:        []string{"root-ca-cert-publisher"},
		ServiceAccount: "root-ca-cert-publisher",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			p, err := New(client, cc.InformerFactory.Core().V1().ConfigMaps(), cc.InformerFactory.Core().V1().Namespaces(), rootCA)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error { return p.Run(ctx, 1) })
			return nil
		},
	}
}

func (p *Publisher) configMapChanged(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == ConfigMapName {
		p.queue.Add(cm.Namespace)
	}
}

func (p *Publisher) namespaceChanged(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok && !terminating(ns) {
		p.queue.Add(ns.Name)
	}
}

func terminating(ns *corev1.Namespace) bool {
	return ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating
}

// Run waits for the caches, then syncs namespaces with workers goroutines
// until ctx is cancelled, and returns nil.
func (p *Publisher) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	defer p.queue.ShutDown()
	logger.Info("Starting root CA certificate publisher")
	defer logger.Info("Shut down root CA certificate publisher")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, p.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("root CA publisher: caches did not sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	p.queue.ShutDown()
	wg.Wait()
	return nil
}

func (p *Publisher) processNext(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	if err := p.sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to publish the root CA, will retry", "namespace", key)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// sync makes the namespace's ConfigMap hold the bundle and the description.
func (p *Publisher) sync(ctx context.Context, namespace string) error {
	ns, err := p.nsLister.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if terminating(ns) {
		return nil
	}
	want := map[string]string{DataKey: string(p.rootCA)}
	cm, err := p.cmLister.ConfigMaps(namespace).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   namespace,
				Name:        ConfigMapName,
				Annotations: map[string]string{DescriptionAnnotation: Description},
			},
			Data: want,
		}
		_, err := p.client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
		switch {
		case err == nil:
			klog.FromContext(ctx).V(2).Info("Published the root CA", "configMap", klog.KObj(cm))
			return nil
		case apierrors.IsAlreadyExists(err),
			// The namespace went away or began terminating meanwhile.
			apierrors.IsNotFound(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			return nil
		}
		return fmt.Errorf("create configmap %s/%s: %w", namespace, ConfigMapName, err)
	}
	if err != nil {
		return err
	}
	if maps.Equal(cm.Data, want) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = want
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	if _, err := p.client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted meanwhile: the delete event requeues the namespace.
			return nil
		}
		return fmt.Errorf("update configmap %s/%s: %w", namespace, ConfigMapName, err)
	}
	klog.FromContext(ctx).V(2).Info("Restored the root CA", "configMap", klog.KObj(cm))
	return nil
}
