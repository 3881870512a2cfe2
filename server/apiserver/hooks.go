package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"
)

// SystemNamespaces exist in every cluster and cannot be deleted.
var SystemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// addHooks registers the post-start hooks: informers, then the bootstrap
// objects; ready is closed when the bootstrap is done.
func (d *dependencies) addHooks(server *genericapiserver.GenericAPIServer, ready chan struct{}) {
	server.AddPostStartHookOrDie("k1s-start-informers", func(hc genericapiserver.PostStartHookContext) error {
		d.informers.Start(hc.Done())
		return nil
	})
	server.AddPostStartHookOrDie("k1s-bootstrap", func(hc genericapiserver.PostStartHookContext) error {
		if err := d.bootstrap(hc); err != nil {
			return err
		}
		close(ready)
		return nil
	})
}

// bootstrap creates the objects every cluster has.
func (d *dependencies) bootstrap(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	for _, name := range SystemNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := d.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
		if err == nil {
			logger.V(2).Info("Created system namespace", "namespace", name)
		}
	}
	return nil
}
