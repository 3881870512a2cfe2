package printers

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// kindOf names the served version and kind of every resource with a
// printer, so tests can build its objects from a scheme.
var kindOf = map[schema.GroupResource]schema.GroupVersionKind{
	{Resource: "pods"}:                                                     {Version: "v1", Kind: "Pod"},
	{Resource: "podtemplates"}:                                             {Version: "v1", Kind: "PodTemplate"},
	{Resource: "replicationcontrollers"}:                                   {Version: "v1", Kind: "ReplicationController"},
	{Resource: "nodes"}:                                                    {Version: "v1", Kind: "Node"},
	{Resource: "namespaces"}:                                               {Version: "v1", Kind: "Namespace"},
	{Resource: "services"}:                                                 {Version: "v1", Kind: "Service"},
	{Resource: "endpoints"}:                                                {Version: "v1", Kind: "Endpoints"},
	{Resource: "configmaps"}:                                               {Version: "v1", Kind: "ConfigMap"},
	{Resource: "secrets"}:                                                  {Version: "v1", Kind: "Secret"},
	{Resource: "serviceaccounts"}:                                          {Version: "v1", Kind: "ServiceAccount"},
	{Resource: "events"}:                                                   {Version: "v1", Kind: "Event"},
	{Resource: "persistentvolumes"}:                                        {Version: "v1", Kind: "PersistentVolume"},
	{Resource: "persistentvolumeclaims"}:                                   {Version: "v1", Kind: "PersistentVolumeClaim"},
	{Resource: "resourcequotas"}:                                           {Version: "v1", Kind: "ResourceQuota"},
	{Group: "events.k8s.io", Resource: "events"}:                           {Group: "events.k8s.io", Version: "v1", Kind: "Event"},
	{Group: "discovery.k8s.io", Resource: "endpointslices"}:                {Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"},
	{Group: "coordination.k8s.io", Resource: "leases"}:                     {Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"},
	{Group: "policy", Resource: "poddisruptionbudgets"}:                    {Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"}:              {Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"},
	{Group: "storage.k8s.io", Resource: "storageclasses"}:                  {Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"},
	{Group: "networking.k8s.io", Resource: "ingresses"}:                    {Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
	{Group: "networking.k8s.io", Resource: "ingressclasses"}:               {Group: "networking.k8s.io", Version: "v1", Kind: "IngressClass"},
	{Group: "networking.k8s.io", Resource: "networkpolicies"}:              {Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}:         {Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}:  {Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: {Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest"},
	{Group: "apps", Resource: "deployments"}:                               {Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Resource: "replicasets"}:                               {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Group: "apps", Resource: "statefulsets"}:                              {Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "apps", Resource: "daemonsets"}:                                {Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Group: "apps", Resource: "controllerrevisions"}:                       {Group: "apps", Version: "v1", Kind: "ControllerRevision"},
	{Group: "batch", Resource: "jobs"}:                                     {Group: "batch", Version: "v1", Kind: "Job"},
	{Group: "batch", Resource: "cronjobs"}:                                 {Group: "batch", Version: "v1", Kind: "CronJob"},

	{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}:                 {Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Kind: "FlowSchema"},
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"}: {Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Kind: "PriorityLevelConfiguration"},

	{Group: "node.k8s.io", Resource: "runtimeclasses"}:                       {Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass"},
	{Group: "storage.k8s.io", Resource: "csidrivers"}:                        {Group: "storage.k8s.io", Version: "v1", Kind: "CSIDriver"},
	{Group: "storage.k8s.io", Resource: "csinodes"}:                          {Group: "storage.k8s.io", Version: "v1", Kind: "CSINode"},
	{Group: "storage.k8s.io", Resource: "csistoragecapacities"}:              {Group: "storage.k8s.io", Version: "v1", Kind: "CSIStorageCapacity"},
	{Group: "storage.k8s.io", Resource: "volumeattachments"}:                 {Group: "storage.k8s.io", Version: "v1", Kind: "VolumeAttachment"},
	{Group: "storage.k8s.io", Resource: "volumeattributesclasses"}:           {Group: "storage.k8s.io", Version: "v1", Kind: "VolumeAttributesClass"},
	{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}:          {Group: "certificates.k8s.io", Version: "v1", Kind: "ClusterTrustBundle"},
	{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}:       {Group: "certificates.k8s.io", Version: "v1", Kind: "PodCertificateRequest"},
	{Group: "resource.k8s.io", Resource: "deviceclasses"}:                    {Group: "resource.k8s.io", Version: "v1", Kind: "DeviceClass"},
	{Group: "resource.k8s.io", Resource: "resourceclaims"}:                   {Group: "resource.k8s.io", Version: "v1", Kind: "ResourceClaim"},
	{Group: "resource.k8s.io", Resource: "resourceclaimtemplates"}:           {Group: "resource.k8s.io", Version: "v1", Kind: "ResourceClaimTemplate"},
	{Group: "resource.k8s.io", Resource: "resourceslices"}:                   {Group: "resource.k8s.io", Version: "v1", Kind: "ResourceSlice"},
	{Group: "resource.k8s.io", Resource: "devicetaintrules"}:                 {Group: "resource.k8s.io", Version: "v1", Kind: "DeviceTaintRule"},
	{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations"}: {Group: "storagemigration.k8s.io", Version: "v1", Kind: "StorageVersionMigration"},
	{Group: "autoscaling", Resource: "horizontalpodautoscalers"}:             {Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
}

func newTestScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	return clientgoscheme.Scheme
}

// objectsFor returns a zero object of gr's kind and a list holding it.
func objectsFor(t *testing.T, scheme *runtime.Scheme, gr schema.GroupResource) (runtime.Object, runtime.Object) {
	t.Helper()
	gvk, ok := kindOf[gr]
	if !ok {
		t.Fatalf("no test kind for %s; add it to kindOf", gr)
	}
	obj, err := scheme.New(gvk)
	if err != nil {
		t.Fatalf("new %s: %v", gvk, err)
	}
	list, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		t.Fatalf("new %sList: %v", gvk.Kind, err)
	}
	if err := meta.SetList(list, []runtime.Object{obj.DeepCopyObject()}); err != nil {
		t.Fatalf("fill %sList: %v", gvk.Kind, err)
	}
	return obj, list
}
