package core

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestValidateNode(t *testing.T) {
	base := func() *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-1.example"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{
				{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
				{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute},
			}},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}},
		}
	}
	tests := []struct {
		name   string
		mutate func(*corev1.Node)
		want   []e
	}{
		{"valid", func(*corev1.Node) {}, nil},
		{"namespaced", func(n *corev1.Node) { n.Namespace = "default" }, []e{forbidden("metadata.namespace")}},
		{"bad name", func(n *corev1.Node) { n.Name = "Node_1" }, []e{invalid("metadata.name")}},
		{"duplicate taint", func(n *corev1.Node) { n.Spec.Taints[1].Effect = corev1.TaintEffectNoSchedule }, []e{duplicate("spec.taints[1]")}},
		{"bad taint effect", func(n *corev1.Node) { n.Spec.Taints[0].Effect = "Evict" }, []e{notSupported("spec.taints[0].effect")}},
		{"taint effect required", func(n *corev1.Node) { n.Spec.Taints[0].Effect = "" }, []e{required("spec.taints[0].effect")}},
		{"bad taint key", func(n *corev1.Node) { n.Spec.Taints[0].Key = "bad key" }, []e{invalid("spec.taints[0].key")}},
		{"bad pod CIDR", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.42.0.0/33"} }, []e{invalid("spec.podCIDRs[0]")}},
		{"two IPv4 pod CIDRs", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.42.0.0/24", "10.42.1.0/24"} }, []e{invalid("spec.podCIDRs")}},
		{"negative capacity", func(n *corev1.Node) { n.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("-1") },
			[]e{invalid("status.capacity[cpu]")}},
		{"fractional pods", func(n *corev1.Node) { n.Status.Capacity[corev1.ResourcePods] = resource.MustParse("1.5") },
			[]e{invalid("status.capacity[pods]")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := base()
			tt.mutate(n)
			expectErrs(t, ValidateNode(n), tt.want...)
		})
	}
}

func TestValidateNodeUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*corev1.Node)
		mutate func(*corev1.Node)
		want   []e
	}{
		{"podCIDR set once", nil, func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.42.0.0/24", []string{"10.42.0.0/24"} }, nil},
		{"podCIDR immutable", func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.42.0.0/24", []string{"10.42.0.0/24"} },
			func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.42.1.0/24", []string{"10.42.1.0/24"} },
			[]e{forbidden("spec.podCIDRs"), forbidden("spec.podCIDR")}},
		{"providerID set once", nil, func(n *corev1.Node) { n.Spec.ProviderID = "k1s://node-1" }, nil},
		{"providerID immutable", func(n *corev1.Node) { n.Spec.ProviderID = "k1s://node-1" },
			func(n *corev1.Node) { n.Spec.ProviderID = "k1s://node-2" }, []e{invalid("spec.providerID")}},
		{"providerID not clearable", func(n *corev1.Node) { n.Spec.ProviderID = "k1s://node-1" },
			func(n *corev1.Node) { n.Spec.ProviderID = "" }, []e{invalid("spec.providerID")}},
		{"taints and unschedulable may change", nil, func(n *corev1.Node) {
			n.Spec.Unschedulable = true
			n.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}}
		}, nil},
		{"duplicate taint on update", nil, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "a", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		}, []e{duplicate("spec.taints[1]")}},
		{"duplicate address", nil, func(n *corev1.Node) {
			a := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}
			n.Status.Addresses = []corev1.NodeAddress{a, a}
		}, []e{duplicate("status.addresses[1]")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: "1"}}
			if tt.old != nil {
				tt.old(old)
			}
			n := old.DeepCopy()
			tt.mutate(n)
			expectErrs(t, ValidateNodeUpdate(n, old), tt.want...)
		})
	}
}

func TestValidateNamespace(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes", "example.com/cleanup"}}}
	expectErrs(t, ValidateNamespace(ns))

	bad := ns.DeepCopy()
	bad.Name = "team.a"
	bad.Spec.Finalizers = []corev1.FinalizerName{"cleanup"}
	expectErrs(t, ValidateNamespace(bad), invalid("metadata.name"), invalid("spec.finalizers[0]"))

	old := ns.DeepCopy()
	old.ResourceVersion = "1"
	old.Status.Phase = corev1.NamespaceActive
	upd := old.DeepCopy()
	upd.Labels = map[string]string{"team": "a"}
	expectErrs(t, ValidateNamespaceUpdate(upd, old))

	st := old.DeepCopy()
	st.Status.Phase = corev1.NamespaceTerminating
	expectErrs(t, ValidateNamespaceStatusUpdate(st, old), invalid("status.Phase"))
	st.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	st.DeletionGracePeriodSeconds = ptr.To[int64](0)
	old.DeletionTimestamp, old.DeletionGracePeriodSeconds = st.DeletionTimestamp, st.DeletionGracePeriodSeconds
	expectErrs(t, ValidateNamespaceStatusUpdate(st, old))

	fin := old.DeepCopy()
	fin.Spec.Finalizers = []corev1.FinalizerName{"bad/Final/izer"}
	expectErrs(t, ValidateNamespaceFinalizeUpdate(fin, old), invalid("spec.finalizers[0]"))
	fin.Spec.Finalizers = nil
	expectErrs(t, ValidateNamespaceFinalizeUpdate(fin, old))
}

func TestValidateConfigMap(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
		Data: map[string]string{"app.conf": "x", "KEY_1": "y"}, BinaryData: map[string][]byte{"blob.bin": {1}}}
	expectErrs(t, ValidateConfigMap(cm))

	bad := cm.DeepCopy()
	bad.Data["bad key"] = "x"
	bad.BinaryData["app.conf"] = []byte("dup")
	expectErrs(t, ValidateConfigMap(bad), invalid("data[bad key]"), invalid("data[app.conf]"))

	big := cm.DeepCopy()
	big.Data["big"] = strings.Repeat("x", corev1.MaxSecretSize)
	// Upstream reports the whole object with an empty path, printed as "[]".
	expectErrs(t, ValidateConfigMap(big), tooLong("[]"))

	old := cm.DeepCopy()
	old.ResourceVersion = "1"
	old.Immutable = ptr.To(true)
	upd := old.DeepCopy()
	upd.Data["app.conf"] = "changed"
	upd.Immutable = ptr.To(false)
	expectErrs(t, ValidateConfigMapUpdate(upd, old), forbidden("data"), forbidden("immutable"))
	meta := old.DeepCopy()
	meta.Labels = map[string]string{"a": "b"}
	expectErrs(t, ValidateConfigMapUpdate(meta, old))
	mutable := cm.DeepCopy()
	mutable.ResourceVersion = "1"
	changed := mutable.DeepCopy()
	changed.Data["app.conf"] = "changed"
	changed.Immutable = ptr.To(true)
	expectErrs(t, ValidateConfigMapUpdate(changed, mutable))
}

func TestValidateSecret(t *testing.T) {
	mk := func(typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Type: typ, Data: data}
	}
	tests := []struct {
		name   string
		secret *corev1.Secret
		want   []e
	}{
		{"opaque", mk(corev1.SecretTypeOpaque, map[string][]byte{"a": []byte("1")}), nil},
		{"bad key", mk(corev1.SecretTypeOpaque, map[string][]byte{"a/b": nil}), []e{invalid("data[a/b]")}},
		{"too big", mk(corev1.SecretTypeOpaque, map[string][]byte{"a": make([]byte, corev1.MaxSecretSize+1)}), []e{tooLong("data")}},
		{"tls ok", mk(corev1.SecretTypeTLS, map[string][]byte{"tls.crt": nil, "tls.key": nil}), nil},
		{"tls missing keys", mk(corev1.SecretTypeTLS, nil), []e{required("data[tls.crt]"), required("data[tls.key]")}},
		{"dockerconfigjson ok", mk(corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}), nil},
		{"dockerconfigjson bad json", mk(corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": []byte(`{`)}),
			[]e{invalid("data[.dockerconfigjson]")}},
		{"dockerconfigjson missing", mk(corev1.SecretTypeDockerConfigJson, nil), []e{required("data[.dockerconfigjson]")}},
		{"dockercfg missing", mk(corev1.SecretTypeDockercfg, nil), []e{required("data[.dockercfg]")}},
		{"basic-auth password only", mk(corev1.SecretTypeBasicAuth, map[string][]byte{"password": nil}), nil},
		{"basic-auth empty", mk(corev1.SecretTypeBasicAuth, nil), []e{required("data[username]"), required("data[password]")}},
		{"ssh-auth missing", mk(corev1.SecretTypeSSHAuth, nil), []e{required("data[ssh-privatekey]")}},
		{"service account token without annotation", mk(corev1.SecretTypeServiceAccountToken, nil),
			[]e{required("metadata.annotations[kubernetes.io/service-account.name]")}},
		{"bootstrap token (no extra rules, as upstream)", mk(corev1.SecretTypeBootstrapToken, nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectErrs(t, ValidateSecret(tt.secret), tt.want...)
		})
	}

	old := mk(corev1.SecretTypeOpaque, map[string][]byte{"a": []byte("1")})
	old.ResourceVersion = "1"
	typ := old.DeepCopy()
	typ.Type = corev1.SecretTypeTLS
	typ.Data = map[string][]byte{"tls.crt": nil, "tls.key": nil}
	expectErrs(t, ValidateSecretUpdate(typ, old), invalid("type"))
	old.Immutable = ptr.To(true)
	data := old.DeepCopy()
	data.Data["a"] = []byte("2")
	expectErrs(t, ValidateSecretUpdate(data, old), forbidden("data"))
}

func TestValidateServiceAccountAndEvent(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "ci"}}
	expectErrs(t, ValidateServiceAccount(sa))
	sa2 := sa.DeepCopy()
	sa2.Name = "Builder"
	expectErrs(t, ValidateServiceAccount(sa2), invalid("metadata.name"))
	old := sa.DeepCopy()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Name = "other"
	expectErrs(t, ValidateServiceAccountUpdate(upd, old), invalid("metadata.name"))

	legacy := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.17a", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}, Reason: "Started"}
	expectErrs(t, ValidateEvent(legacy))
	mismatch := legacy.DeepCopy()
	mismatch.InvolvedObject.Namespace = "other"
	expectErrs(t, ValidateEvent(mismatch), invalid("involvedObject.namespace"))

	modern := legacy.DeepCopy()
	modern.EventTime = metav1.NewMicroTime(time.Now())
	expectErrs(t, ValidateEvent(modern), required("reportingComponent"), invalid("reportingComponent"), invalid("reportingComponent"),
		required("reportingInstance"), required("action"))
	modern.ReportingController = "k1s.io/agent"
	modern.ReportingInstance = "node-1"
	modern.Action = "Start"
	expectErrs(t, ValidateEvent(modern))
	modern.Message = strings.Repeat("x", 2000)
	expectErrs(t, ValidateEvent(modern), invalid("message"))

	oldEv := legacy.DeepCopy()
	oldEv.ResourceVersion = "1"
	newEv := oldEv.DeepCopy()
	newEv.Count = 2
	expectErrs(t, ValidateEventUpdate(newEv, oldEv))
}

func TestValidateEndpoints(t *testing.T) {
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Subsets: []corev1.EndpointSubset{{
			Addresses:         []corev1.EndpointAddress{{IP: "10.42.0.5", NodeName: ptr.To("node-1")}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.42.0.6", Hostname: "web-1"}},
			Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP}},
		}},
	}
	expectErrs(t, ValidateEndpoints(ep))

	tests := []struct {
		name   string
		mutate func(*corev1.Endpoints)
		want   []e
	}{
		{"no addresses", func(ep *corev1.Endpoints) { ep.Subsets[0].Addresses, ep.Subsets[0].NotReadyAddresses = nil, nil },
			[]e{required("subsets[0]")}},
		{"bad IP", func(ep *corev1.Endpoints) { ep.Subsets[0].Addresses[0].IP = "10.42.0" }, []e{invalid("subsets[0].addresses[0].ip")}},
		{"loopback IP", func(ep *corev1.Endpoints) { ep.Subsets[0].Addresses[0].IP = "127.0.0.1" }, []e{invalid("subsets[0].addresses[0].ip")}},
		{"port name required", func(ep *corev1.Endpoints) { ep.Subsets[0].Ports[1].Name = "" }, []e{required("subsets[0].ports[1].name")}},
		{"bad protocol", func(ep *corev1.Endpoints) { ep.Subsets[0].Ports[0].Protocol = "ICMP" }, []e{notSupported("subsets[0].ports[0].protocol")}},
		{"bad hostname", func(ep *corev1.Endpoints) { ep.Subsets[0].NotReadyAddresses[0].Hostname = "web.1" },
			[]e{invalid("subsets[0].notReadyAddresses[0].hostname")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := ep.DeepCopy()
			tt.mutate(bad)
			expectErrs(t, ValidateEndpoints(bad), tt.want...)
		})
	}

	// Unchanged subsets are not re-validated on update.
	old := ep.DeepCopy()
	old.ResourceVersion = "1"
	old.Subsets[0].Addresses[0].IP = "127.0.0.1"
	upd := old.DeepCopy()
	upd.Labels = map[string]string{"a": "b"}
	expectErrs(t, ValidateEndpointsUpdate(upd, old))
	upd.Subsets[0].Ports[0].Port = 8081
	expectErrs(t, ValidateEndpointsUpdate(upd, old), invalid("subsets[0].addresses[0].ip"))
}

func validPV() *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/k1s/storage/pv-1"}},
			StorageClassName:       "local-path",
		},
	}
	DefaultPersistentVolume(pv)
	return pv
}

func TestValidatePersistentVolume(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolume)
		want   []e
	}{
		{"valid", func(*corev1.PersistentVolume) {}, nil},
		{"namespaced", func(pv *corev1.PersistentVolume) { pv.Namespace = "default" }, []e{forbidden("metadata.namespace")}},
		{"no access modes", func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = nil }, []e{required("spec.accessModes")}},
		{"RWOP with others", func(pv *corev1.PersistentVolume) {
			pv.Spec.AccessModes = append(pv.Spec.AccessModes, corev1.ReadWriteOncePod)
		}, []e{forbidden("spec.accessModes")}},
		{"bad access mode", func(pv *corev1.PersistentVolume) {
			pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadSometimes"}
		}, []e{notSupported("spec.accessModes")}},
		{"no capacity", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity = nil },
			[]e{required("spec.capacity"), notSupported("spec.capacity")}},
		{"zero capacity", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("0") },
			[]e{invalid("spec.capacity[storage]")}},
		{"no source", func(pv *corev1.PersistentVolume) { pv.Spec.HostPath = nil }, []e{required("spec")}},
		{"two sources", func(pv *corev1.PersistentVolume) {
			pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}
		}, []e{forbidden("spec.nfs")}},
		{"bad reclaim policy", func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Keep" },
			[]e{notSupported("spec.persistentVolumeReclaimPolicy")}},
		{"recycle root", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath.Path = "/"
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
		}, []e{forbidden("spec.persistentVolumeReclaimPolicy")}},
		{"local without node affinity", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath = nil
			pv.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/disk"}
		}, []e{required("spec.nodeAffinity")}},
		{"bad storage class", func(pv *corev1.PersistentVolume) { pv.Spec.StorageClassName = "Local_Path" }, []e{invalid("spec.storageClassName")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv := validPV()
			tt.mutate(pv)
			expectErrs(t, ValidatePersistentVolume(pv), tt.want...)
		})
	}

	old := validPV()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	upd.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
	expectErrs(t, ValidatePersistentVolumeUpdate(upd, old))
	upd.Spec.HostPath.Path = "/elsewhere"
	upd.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
	expectErrs(t, ValidatePersistentVolumeUpdate(upd, old), forbidden("spec.persistentvolumesource"), invalid("volumeMode"))

	st := old.DeepCopy()
	st.Status.Phase = corev1.VolumeBound
	expectErrs(t, ValidatePersistentVolumeStatusUpdate(st, old))
}

func validPVC() *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			StorageClassName: ptr.To("local-path"),
		},
	}
	DefaultPersistentVolumeClaim(pvc)
	return pvc
}

func TestValidatePersistentVolumeClaim(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolumeClaim)
		want   []e
	}{
		{"valid", func(*corev1.PersistentVolumeClaim) {}, nil},
		{"no access modes", func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = nil }, []e{required("spec.accessModes")}},
		{"no storage request", func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil }, []e{required("spec.resources[storage]")}},
		{"zero storage request", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
		}, []e{invalid("spec.resources[storage]")}},
		{"bad volume mode", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeMode("Raw")) },
			[]e{notSupported("spec.volumeMode")}},
		{"bad selector", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Like"}}}
		}, []e{invalid("spec.selector.matchExpressions[0].operator")}},
		{"dataSource of unknown kind", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "Snapshot", Name: "s"}
		}, []e{invalid("spec.dataSource")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pvc := validPVC()
			tt.mutate(pvc)
			expectErrs(t, ValidatePersistentVolumeClaim(pvc), tt.want...)
		})
	}

	old := validPVC()
	old.ResourceVersion = "1"
	bind := old.DeepCopy()
	bind.Spec.VolumeName = "pv-1"
	expectErrs(t, ValidatePersistentVolumeClaimUpdate(bind, old))

	bound := bind.DeepCopy()
	bound.Status.Phase = corev1.ClaimBound
	bound.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	grow := bound.DeepCopy()
	grow.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	expectErrs(t, ValidatePersistentVolumeClaimUpdate(grow, bound))
	shrink := bound.DeepCopy()
	shrink.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("500Mi")
	expectErrs(t, ValidatePersistentVolumeClaimUpdate(shrink, bound), forbidden("spec.resources.requests.storage"))

	rebind := bound.DeepCopy()
	rebind.Spec.VolumeName = "pv-2"
	expectErrs(t, ValidatePersistentVolumeClaimUpdate(rebind, bound), forbidden("spec"))
	modes := old.DeepCopy()
	modes.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	expectErrs(t, ValidatePersistentVolumeClaimUpdate(modes, old), forbidden("spec"))

	st := bound.DeepCopy()
	st.Status.Capacity[corev1.ResourceStorage] = resource.MustParse("-1")
	expectErrs(t, ValidatePersistentVolumeClaimStatusUpdate(st, bound), invalid("status.capacity[storage]"))
	noRV := bound.DeepCopy()
	noRV.ResourceVersion = ""
	expectErrs(t, ValidatePersistentVolumeClaimStatusUpdate(noRV, bound), required("resourceVersion"), invalid("metadata.resourceVersion"))
}

func TestValidateResourceQuota(t *testing.T) {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: "default"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceRequestsCPU: resource.MustParse("4"),
			"requests.example.com/gpu": resource.MustParse("2"), "count/deployments.apps": resource.MustParse("5"),
		}},
	}
	expectErrs(t, ValidateResourceQuota(q))

	tests := []struct {
		name   string
		mutate func(*corev1.ResourceQuota)
		want   []e
	}{
		{"unknown resource", func(q *corev1.ResourceQuota) { q.Spec.Hard["gpus"] = resource.MustParse("1") },
			[]e{invalid("spec.hard[gpus]"), invalid("spec.hard[gpus]")}},
		{"negative", func(q *corev1.ResourceQuota) { q.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("-1") },
			[]e{invalid("spec.hard[requests.cpu]")}},
		{"fractional pods", func(q *corev1.ResourceQuota) { q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("1.5") },
			[]e{invalid("spec.hard[pods]")}},
		{"conflicting scopes", func(q *corev1.ResourceQuota) {
			q.Spec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating}
		}, []e{invalid("spec.scopes")}},
		{"scope not applicable", func(q *corev1.ResourceQuota) {
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		}, []e{invalid("spec.scopes")}},
		{"scope selector value that is no label value", func(q *corev1.ResourceQuota) {
			q.Spec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high", "not a value!"}},
			}}
		}, []e{invalid("spec.scopeSelector.matchExpressions.values[1]")}},
		{"scope selector value over 63 characters", func(q *corev1.ResourceQuota) {
			q.Spec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpNotIn, Values: []string{strings.Repeat("a", 64)}},
			}}
		}, []e{invalid("spec.scopeSelector.matchExpressions.values[0]")}},
		{"scope selector: unknown scope, operator not Exists for BestEffort, values with Exists", func(q *corev1.ResourceQuota) {
			q.Spec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: "Bogus", Operator: corev1.ScopeSelectorOpExists},
				{ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpIn, Values: []string{"x"}},
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpExists, Values: []string{"x"}},
			}}
		}, []e{invalid("spec.scopeSelector.matchExpressions.scopeName"), invalid("spec.scopeSelector.matchExpressions.operator"),
			invalid("spec.scopeSelector.matchExpressions.values")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := q.DeepCopy()
			tt.mutate(bad)
			expectErrs(t, ValidateResourceQuota(bad), tt.want...)
		})
	}

	old := q.DeepCopy()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Spec.Hard[corev1.ResourcePods] = resource.MustParse("20")
	expectErrs(t, ValidateResourceQuotaUpdate(upd, old))
	upd.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
	expectErrs(t, ValidateResourceQuotaUpdate(upd, old), invalid("spec.scopes"))

	st := old.DeepCopy()
	st.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("-1")}
	expectErrs(t, ValidateResourceQuotaStatusUpdate(st, old), invalid("status.used[pods]"))
}

func TestValidateLimitRange(t *testing.T) {
	lr := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "default"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypeContainer,
				Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Min: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			{Type: corev1.LimitTypePod, Max: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}},
			{Type: corev1.LimitTypePersistentVolumeClaim, Max: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		}},
	}
	DefaultLimitRange(lr)
	expectErrs(t, ValidateLimitRange(lr))

	tests := []struct {
		name   string
		mutate func(*corev1.LimitRange)
		want   []e
	}{
		{"min above max", func(lr *corev1.LimitRange) { lr.Spec.Limits[0].Min[corev1.ResourceCPU] = resource.MustParse("3") },
			[]e{invalid("spec.limits[0].min[cpu]"), invalid("spec.limits[0].defaultRequest[cpu]"), invalid("spec.limits[0].default[cpu]")}},
		{"duplicate type", func(lr *corev1.LimitRange) { lr.Spec.Limits[1].Type = corev1.LimitTypeContainer },
			[]e{duplicate("spec.limits[1].type")}},
		{"default on Pod", func(lr *corev1.LimitRange) {
			lr.Spec.Limits[1].Default = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, []e{forbidden("spec.limits[1].default")}},
		{"PVC without storage bounds", func(lr *corev1.LimitRange) {
			lr.Spec.Limits[2].Max = corev1.ResourceList{}
		}, []e{required("spec.limits[2].limits")}},
		{"unknown type", func(lr *corev1.LimitRange) { lr.Spec.Limits[2].Type = "Node" }, []e{invalid("spec.limits[2].type")}},
		{"ratio below one", func(lr *corev1.LimitRange) {
			lr.Spec.Limits[0].MaxLimitRequestRatio = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
		}, []e{invalid("spec.limits[0].maxLimitRequestRatio[cpu]")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := lr.DeepCopy()
			tt.mutate(bad)
			expectErrs(t, ValidateLimitRange(bad), tt.want...)
		})
	}
	old := lr.DeepCopy()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Name = "renamed"
	expectErrs(t, ValidateLimitRangeUpdate(upd, old), invalid("metadata.name"))
}

func TestValidateReplicationController(t *testing.T) {
	base := func() *corev1.ReplicationController {
		rc := &corev1.ReplicationController{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.ReplicationControllerSpec{
				Template: &corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.25"}}},
				},
			},
		}
		DefaultReplicationController(rc)
		return rc
	}
	tests := []struct {
		name   string
		mutate func(*corev1.ReplicationController)
		want   []e
	}{
		{"valid", func(*corev1.ReplicationController) {}, nil},
		{"selector mismatch", func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "db"} },
			[]e{invalid("spec.template.metadata.labels")}},
		{"empty selector", func(rc *corev1.ReplicationController) { rc.Spec.Selector = nil }, []e{required("spec.selector")}},
		{"restartPolicy Never", func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		},
			[]e{notSupported("spec.template.spec.restartPolicy")}},
		{"negative replicas", func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptr.To[int32](-1) }, []e{invalid("spec.replicas")}},
		{"no template", func(rc *corev1.ReplicationController) { rc.Spec.Template = nil }, []e{required("spec.template")}},
		{"activeDeadlineSeconds", func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
		},
			[]e{forbidden("spec.template.spec.activeDeadlineSeconds")}},
		{"bad template container", func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.Containers[0].Image = "" },
			[]e{required("spec.template.spec.containers[0].image")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := base()
			tt.mutate(rc)
			expectErrs(t, ValidateReplicationController(rc), tt.want...)
		})
	}

	old := base()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Spec.Replicas = ptr.To[int32](3)
	expectErrs(t, ValidateReplicationControllerUpdate(upd, old))
	st := old.DeepCopy()
	st.Status = corev1.ReplicationControllerStatus{Replicas: 1, ReadyReplicas: 2, AvailableReplicas: 1}
	expectErrs(t, ValidateReplicationControllerStatusUpdate(st, old), invalid("status.readyReplicas"))
}
