package apps

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

var webLabels = map[string]string{"app": "web"}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "web",
			Image: "nginx:1.27",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}},
		}}},
	}
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1"}
}

func TestRegisterDefaultsCoversEveryKind(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	dl := &appsv1.DeploymentList{Items: []appsv1.Deployment{{Spec: appsv1.DeploymentSpec{Template: podTemplate()}}}}
	s.Default(dl)
	if dl.Items[0].Spec.Replicas == nil || dl.Items[0].Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("deployment list item not defaulted: %+v", dl.Items[0].Spec)
	}
	rs := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Template: podTemplate()}}
	s.Default(rs)
	if rs.Spec.Replicas == nil || *rs.Spec.Replicas != 1 {
		t.Errorf("replicaset replicas = %v", rs.Spec.Replicas)
	}
	if rs.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("replicaset template not defaulted by core: dnsPolicy %q", rs.Spec.Template.Spec.DNSPolicy)
	}
	for _, obj := range []runtime.Object{&appsv1.StatefulSetList{}, &appsv1.DaemonSetList{}, &appsv1.ReplicaSetList{}, &appsv1.ControllerRevisionList{}, &appsv1.ControllerRevision{}} {
		s.Default(obj) // must not panic
	}
}

func TestDefaultDeployment(t *testing.T) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: podTemplate()}}
	DefaultDeployment(d)
	if *d.Spec.Replicas != 1 || *d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Errorf("scalars: replicas %d history %d deadline %d", *d.Spec.Replicas, *d.Spec.RevisionHistoryLimit, *d.Spec.ProgressDeadlineSeconds)
	}
	st := d.Spec.Strategy
	if st.Type != appsv1.RollingUpdateDeploymentStrategyType || st.RollingUpdate.MaxSurge.String() != "25%" || st.RollingUpdate.MaxUnavailable.String() != "25%" {
		t.Errorf("strategy = %+v", st)
	}
	if d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("template restartPolicy = %q", d.Spec.Template.Spec.RestartPolicy)
	}

	rec := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, Replicas: ptr.To[int32](0)}}
	DefaultDeployment(rec)
	if rec.Spec.Strategy.RollingUpdate != nil || *rec.Spec.Replicas != 0 {
		t.Errorf("recreate deployment defaulted wrongly: %+v", rec.Spec)
	}

	again := d.DeepCopy()
	DefaultDeployment(again)
	if !equality.Semantic.DeepEqual(again, d) {
		t.Errorf("defaulting is not idempotent")
	}
}

func TestDefaultStatefulSet(t *testing.T) {
	ss := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		Template:             podTemplate(),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
	}}
	DefaultStatefulSet(ss)
	sp := ss.Spec
	if sp.PodManagementPolicy != appsv1.OrderedReadyPodManagement || *sp.Replicas != 1 || *sp.RevisionHistoryLimit != 10 {
		t.Errorf("scalars = %+v", sp)
	}
	if sp.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || *sp.UpdateStrategy.RollingUpdate.Partition != 0 ||
		sp.UpdateStrategy.RollingUpdate.MaxUnavailable.IntValue() != 1 {
		t.Errorf("updateStrategy = %+v", sp.UpdateStrategy)
	}
	rp := sp.PersistentVolumeClaimRetentionPolicy
	if rp.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || rp.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("retention = %+v", rp)
	}
	if vm := sp.VolumeClaimTemplates[0].Spec.VolumeMode; vm == nil || *vm != corev1.PersistentVolumeFilesystem {
		t.Errorf("claim volumeMode = %v", vm)
	}

	onDelete := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}}
	DefaultStatefulSet(onDelete)
	if onDelete.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Errorf("OnDelete got rollingUpdate %+v", onDelete.Spec.UpdateStrategy.RollingUpdate)
	}
	explicitRolling := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
		Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](3)},
	}}}
	DefaultStatefulSet(explicitRolling)
	if ru := explicitRolling.Spec.UpdateStrategy.RollingUpdate; *ru.Partition != 3 || ru.MaxUnavailable.IntValue() != 1 {
		t.Errorf("explicit rolling update = %+v", ru)
	}
}

func TestDefaultDaemonSet(t *testing.T) {
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: podTemplate()}}
	DefaultDaemonSet(ds)
	us := ds.Spec.UpdateStrategy
	if us.Type != appsv1.RollingUpdateDaemonSetStrategyType || us.RollingUpdate.MaxUnavailable.IntValue() != 1 || us.RollingUpdate.MaxSurge.IntValue() != 0 {
		t.Errorf("updateStrategy = %+v", us)
	}
	if *ds.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("revisionHistoryLimit = %d", *ds.Spec.RevisionHistoryLimit)
	}
}

func validDeployment() *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: meta("web"),
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: webLabels},
			Template: podTemplate(),
		},
	}
	DefaultDeployment(d)
	return d
}

func TestValidateDeployment(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []errKey
	}{
		{name: "valid", mutate: func(*appsv1.Deployment) {}},
		{
			name:   "missing selector",
			mutate: func(d *appsv1.Deployment) { d.Spec.Selector = nil },
			// A nil selector selects nothing, so the template cannot match either.
			want: []errKey{e(field.ErrorTypeRequired, "spec.selector"), e(field.ErrorTypeInvalid, "spec.template.metadata.labels")},
		},
		{
			name:   "empty selector",
			mutate: func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.selector")},
		},
		{
			name:   "selector does not match template",
			mutate: func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels = map[string]string{"app": "db"} },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.template.metadata.labels")},
		},
		{
			name:   "negative replicas",
			mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.replicas")},
		},
		{
			name:   "restart policy never",
			mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			want:   []errKey{e(field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy")},
		},
		{
			name:   "active deadline",
			mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) },
			want:   []errKey{e(field.ErrorTypeForbidden, "spec.template.spec.activeDeadlineSeconds")},
		},
		{
			name: "surge and unavailable both zero",
			mutate: func(d *appsv1.Deployment) {
				d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
				d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("0%"))
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxUnavailable")},
		},
		{
			name: "max unavailable above 100%",
			mutate: func(d *appsv1.Deployment) {
				d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("150%"))
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxUnavailable")},
		},
		{
			name:   "max surge above 100% is fine",
			mutate: func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("200%")) },
		},
		{
			name:   "max surge not a percent",
			mutate: func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("lots")) },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxSurge")},
		},
		{
			name:   "recreate with rolling update",
			mutate: func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType },
			want:   []errKey{e(field.ErrorTypeForbidden, "spec.strategy.rollingUpdate")},
		},
		{
			name:   "unknown strategy",
			mutate: func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" },
			want:   []errKey{e(field.ErrorTypeNotSupported, "spec.strategy")},
		},
		{
			name:   "negative history limit",
			mutate: func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = ptr.To[int32](-1) },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.revisionHistoryLimit")},
		},
		{
			name:   "progress deadline not above minReadySeconds",
			mutate: func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.progressDeadlineSeconds")},
		},
		{
			name:   "bad name",
			mutate: func(d *appsv1.Deployment) { d.Name = "Web_App" },
			want:   []errKey{e(field.ErrorTypeInvalid, "metadata.name")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := validDeployment()
			tc.mutate(d)
			expectErrs(t, ValidateDeployment(d), tc.want...)
		})
	}
}

func TestValidateDeploymentUpdate(t *testing.T) {
	old := validDeployment()
	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	scaled.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	expectErrs(t, ValidateDeploymentUpdate(scaled, old))

	moved := old.DeepCopy()
	moved.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}
	expectErrs(t, ValidateDeploymentUpdate(moved, old), e(field.ErrorTypeInvalid, "spec.selector"))
}

func TestValidateDeploymentStatusUpdate(t *testing.T) {
	old := validDeployment()
	old.Status.CollisionCount = ptr.To[int32](2)
	upd := old.DeepCopy()
	upd.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 3, ReadyReplicas: 1, AvailableReplicas: 2, UnavailableReplicas: -1, CollisionCount: ptr.To[int32](1)}
	expectErrs(t, ValidateDeploymentStatusUpdate(upd, old),
		e(field.ErrorTypeInvalid, "status.updatedReplicas"),
		e(field.ErrorTypeInvalid, "status.availableReplicas"),
		e(field.ErrorTypeInvalid, "status.unavailableReplicas"),
		e(field.ErrorTypeInvalid, "status.collisionCount"))

	good := old.DeepCopy()
	good.Status = appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 2, CollisionCount: ptr.To[int32](2)}
	expectErrs(t, ValidateDeploymentStatusUpdate(good, old))
}

func validReplicaSet() *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: meta("web-abc"),
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: webLabels}, Template: podTemplate()},
	}
	DefaultReplicaSet(rs)
	return rs
}

func TestValidateReplicaSet(t *testing.T) {
	expectErrs(t, ValidateReplicaSet(validReplicaSet()))

	rs := validReplicaSet()
	rs.Spec.MinReadySeconds = -1
	rs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	expectErrs(t, ValidateReplicaSet(rs),
		e(field.ErrorTypeInvalid, "spec.minReadySeconds"),
		e(field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy"))

	rs = validReplicaSet()
	rs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Like", Values: []string{"web"}}}}
	expectErrs(t, ValidateReplicaSet(rs),
		e(field.ErrorTypeInvalid, "spec.selector.matchExpressions[0].operator"),
		e(field.ErrorTypeInvalid, "spec.selector"))

	old := validReplicaSet()
	upd := old.DeepCopy()
	upd.Spec.Selector.MatchLabels = map[string]string{"tier": "front"}
	expectErrs(t, ValidateReplicaSetUpdate(upd, old), e(field.ErrorTypeInvalid, "spec.selector"))

	st := old.DeepCopy()
	st.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, TerminatingReplicas: ptr.To[int32](-1)}
	expectErrs(t, ValidateReplicaSetStatusUpdate(st, old),
		e(field.ErrorTypeInvalid, "status.fullyLabeledReplicas"),
		e(field.ErrorTypeInvalid, "status.terminatingReplicas"))
}

func validStatefulSet() *appsv1.StatefulSet {
	tpl := podTemplate()
	tpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	tpl.Spec.Hostname = "ignored-by-controller"
	ss := &appsv1.StatefulSet{
		ObjectMeta: meta("db"),
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "db",
			Selector:    &metav1.LabelSelector{MatchLabels: webLabels},
			Template:    tpl,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	DefaultStatefulSet(ss)
	return ss
}

func TestValidateStatefulSet(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.StatefulSet)
		want   []errKey
	}{
		{name: "valid, mounts a claim template", mutate: func(*appsv1.StatefulSet) {}},
		{
			name:   "mount of a volume that is neither declared nor a claim template",
			mutate: func(ss *appsv1.StatefulSet) { ss.Spec.VolumeClaimTemplates[0].Name = "other" },
			want:   []errKey{e(field.ErrorTypeNotFound, "spec.template.spec.containers[0].volumeMounts[0].name")},
		},
		{
			name:   "name must be a DNS label",
			mutate: func(ss *appsv1.StatefulSet) { ss.Name = "db.primary" },
			want:   []errKey{e(field.ErrorTypeInvalid, "metadata.name")},
		},
		{
			name:   "bad pod management policy",
			mutate: func(ss *appsv1.StatefulSet) { ss.Spec.PodManagementPolicy = "Random" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.podManagementPolicy")},
		},
		{
			name: "recreate strategy is gated off",
			mutate: func(ss *appsv1.StatefulSet) {
				ss.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RecreateStatefulSetStrategyType}
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.updateStrategy")},
		},
		{
			name:   "on delete with rolling update",
			mutate: func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.updateStrategy.rollingUpdate")},
		},
		{
			name: "bad rolling update",
			mutate: func(ss *appsv1.StatefulSet) {
				ss.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](-1)
				ss.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			},
			want: []errKey{
				e(field.ErrorTypeInvalid, "spec.updateStrategy.rollingUpdate.partition"),
				e(field.ErrorTypeInvalid, "spec.updateStrategy.rollingUpdate.maxUnavailable"),
			},
		},
		{
			name: "bad retention policy",
			mutate: func(ss *appsv1.StatefulSet) {
				ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Archive"
			},
			want: []errKey{e(field.ErrorTypeNotSupported, "spec.persistentVolumeClaimRetentionPolicy.whenScaled")},
		},
		{
			name:   "claim template without storage request",
			mutate: func(ss *appsv1.StatefulSet) { ss.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = nil },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.volumeClaimTemplates[0].spec.resources[storage]")},
		},
		{
			name:   "negative ordinal start",
			mutate: func(ss *appsv1.StatefulSet) { ss.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: -1} },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.ordinals.start")},
		},
		{
			name:   "service name not a label",
			mutate: func(ss *appsv1.StatefulSet) { ss.Spec.ServiceName = "db.svc" },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.serviceName")},
		},
		{
			name:   "empty selector",
			mutate: func(ss *appsv1.StatefulSet) { ss.Spec.Selector = &metav1.LabelSelector{} },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.selector")},
		},
		{
			name:   "selector mismatch",
			mutate: func(ss *appsv1.StatefulSet) { ss.Spec.Selector.MatchLabels = map[string]string{"app": "db"} },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.template.metadata.labels")},
		},
		{
			name:   "restart policy",
			mutate: func(ss *appsv1.StatefulSet) { ss.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			want:   []errKey{e(field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy")},
		},
		{
			name:   "negative history limit is allowed (upstream only warns)",
			mutate: func(ss *appsv1.StatefulSet) { ss.Spec.RevisionHistoryLimit = ptr.To[int32](-1) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss := validStatefulSet()
			tc.mutate(ss)
			expectErrs(t, ValidateStatefulSet(ss), tc.want...)
		})
	}
}

func TestValidateStatefulSetUpdate(t *testing.T) {
	old := validStatefulSet()
	allowed := old.DeepCopy()
	allowed.Spec.Replicas = ptr.To[int32](3)
	allowed.Spec.Template.Spec.Containers[0].Image = "postgres:17"
	allowed.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	allowed.Spec.MinReadySeconds = 10
	allowed.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	allowed.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 1}
	allowed.Spec.RevisionHistoryLimit = ptr.To[int32](3)
	expectErrs(t, ValidateStatefulSetUpdate(allowed, old))

	forbidden := old.DeepCopy()
	forbidden.Spec.ServiceName = "other"
	forbidden.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	forbidden.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	forbidden.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}
	expectErrs(t, ValidateStatefulSetUpdate(forbidden, old),
		e(field.ErrorTypeInvalid, "spec.serviceName"),
		e(field.ErrorTypeInvalid, "spec.podManagementPolicy"),
		e(field.ErrorTypeInvalid, "spec.volumeClaimTemplates"),
		e(field.ErrorTypeInvalid, "spec.selector"))

	// A stored StatefulSet with an invalid name and service name stays editable.
	legacy := validStatefulSet()
	legacy.Name = "db.primary"
	legacy.Spec.ServiceName = "db.svc"
	bump := legacy.DeepCopy()
	bump.Spec.Replicas = ptr.To[int32](2)
	expectErrs(t, ValidateStatefulSetUpdate(bump, legacy))
}

func TestValidateStatefulSetStatusUpdate(t *testing.T) {
	old := validStatefulSet()
	upd := old.DeepCopy()
	upd.Status = appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 1, CurrentReplicas: 3, AvailableReplicas: 2, ObservedGeneration: -1}
	expectErrs(t, ValidateStatefulSetStatusUpdate(upd, old),
		e(field.ErrorTypeInvalid, "status.currentReplicas"),
		e(field.ErrorTypeInvalid, "status.availableReplicas"),
		e(field.ErrorTypeInvalid, "status.observedGeneration"))
}

func validDaemonSet() *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: meta("agent"),
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: webLabels}, Template: podTemplate()},
	}
	DefaultDaemonSet(ds)
	return ds
}

func TestValidateDaemonSet(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.DaemonSet)
		want   []errKey
	}{
		{name: "valid", mutate: func(*appsv1.DaemonSet) {}},
		{
			name:   "empty selector",
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.selector")},
		},
		{
			name:   "selector mismatch",
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.Selector.MatchLabels = map[string]string{"app": "db"} },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.template.metadata.labels")},
		},
		{
			name: "surge and unavailable both set",
			mutate: func(ds *appsv1.DaemonSet) {
				ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("10%"))
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.updateStrategy.rollingUpdate.maxSurge")},
		},
		{
			name: "surge and unavailable both zero",
			mutate: func(ds *appsv1.DaemonSet) {
				ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			},
			want: []errKey{e(field.ErrorTypeRequired, "spec.updateStrategy.rollingUpdate.maxUnavailable")},
		},
		{
			name: "surge above 100%",
			mutate: func(ds *appsv1.DaemonSet) {
				ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
				ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("101%"))
			},
			want: []errKey{e(field.ErrorTypeInvalid, "spec.updateStrategy.rollingUpdate.maxSurge")},
		},
		{
			name:   "rolling update missing",
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate = nil },
			want:   []errKey{e(field.ErrorTypeRequired, "spec.updateStrategy.rollingUpdate")},
		},
		{
			name:   "unknown strategy",
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Surge" },
			want:   []errKey{e(field.ErrorTypeNotSupported, "spec.updateStrategy")},
		},
		{
			name:   "active deadline",
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) },
			want:   []errKey{e(field.ErrorTypeForbidden, "spec.template.spec.activeDeadlineSeconds")},
		},
		{
			name:   "negative history limit",
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr.To[int32](-2) },
			want:   []errKey{e(field.ErrorTypeInvalid, "spec.revisionHistoryLimit")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := validDaemonSet()
			tc.mutate(ds)
			expectErrs(t, ValidateDaemonSet(ds), tc.want...)
		})
	}
}

func TestValidateDaemonSetUpdateAndStatus(t *testing.T) {
	old := validDaemonSet()
	upd := old.DeepCopy()
	upd.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	upd.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	expectErrs(t, ValidateDaemonSetUpdate(upd, old))

	moved := old.DeepCopy()
	moved.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}
	expectErrs(t, ValidateDaemonSetUpdate(moved, old), e(field.ErrorTypeInvalid, "spec.selector"))

	old.Status.CollisionCount = ptr.To[int32](1)
	st := old.DeepCopy()
	st.Status = appsv1.DaemonSetStatus{NumberReady: -1, NumberUnavailable: 2}
	expectErrs(t, ValidateDaemonSetStatusUpdate(st, old),
		e(field.ErrorTypeInvalid, "status.numberReady"),
		e(field.ErrorTypeInvalid, "status.collisionCount"))
}

func TestValidateControllerRevision(t *testing.T) {
	cr := func(raw string) *appsv1.ControllerRevision {
		c := &appsv1.ControllerRevision{ObjectMeta: meta("web-5d8f"), Revision: 2}
		if raw != "" {
			c.Data.Raw = []byte(raw)
		}
		return c
	}
	expectErrs(t, ValidateControllerRevision(cr(`{"spec":{"template":{}}}`)))
	expectErrs(t, ValidateControllerRevision(cr("")), e(field.ErrorTypeRequired, "data"))
	expectErrs(t, ValidateControllerRevision(cr("null")), e(field.ErrorTypeRequired, "data"))
	expectErrs(t, ValidateControllerRevision(cr("[1,2]")), e(field.ErrorTypeRequired, "data"))
	expectErrs(t, ValidateControllerRevision(cr("{broken")), e(field.ErrorTypeInvalid, "data"))

	typed := cr("")
	typed.Data.Object = &appsv1.StatefulSet{}
	expectErrs(t, ValidateControllerRevision(typed))

	neg := cr(`{}`)
	neg.Revision = -1
	expectErrs(t, ValidateControllerRevision(neg), e(field.ErrorTypeInvalid, "revision"))

	old := cr(`{"a":1}`)
	upd := old.DeepCopy()
	upd.Data.Raw = []byte(`{"a":2}`)
	expectErrs(t, ValidateControllerRevisionUpdate(upd, old), e(field.ErrorTypeInvalid, "data"))
	relabeled := old.DeepCopy()
	relabeled.Labels = map[string]string{"controller-revision-hash": "5d8f"}
	expectErrs(t, ValidateControllerRevisionUpdate(relabeled, old))
}
