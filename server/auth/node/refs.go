package node

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// podRefs lists the pod itself followed by every object its node may read
// on its behalf: its service account, the secrets and configmaps it names
// (image pull secrets, env, envFrom, volumes including projected sources and
// volume plugins' secret references) and its PVCs (including the claims of
// generic ephemeral volumes). A mirror pod references nothing but itself: a
// node creates those, and must not gain access to objects by doing so.
func podRefs(pod *corev1.Pod) []ref {
	ns := pod.Namespace
	refs := []ref{{kindPod, ns, pod.Name}}
	add := func(k kind, name string) {
		if name == "" {
			return
		}
		r := ref{k, ns, name}
		if !slices.Contains(refs, r) {
			refs = append(refs, r)
		}
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return refs
	}

	add(kindServiceAccount, pod.Spec.ServiceAccountName)
	for _, s := range pod.Spec.ImagePullSecrets {
		add(kindSecret, s.Name)
	}
	visitContainer := func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(kindSecret, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(kindConfigMap, e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(kindSecret, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(kindConfigMap, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		visitContainer(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visitContainer(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		visitContainer((*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}

	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.Secret != nil:
			add(kindSecret, v.Secret.SecretName)
		case v.ConfigMap != nil:
			add(kindConfigMap, v.ConfigMap.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add(kindSecret, src.Secret.Name)
				}
				if src.ConfigMap != nil {
					add(kindConfigMap, src.ConfigMap.Name)
				}
			}
		case v.PersistentVolumeClaim != nil:
			add(kindPVC, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			// The claim of a generic ephemeral volume is named <pod>-<volume>.
			add(kindPVC, pod.Name+"-"+v.Name)
		case v.AzureFile != nil:
			add(kindSecret, v.AzureFile.SecretName)
		case v.CephFS != nil && v.CephFS.SecretRef != nil:
			add(kindSecret, v.CephFS.SecretRef.Name)
		case v.Cinder != nil && v.Cinder.SecretRef != nil:
			add(kindSecret, v.Cinder.SecretRef.Name)
		case v.FlexVolume != nil && v.FlexVolume.SecretRef != nil:
			add(kindSecret, v.FlexVolume.SecretRef.Name)
		case v.RBD != nil && v.RBD.SecretRef != nil:
			add(kindSecret, v.RBD.SecretRef.Name)
		case v.ScaleIO != nil && v.ScaleIO.SecretRef != nil:
			add(kindSecret, v.ScaleIO.SecretRef.Name)
		case v.ISCSI != nil && v.ISCSI.SecretRef != nil:
			add(kindSecret, v.ISCSI.SecretRef.Name)
		case v.StorageOS != nil && v.StorageOS.SecretRef != nil:
			add(kindSecret, v.StorageOS.SecretRef.Name)
		case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			add(kindSecret, v.CSI.NodePublishSecretRef.Name)
		}
	}
	return refs
}

// pvSecretRefs lists the secrets a kubelet reads to mount pv. A secret
// reference without a namespace means the namespace of the bound claim.
// Secrets only the attach/expand controllers use are not included.
func pvSecretRefs(pv *corev1.PersistentVolume) []ref {
	claimNS := ""
	if pv.Spec.ClaimRef != nil {
		claimNS = pv.Spec.ClaimRef.Namespace
	}
	var refs []ref
	add := func(namespace, name string) {
		if name == "" {
			return
		}
		r := ref{kindSecret, namespace, name}
		if !slices.Contains(refs, r) {
			refs = append(refs, r)
		}
	}
	orClaimNS := func(ns string) string {
		if ns == "" {
			return claimNS
		}
		return ns
	}
	src := &pv.Spec.PersistentVolumeSource
	switch {
	case src.AzureFile != nil:
		ns := claimNS
		if src.AzureFile.SecretNamespace != nil && *src.AzureFile.SecretNamespace != "" {
			ns = *src.AzureFile.SecretNamespace
		}
		add(ns, src.AzureFile.SecretName)
	case src.CephFS != nil && src.CephFS.SecretRef != nil:
		add(orClaimNS(src.CephFS.SecretRef.Namespace), src.CephFS.SecretRef.Name)
	case src.Cinder != nil && src.Cinder.SecretRef != nil:
		add(src.Cinder.SecretRef.Namespace, src.Cinder.SecretRef.Name)
	case src.FlexVolume != nil && src.FlexVolume.SecretRef != nil:
		add(orClaimNS(src.FlexVolume.SecretRef.Namespace), src.FlexVolume.SecretRef.Name)
	case src.RBD != nil && src.RBD.SecretRef != nil:
		add(orClaimNS(src.RBD.SecretRef.Namespace), src.RBD.SecretRef.Name)
	case src.ScaleIO != nil && src.ScaleIO.SecretRef != nil:
		add(orClaimNS(src.ScaleIO.SecretRef.Namespace), src.ScaleIO.SecretRef.Name)
	case src.ISCSI != nil && src.ISCSI.SecretRef != nil:
		add(orClaimNS(src.ISCSI.SecretRef.Namespace), src.ISCSI.SecretRef.Name)
	case src.StorageOS != nil && src.StorageOS.SecretRef != nil:
		add(src.StorageOS.SecretRef.Namespace, src.StorageOS.SecretRef.Name)
	case src.CSI != nil:
		for _, s := range []*corev1.SecretReference{src.CSI.NodePublishSecretRef, src.CSI.NodeStageSecretRef, src.CSI.NodeExpandSecretRef} {
			if s != nil {
				add(s.Namespace, s.Name)
			}
		}
	}
	return refs
}
