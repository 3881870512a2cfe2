package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// sample is one served resource with a valid object of it.
type sample struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	obj        runtime.Object
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": "crud"}}
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}
}

func template(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: podSpec()}
}

func selector(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

func csrPEM(t testing.TB) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "crud-user"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// samples returns a valid object of every etcd-backed resource k1s serves.
func samples(t testing.TB) []sample {
	core := func(r string) schema.GroupVersionResource { return corev1.SchemeGroupVersion.WithResource(r) }
	apps := func(r string) schema.GroupVersionResource { return appsv1.SchemeGroupVersion.WithResource(r) }
	batch := func(r string) schema.GroupVersionResource { return batchv1.SchemeGroupVersion.WithResource(r) }
	rbac := func(r string) schema.GroupVersionResource { return rbacv1.SchemeGroupVersion.WithResource(r) }
	ar := func(r string) schema.GroupVersionResource {
		return admissionregistrationv1.SchemeGroupVersion.WithResource(r)
	}
	nw := func(r string) schema.GroupVersionResource { return networkingv1.SchemeGroupVersion.WithResource(r) }
	now := metav1.NewMicroTime(time.Now())
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}
	return []sample{
		{core("namespaces"), false, &corev1.Namespace{ObjectMeta: meta("crud-ns")}},
		{core("pods"), true, &corev1.Pod{ObjectMeta: meta("crud-pod"), Spec: podSpec()}},
		{core("nodes"), false, &corev1.Node{ObjectMeta: meta("crud-node")}},
		{core("services"), true, &corev1.Service{ObjectMeta: meta("crud-svc"), Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "x"}, Ports: []corev1.ServicePort{{Port: 80}}}}},
		{core("endpoints"), true, &corev1.Endpoints{ObjectMeta: meta("crud-ep"), Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.1.2.3"}}, Ports: []corev1.EndpointPort{{Port: 80}}}}}},
		{core("configmaps"), true, &corev1.ConfigMap{ObjectMeta: meta("crud-cm"), Data: map[string]string{"a": "b"}}},
		{core("secrets"), true, &corev1.Secret{ObjectMeta: meta("crud-secret"), Data: map[string][]byte{"a": []byte("b")}}},
		{core("serviceaccounts"), true, &corev1.ServiceAccount{ObjectMeta: meta("crud-sa")}},
		{core("events"), true, &corev1.Event{ObjectMeta: meta("crud-event"),
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "x", Namespace: "crud"},
			Reason:         "Testing", Message: "hello", Type: corev1.EventTypeNormal, Count: 1,
			Source: corev1.EventSource{Component: "crud"}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now()}},
		{core("persistentvolumes"), false, &corev1.PersistentVolume{ObjectMeta: meta("crud-pv"), Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/crud"}}}}},
		{core("persistentvolumeclaims"), true, &corev1.PersistentVolumeClaim{ObjectMeta: meta("crud-pvc"), Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
		{core("resourcequotas"), true, &corev1.ResourceQuota{ObjectMeta: meta("crud-quota"), Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{corev1.ResourceConfigMaps: resource.MustParse("100")}}}},
		{core("limitranges"), true, &corev1.LimitRange{ObjectMeta: meta("crud-limits"), Spec: corev1.LimitRangeSpec{
			Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}}}},
		{core("podtemplates"), true, &corev1.PodTemplate{ObjectMeta: meta("crud-podtemplate"), Template: template("pt")}},
		{core("replicationcontrollers"), true, &corev1.ReplicationController{ObjectMeta: meta("crud-rc"), Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To[int32](0), Selector: map[string]string{"app": "rc"}, Template: ptr.To(template("rc"))}}},

		{apps("deployments"), true, &appsv1.Deployment{ObjectMeta: meta("crud-deploy"), Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0), Selector: selector("deploy"), Template: template("deploy")}}},
		{apps("replicasets"), true, &appsv1.ReplicaSet{ObjectMeta: meta("crud-rs"), Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](0), Selector: selector("rs"), Template: template("rs")}}},
		{apps("statefulsets"), true, &appsv1.StatefulSet{ObjectMeta: meta("crud-sts"), Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](0), Selector: selector("sts"), Template: template("sts"), ServiceName: "sts"}}},
		{apps("daemonsets"), true, &appsv1.DaemonSet{ObjectMeta: meta("crud-ds"), Spec: appsv1.DaemonSetSpec{
			Selector: selector("ds"), Template: template("ds")}}},
		{apps("controllerrevisions"), true, &appsv1.ControllerRevision{ObjectMeta: meta("crud-cr"), Revision: 1,
			Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}},

		{batch("jobs"), true, &batchv1.Job{ObjectMeta: meta("crud-job"), Spec: batchv1.JobSpec{
			Suspend:  ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: podSpec().Containers}}}}},
		{batch("cronjobs"), true, &batchv1.CronJob{ObjectMeta: meta("crud-cj"), Spec: batchv1.CronJobSpec{
			Schedule: "*/5 * * * *", Suspend: ptr.To(true),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: podSpec().Containers}}}}}}},

		{coordinationv1.SchemeGroupVersion.WithResource("leases"), true, &coordinationv1.Lease{ObjectMeta: meta("crud-lease"),
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), LeaseDurationSeconds: ptr.To[int32](40)}}},
		{discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), true, &discoveryv1.EndpointSlice{ObjectMeta: meta("crud-slice"),
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.2.3"}}}}},
		{eventsv1.SchemeGroupVersion.WithResource("events"), true, &eventsv1.Event{ObjectMeta: meta("crud-event2"),
			EventTime: now, ReportingController: "example.com/crud", ReportingInstance: "crud-1", Action: "Test",
			Reason: "Testing", Type: corev1.EventTypeNormal, Note: "hello",
			Regarding: corev1.ObjectReference{Kind: "Pod", Name: "x", Namespace: "crud"}}},

		{rbac("roles"), true, &rbacv1.Role{ObjectMeta: meta("crud-role"), Rules: rules}},
		{rbac("rolebindings"), true, &rbacv1.RoleBinding{ObjectMeta: meta("crud-rb"),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "crud-role"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "crud-user"}}}},
		{rbac("clusterroles"), false, &rbacv1.ClusterRole{ObjectMeta: meta("crud-clusterrole"), Rules: rules}},
		{rbac("clusterrolebindings"), false, &rbacv1.ClusterRoleBinding{ObjectMeta: meta("crud-crb"),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "crud-clusterrole"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "crud-user"}}}},

		{storagev1.SchemeGroupVersion.WithResource("storageclasses"), false, &storagev1.StorageClass{ObjectMeta: meta("crud-sc"), Provisioner: "example.com/crud"}},
		{nw("ingresses"), true, &networkingv1.Ingress{ObjectMeta: meta("crud-ing"), Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "svc", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}},
		{nw("ingressclasses"), false, &networkingv1.IngressClass{ObjectMeta: meta("crud-ingclass"), Spec: networkingv1.IngressClassSpec{Controller: "example.com/crud"}}},
		{nw("networkpolicies"), true, &networkingv1.NetworkPolicy{ObjectMeta: meta("crud-netpol")}},
		{nw("servicecidrs"), false, &networkingv1.ServiceCIDR{ObjectMeta: meta("crud-servicecidr"), Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.99.0.0/24"}}}},
		{nw("ipaddresses"), false, &networkingv1.IPAddress{ObjectMeta: meta("10.99.0.7"), Spec: networkingv1.IPAddressSpec{
			ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "crud", Name: "crud-svc"}}}},
		{policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), true, &policyv1.PodDisruptionBudget{ObjectMeta: meta("crud-pdb"),
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: selector("pdb")}}},
		{schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), false, &schedulingv1.PriorityClass{ObjectMeta: meta("crud-pc"), Value: 1000}},
		{certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), false, &certificatesv1.CertificateSigningRequest{ObjectMeta: meta("crud-csr"),
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM(t), SignerName: certificatesv1.KubeAPIServerClientSignerName,
				Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}}},

		{ar("validatingwebhookconfigurations"), false, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta("crud-vwc")}},
		{ar("mutatingwebhookconfigurations"), false, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta("crud-mwc")}},
		{ar("validatingadmissionpolicies"), false, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: meta("crud-vap"),
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "true"}}}}},
		{ar("validatingadmissionpolicybindings"), false, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: meta("crud-vapb"),
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "crud-vap-missing",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}}}},
	}
}
