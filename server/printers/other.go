package printers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Default-class annotations for storage classes (GA and beta keys).
const (
	defaultStorageClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaDefaultStorageClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

var leasePrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, l *coordinationv1.Lease) []interface{} {
		return []interface{}{l.Name, stringPtrOr(l.Spec.HolderIdentity, ""), since(now, l.CreationTimestamp)}
	}),
}

var endpointSlicePrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("AddressType", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]),
		col("Ports", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]),
		col("Endpoints", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, s *discoveryv1.EndpointSlice) []interface{} {
		return []interface{}{s.Name, string(s.AddressType), slicePorts(s.Ports), sliceAddresses(s.Endpoints), since(now, s.CreationTimestamp)}
	}),
}

const listLimit = 3

// slicePorts lists up to three ports by number (else name, else "*").
func slicePorts(ports []discoveryv1.EndpointPort) string {
	var list []string
	for _, p := range ports {
		if len(list) == listLimit {
			break
		}
		switch {
		case p.Port != nil:
			list = append(list, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			list = append(list, *p.Name)
		default:
			list = append(list, "*")
		}
	}
	return truncatedList(list, len(ports), listLimit)
}

// sliceAddresses lists up to three endpoint addresses.
func sliceAddresses(endpoints []discoveryv1.Endpoint) string {
	var list []string
	total := 0
	for _, e := range endpoints {
		for _, a := range e.Addresses {
			if len(list) < listLimit {
				list = append(list, a)
			}
			total++
		}
	}
	return truncatedList(list, total, listLimit)
}

func bindingColumns(kind string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		col("Role", "string", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		ageColumn(),
		wideCol("Users", "string", "Users bound by the "+kind+"."),
		wideCol("Groups", "string", "Groups bound by the "+kind+"."),
		wideCol("ServiceAccounts", "string", "Service accounts (namespace/name) bound by the "+kind+"."),
	}
}

func bindingCells(now time.Time, meta metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject) []interface{} {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return []interface{}{
		meta.Name, ref.Kind + "/" + ref.Name, since(now, meta.CreationTimestamp),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", "),
	}
}

var roleBindingPrinter = printer{
	columns: bindingColumns("roleBinding"),
	rows: eachObject(func(now time.Time, b *rbacv1.RoleBinding) []interface{} {
		return bindingCells(now, b.ObjectMeta, b.RoleRef, b.Subjects)
	}),
}

var clusterRoleBindingPrinter = printer{
	columns: bindingColumns("clusterRoleBinding"),
	rows: eachObject(func(now time.Time, b *rbacv1.ClusterRoleBinding) []interface{} {
		return bindingCells(now, b.ObjectMeta, b.RoleRef, b.Subjects)
	}),
}

var storageClassPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Provisioner", "string", storagev1.StorageClass{}.SwaggerDoc()["provisioner"]),
		col("ReclaimPolicy", "string", storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"]),
		col("VolumeBindingMode", "string", storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"]),
		col("AllowVolumeExpansion", "string", storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"]),
		ageColumn(),
	},
	rows: storageClassRows,
}

// storageClassRows marks the effective default class with " (default)".
// Like upstream, that is only decided for a list: a single object is
// printed without the marker.
func storageClassRows(now time.Time, objs []runtime.Object, fromList bool) ([]metav1.TableRow, error) {
	effectiveDefault := ""
	if fromList {
		effectiveDefault = defaultStorageClass(objs)
	}
	return eachObject(func(now time.Time, sc *storagev1.StorageClass) []interface{} {
		name := sc.Name
		if effectiveDefault != "" && sc.Name == effectiveDefault {
			name += " (default)"
		}
		reclaim := string(corev1.PersistentVolumeReclaimDelete)
		if sc.ReclaimPolicy != nil {
			reclaim = string(*sc.ReclaimPolicy)
		}
		binding := string(storagev1.VolumeBindingImmediate)
		if sc.VolumeBindingMode != nil {
			binding = string(*sc.VolumeBindingMode)
		}
		expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
		return []interface{}{name, sc.Provisioner, reclaim, binding, expand, since(now, sc.CreationTimestamp)}
	})(now, objs, fromList)
}

// defaultStorageClass returns the newest class annotated as default (ties
// go to the alphabetically first name), or "".
func defaultStorageClass(objs []runtime.Object) string {
	var best *storagev1.StorageClass
	for _, o := range objs {
		sc, ok := o.(*storagev1.StorageClass)
		if !ok {
			continue
		}
		if sc.Annotations[defaultStorageClassAnnotation] != "true" && sc.Annotations[betaDefaultStorageClassAnnotation] != "true" {
			continue
		}
		switch {
		case best == nil,
			sc.CreationTimestamp.After(best.CreationTimestamp.Time),
			sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name:
			best = sc
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

var ingressPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Class", "string", "The IngressClass that handles this ingress."),
		col("Hosts", "string", "Hosts the ingress rules match."),
		col("Address", "string", "Load-balancer ingress points of the ingress."),
		col("Ports", "string", "Ports the ingress serves: 80, plus 443 with TLS."),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, ing *networkingv1.Ingress) []interface{} {
		lb := ing.Status.LoadBalancer.Ingress
		ips, hosts := make([]string, len(lb)), make([]string, len(lb))
		for i := range lb {
			ips[i], hosts[i] = lb[i].IP, lb[i].Hostname
		}
		ports := "80"
		if len(ing.Spec.TLS) > 0 {
			ports = "80, 443"
		}
		return []interface{}{
			ing.Name, stringPtrOr(ing.Spec.IngressClassName, none), ingressHosts(ing.Spec.Rules),
			strings.Join(loadBalancerAddresses(ips, hosts), ","), ports, since(now, ing.CreationTimestamp),
		}
	}),
}

// ingressHosts lists the first three non-empty rule hosts ("*" if there
// are none) and, when rules remain after those, how many rules there are
// beyond three.
func ingressHosts(rules []networkingv1.IngressRule) string {
	var list []string
	more := false
	for _, r := range rules {
		if len(list) == listLimit {
			more = true
			break
		}
		if r.Host != "" {
			list = append(list, r.Host)
		}
	}
	if len(list) == 0 {
		return "*"
	}
	joined := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", joined, len(rules)-listLimit)
	}
	return joined
}

var ingressClassPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Controller", "string", networkingv1.IngressClassSpec{}.SwaggerDoc()["controller"]),
		col("Parameters", "string", networkingv1.IngressClassSpec{}.SwaggerDoc()["parameters"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, ic *networkingv1.IngressClass) []interface{} {
		name := ic.Name
		if ic.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true" {
			name += " (default)"
		}
		params := none
		if p := ic.Spec.Parameters; p != nil {
			params = p.Kind
			if p.APIGroup != nil {
				params += "." + *p.APIGroup
			}
			params += "/" + p.Name
		}
		return []interface{}{name, ic.Spec.Controller, params, since(now, ic.CreationTimestamp)}
	}),
}

var networkPolicyPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Pod-Selector", "string", networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, np *networkingv1.NetworkPolicy) []interface{} {
		return []interface{}{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), since(now, np.CreationTimestamp)}
	}),
}

var podDisruptionBudgetPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Min Available", "string", policyv1.PodDisruptionBudgetSpec{}.SwaggerDoc()["minAvailable"]),
		col("Max Unavailable", "string", policyv1.PodDisruptionBudgetSpec{}.SwaggerDoc()["maxUnavailable"]),
		col("Allowed Disruptions", "integer", policyv1.PodDisruptionBudgetStatus{}.SwaggerDoc()["disruptionsAllowed"]),
		ageColumn(),
	},
	rows: eachObject(func(now time.Time, pdb *policyv1.PodDisruptionBudget) []interface{} {
		minAvailable, maxUnavailable := "N/A", "N/A"
		if pdb.Spec.MinAvailable != nil {
			minAvailable = pdb.Spec.MinAvailable.String()
		}
		if pdb.Spec.MaxUnavailable != nil {
			maxUnavailable = pdb.Spec.MaxUnavailable.String()
		}
		return []interface{}{pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), since(now, pdb.CreationTimestamp)}
	}),
}

var priorityClassPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		col("Value", "integer", schedulingv1.PriorityClass{}.SwaggerDoc()["value"]),
		col("Global-Default", "boolean", schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]),
		ageColumn(),
		col("PreemptionPolicy", "string", schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]),
	},
	rows: eachObject(func(now time.Time, pc *schedulingv1.PriorityClass) []interface{} {
		policy := ""
		if pc.PreemptionPolicy != nil {
			policy = string(*pc.PreemptionPolicy)
		}
		return []interface{}{pc.Name, int64(pc.Value), pc.GlobalDefault, since(now, pc.CreationTimestamp), policy}
	}),
}

var certificateSigningRequestPrinter = printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn(),
		ageColumn(),
		col("SignerName", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
		col("Requestor", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["request"]),
		col("RequestedDuration", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
		col("Condition", "string", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
	},
	rows: eachObject(func(now time.Time, csr *certificatesv1.CertificateSigningRequest) []interface{} {
		signer := csr.Spec.SignerName
		if signer == "" {
			signer = none
		}
		requested := none
		if s := csr.Spec.ExpirationSeconds; s != nil {
			requested = duration.HumanDuration(time.Duration(*s) * time.Second)
		}
		return []interface{}{csr.Name, since(now, csr.CreationTimestamp), signer, csr.Spec.Username, requested, csrCondition(csr)}
	}),
}

// csrCondition is Denied, Approved or Pending (in that precedence), then
// ",Failed" and ",Issued" when they apply.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	status := "Pending"
	switch {
	case denied:
		status = "Denied"
	case approved:
		status = "Approved"
	}
	if failed {
		status += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}
