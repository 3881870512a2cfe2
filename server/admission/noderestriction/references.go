package noderestriction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// apiObjectReference returns a description of the first kind of API object
// pod references (its service account, a secret, a configmap, a resource
// claim, a claim, a CSI driver, ...), or "" when it references none. An
// unknown volume source is an error, so new sources are refused until
// classified.
func apiObjectReference(pod *corev1.Pod) (string, error) {
	if pod.Spec.ServiceAccountName != "" {
		return "serviceaccounts", nil
	}
	if len(pod.Spec.ImagePullSecrets) > 0 {
		return "secrets", nil
	}
	var secrets, configMaps bool
	visit := func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			secrets = secrets || (e.SecretRef != nil && e.SecretRef.Name != "")
			configMaps = configMaps || (e.ConfigMapRef != nil && e.ConfigMapRef.Name != "")
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			secrets = secrets || (e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != "")
			configMaps = configMaps || (e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name != "")
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		visit((*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	// Secrets and configmaps named by volumes.
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.AzureFile != nil:
			secrets = secrets || v.AzureFile.SecretName != ""
		case v.CephFS != nil:
			secrets = secrets || named(v.CephFS.SecretRef)
		case v.Cinder != nil:
			secrets = secrets || named(v.Cinder.SecretRef)
		case v.FlexVolume != nil:
			secrets = secrets || named(v.FlexVolume.SecretRef)
		case v.RBD != nil:
			secrets = secrets || named(v.RBD.SecretRef)
		case v.ScaleIO != nil:
			secrets = secrets || named(v.ScaleIO.SecretRef)
		case v.ISCSI != nil:
			secrets = secrets || named(v.ISCSI.SecretRef)
		case v.StorageOS != nil:
			secrets = secrets || named(v.StorageOS.SecretRef)
		case v.CSI != nil:
			secrets = secrets || named(v.CSI.NodePublishSecretRef)
		case v.Secret != nil:
			secrets = secrets || v.Secret.SecretName != ""
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				secrets = secrets || (src.Secret != nil && src.Secret.Name != "")
				configMaps = configMaps || (src.ConfigMap != nil && src.ConfigMap.Name != "")
			}
		case v.ConfigMap != nil:
			configMaps = configMaps || v.ConfigMap.Name != ""
		}
	}
	if secrets {
		return "secrets", nil
	}
	if configMaps {
		return "configmaps", nil
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return "resourceclaims", nil
	}

	for _, v := range pod.Spec.Volumes {
		switch {
		case v.AWSElasticBlockStore != nil, v.AzureDisk != nil, v.CephFS != nil, v.Cinder != nil,
			v.DownwardAPI != nil, v.EmptyDir != nil, v.FC != nil, v.FlexVolume != nil, v.Flocker != nil,
			v.GCEPersistentDisk != nil, v.GitRepo != nil, v.HostPath != nil, v.Image != nil, v.ISCSI != nil,
			v.NFS != nil, v.PhotonPersistentDisk != nil, v.PortworxVolume != nil, v.Quobyte != nil, v.RBD != nil,
			v.ScaleIO != nil, v.StorageOS != nil, v.VsphereVolume != nil:
			continue
		case v.ConfigMap != nil:
			return "configmaps (via configmap volumes)", nil
		case v.Secret != nil:
			return "secrets (via secret volumes)", nil
		case v.CSI != nil:
			return "csidrivers (via CSI volumes)", nil
		case v.Glusterfs != nil:
			return "endpoints (via glusterFS volumes)", nil
		case v.PersistentVolumeClaim != nil:
			return "persistentvolumeclaims", nil
		case v.Ephemeral != nil:
			return "persistentvolumeclaims (via ephemeral volumes)", nil
		case v.AzureFile != nil:
			return "secrets (via azureFile volumes)", nil
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					return "configmaps (via projected volumes)", nil
				case s.Secret != nil:
					return "secrets (via projected volumes)", nil
				case s.ServiceAccountToken != nil:
					return "serviceaccounts (via projected volumes)", nil
				case s.ClusterTrustBundle != nil:
					return "clustertrustbundles", nil
				case s.PodCertificate != nil:
					return "podcertificates", nil
				case s.DownwardAPI != nil:
					continue
				default:
					return "", fmt.Errorf("unknown source for projected volume %q", v.Name)
				}
			}
		default:
			return "", fmt.Errorf("unknown volume type for volume %q", v.Name)
		}
	}
	return "", nil
}

func named(r *corev1.LocalObjectReference) bool {
	return r != nil && r.Name != ""
}
