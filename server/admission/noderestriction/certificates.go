package noderestriction

import (
	"context"
	"errors"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

// ServiceAccountGetter gives access to service accounts by namespace;
// corev1listers.ServiceAccountLister satisfies it.
type ServiceAccountGetter interface {
	ServiceAccounts(namespace string) corev1listers.ServiceAccountNamespaceLister
}

var (
	pcrResource   = certificatesv1.Resource("podcertificaterequests")
	sliceResource = resourcev1.Resource("resourceslices")
)

// admitPodCertificateRequest lets a node create a PodCertificateRequest
// only for a pod bound to it, naming that pod's, its service account's and
// the node's own UIDs, and for a signer the pod mounts a podCertificate
// volume of (or one the node may request for the service account).
func (p *Plugin) admitPodCertificateRequest(ctx context.Context, nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %v", a.GetOperation()))
	}
	if a.GetSubresource() != "" {
		return admission.NewForbidden(a, fmt.Errorf("unexpected subresource %v", a.GetSubresource()))
	}
	ns := a.GetNamespace()
	req, ok := a.GetObject().(*certificatesv1.PodCertificateRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if string(req.Spec.NodeName) != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("PodCertificateRequest.Spec.NodeName=%q, which is not the requesting node %q", req.Spec.NodeName, nodeName))
	}
	node, err := p.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("while retrieving node %q named in the PodCertificateRequest: %w", nodeName, err)
	}
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("while retrieving node %q named in the PodCertificateRequest: %w", nodeName, err))
	}
	if node.UID != req.Spec.NodeUID {
		return fmt.Errorf("PodCertificateRequest for pod %q names node UID %q, inconsistent with the running node (%q)", ns+"/"+req.Spec.PodName, req.Spec.NodeUID, node.UID)
	}
	pod, err := p.pods.Pods(ns).Get(req.Spec.PodName)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("while retrieving pod %q named in the PodCertificateRequest: %w", ns+"/"+req.Spec.PodName, err)
	}
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("while retrieving pod %q named in the PodCertificateRequest: %w", ns+"/"+req.Spec.PodName, err))
	}
	if req.Spec.PodUID != pod.UID {
		return fmt.Errorf("PodCertificateRequest for pod %q contains pod UID (%q) which differs from running pod %q", ns+"/"+req.Spec.PodName, req.Spec.PodUID, pod.UID)
	}
	if pod.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("pod %q is not running on node %q named in the PodCertificateRequest", ns+"/"+req.Spec.PodName, nodeName))
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return admission.NewForbidden(a, fmt.Errorf("pod %q is a mirror pod", ns+"/"+req.Spec.PodName))
	}
	if req.Spec.ServiceAccountName != pod.Spec.ServiceAccountName {
		return admission.NewForbidden(a, fmt.Errorf("PodCertificateRequest for pod %q contains serviceAccountName (%q) that differs from running pod (%q)", ns+"/"+req.Spec.PodName, req.Spec.ServiceAccountName, pod.Spec.ServiceAccountName))
	}
	if p.serviceAccounts == nil {
		return admission.NewForbidden(a, errors.New("no service account lister to check the request against"))
	}
	sa, err := p.serviceAccounts.ServiceAccounts(ns).Get(req.Spec.ServiceAccountName)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("while retrieving service account %q named in the PodCertificateRequest: %w", ns+"/"+req.Spec.ServiceAccountName, err)
	}
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("while retrieving service account %q named in the PodCertificateRequest: %w", ns+"/"+req.Spec.ServiceAccountName, err))
	}
	if req.Spec.ServiceAccountUID != sa.UID {
		return fmt.Errorf("PodCertificateRequest for pod %q names service account UID %q, which differs from the running service account (%q)", ns+"/"+req.Spec.PodName, req.Spec.ServiceAccountUID, sa.UID)
	}
	if mountsSigner(pod, req.Spec.SignerName) {
		return nil
	}
	if p.authz != nil {
		d, _, err := p.authz.Authorize(ctx, authorizer.AttributesRecord{
			User: a.GetUserInfo(), Verb: "request-serviceaccounts-podcertificate-signer",
			APIGroup: a.GetResource().Group, APIVersion: a.GetResource().Version,
			Resource: strings.ReplaceAll(req.Spec.SignerName, "/", ":"), Namespace: ns, Name: req.Spec.ServiceAccountName, ResourceRequest: true,
		})
		if d == authorizer.DecisionAllow {
			return nil
		}
		if err != nil {
			return admission.NewForbidden(a, fmt.Errorf("error authorizing %s to request podcertificaterequests for signer %q: %w", a.GetUserInfo().GetName(), req.Spec.SignerName, err))
		}
	}
	return admission.NewForbidden(a, fmt.Errorf("pod %q does not mount a podCertificate projected volume for signer %q", ns+"/"+req.Spec.PodName, req.Spec.SignerName))
}

// mountsSigner reports whether pod has a podCertificate projection for signer.
func mountsSigner(pod *corev1.Pod, signer string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.PodCertificate != nil && s.PodCertificate.SignerName == signer {
				return true
			}
		}
	}
	return false
}

// admitResourceSlice lets a node create and delete only ResourceSlices of
// its own node (other requests are the node authorizer's).
func (p *Plugin) admitResourceSlice(nodeName string, a admission.Attributes) error {
	var obj any
	switch a.GetOperation() {
	case admission.Create:
		obj = a.GetObject()
	case admission.Delete:
		obj = a.GetOldObject()
	default:
		return nil
	}
	s, ok := obj.(*resourcev1.ResourceSlice)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", obj))
	}
	if s.Spec.NodeName == nil || *s.Spec.NodeName != nodeName {
		verb := "create"
		if a.GetOperation() == admission.Delete {
			verb = "delete"
		}
		return admission.NewForbidden(a, fmt.Errorf("can only %s ResourceSlice with the same NodeName as the requesting node", verb))
	}
	return nil
}
