package certificates

import (
	"context"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
)

// How long finished and pending requests are kept (upstream's csrcleaner).
const (
	keepFinished = time.Hour
	keepPending  = 24 * time.Hour
	cleanEvery   = time.Hour
)

// Cleaner deletes done certificate requests.
type Cleaner struct {
	client kubernetes.Interface
	csrs   certlisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	clock  clock.WithTicker
}

// CleanerDescriptor is csrcleaner as kube-controller-manager names it.
func CleanerDescriptor() manager.Controller {
	return manager.Controller{
		Name:           "certificatesigningrequest-cleaner-controller",
		Aliases:        []string{"csrcleaner"},
		ServiceAccount: "certificate-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			inf := cc.InformerFactory.Certificates().V1().CertificateSigningRequests()
			c := &Cleaner{client: client, csrs: inf.Lister(), synced: inf.Informer().HasSynced, clock: cc.Clock}
			cc.Go(c.Run)
			return nil
		},
	}
}

// Run cleans at once and every hour until ctx ends.
func (c *Cleaner) Run(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return nil
	}
	t := c.clock.NewTicker(cleanEvery)
	defer t.Stop()
	for {
		c.clean(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

func (c *Cleaner) clean(ctx context.Context) {
	list, err := c.csrs.List(labels.Everything())
	if err != nil {
		return
	}
	now := c.clock.Now()
	for _, csr := range list {
		if !expired(csr, now) {
			continue
		}
		err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).V(2).Info("Could not delete an old certificate request", "csr", csr.Name, "err", err)
		}
	}
}

// expired: issued, denied or failed over an hour ago, pending over a day.
func expired(csr *certificatesv1.CertificateSigningRequest, now time.Time) bool {
	age := now.Sub(csr.CreationTimestamp.Time)
	if finished(csr) {
		return age > keepFinished
	}
	return age > keepPending
}
