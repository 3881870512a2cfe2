package certificates

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/k1s/k1s/controllers/manager"
)

// Approver approves kubelet certificate requests. Run may be called once.
type Approver struct {
	client kubernetes.Interface
	csrs   certlisters.CertificateSigningRequestLister
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	clock  clock.PassiveClock
}

// NewApprover watches csrs and nodes.
func NewApprover(client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, nodes coreinformers.NodeInformer, clk clock.WithTicker) (*Approver, error) {
	a := &Approver{
		client: client,
		csrs:   csrs.Lister(),
		nodes:  nodes.Lister(),
		clock:  clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "csrapproving", Clock: clk}),
	}
	reg, err := csrs.Informer().AddEventHandler(enqueueHandler(a.queue))
	if err != nil {
		return nil, err
	}
	nreg, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{})
	if err != nil {
		return nil, err
	}
	a.synced = []cache.InformerSynced{reg.HasSynced, nreg.HasSynced}
	return a, nil
}

// ApproverDescriptor is csrapproving as kube-controller-manager names it.
func ApproverDescriptor() manager.Controller {
	return manager.Controller{
		Name:           "certificatesigningrequest-approving-controller",
		Aliases:        []string{"csrapproving"},
		ServiceAccount: "certificate-controller",
		Start: func(_ context.Context, cc manager.ControllerContext) error {
			client, err := cc.Client()
			if err != nil {
				return err
			}
			a, err := NewApprover(client, cc.InformerFactory.Certificates().V1().CertificateSigningRequests(), cc.InformerFactory.Core().V1().Nodes(), cc.Clock)
			if err != nil {
				return err
			}
			cc.Go(func(ctx context.Context) error {
				return runQueue(ctx, a.queue, func() bool {
					for _, s := range a.synced {
						if !s() {
							return false
						}
					}
					return true
				}, 2, a.sync)
			})
			return nil
		},
	}
}

func (a *Approver) sync(ctx context.Context, name string) error {
	csr, err := a.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if approved(csr) || finished(csr) {
		return nil
	}
	req, err := parseRequest(csr)
	if err != nil {
		return nil // the signer reports it once approved; nothing to approve
	}
	var message string
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		if kubeletClientErr(req, csr.Spec.Usages) != nil {
			return nil
		}
		sub, msg := "nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview."
		if csr.Spec.Username == req.Subject.CommonName {
			sub, msg = "selfnodeclient", "Auto approving self kubelet client certificate after SubjectAccessReview."
		}
		ok, err := a.allowed(ctx, csr, sub)
		if err != nil || !ok {
			return err
		}
		if sub == "nodeclient" {
			// A node's name is its identity (k3s's node password): a
			// registered node renews as itself; a bootstrap request for
			// its name is another machine claiming it.
			node := strings.TrimPrefix(req.Subject.CommonName, "system:node:")
			if _, err := a.nodes.Get(node); err == nil {
				return a.decide(ctx, csr, certificatesv1.CertificateDenied, "NodeNameInUse",
					fmt.Sprintf("node %q is registered and this request is not from it: another machine holds the name. "+
						"Give this machine another --node-name (or --with-node-id), or delete the Node (kubectl delete node %s) if the old machine is gone.", node, node))
			}
		}
		message = msg
	case certificatesv1.KubeletServingSignerName:
		if kubeletServingErr(req, csr.Spec.Usages) != nil || csr.Spec.Username != req.Subject.CommonName ||
			!slices.Contains(csr.Spec.Groups, "system:nodes") {
			return nil
		}
		node := strings.TrimPrefix(req.Subject.CommonName, "system:node:")
		if why := a.servingNamesErr(node, req.DNSNames, req.IPAddresses); why != "" {
			klog.FromContext(ctx).V(2).Info("Not approving a serving certificate request", "csr", name, "node", node, "reason", why)
			return nil
		}
		message = "Auto approving the kubelet serving certificate of node " + node + ": its names are the node's own."
	default:
		return nil
	}
	return a.decide(ctx, csr, certificatesv1.CertificateApproved, "AutoApproved", message)
}

// decide approves or denies csr.
func (a *Approver) decide(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, verdict certificatesv1.RequestConditionType, reason, message string) error {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: verdict, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastUpdateTime: metav1.NewTime(a.clock.Now()),
	})
	if _, err := a.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("%s %s: %w", verdict, csr.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Decided a certificate request", "csr", csr.Name, "verdict", verdict, "reason", reason, "signer", csr.Spec.SignerName, "requestor", csr.Spec.Username)
	return nil
}

// allowed asks whether the requestor may create the CSR subresource that
// stands for the kind of approval (upstream's SubjectAccessReview).
func (a *Approver) allowed(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, subresource string) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: subresource, Verb: "create",
		},
	}}
	out, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	return out.Status.Allowed, nil
}

// servingNamesErr says why a node's serving certificate may not hold these
// names: its DNS names must be the node's own (its name, or the hostname
// it reports), and no address may belong to another node. Addresses the
// node has not reported yet are allowed (k3s's trust in a joined node): a
// node whose address changed asks for its new certificate before its
// status shows the new address.
func (a *Approver) servingNamesErr(nodeName string, dnsNames []string, ips []net.IP) string {
	nodes, err := a.nodes.List(labels.Everything())
	if err != nil {
		return err.Error()
	}
	own := map[string]bool{nodeName: true}
	others := map[string]string{}
	for _, n := range nodes {
		for _, addr := range n.Status.Addresses {
			if n.Name == nodeName {
				if addr.Type == corev1.NodeHostName {
					own[addr.Address] = true
				}
				continue
			}
			others[addr.Address] = n.Name
		}
	}
	for _, ip := range ips {
		if owner, ok := others[ip.String()]; ok {
			return fmt.Sprintf("address %s belongs to node %s", ip, owner)
		}
	}
	for _, d := range dnsNames {
		if !own[d] {
			return fmt.Sprintf("DNS name %q is not one of the node's", d)
		}
	}
	return ""
}
