package apps

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/k1s/k1s/internal/apis/core"
)

// RegisterDefaults adds a defaulting function for every kind of the group and
// its List to s.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&appsv1.Deployment{}, func(obj interface{}) { DefaultDeployment(obj.(*appsv1.Deployment)) })
	s.AddTypeDefaultingFunc(&appsv1.DeploymentList{}, func(obj interface{}) {
		list := obj.(*appsv1.DeploymentList)
		for i := range list.Items {
			DefaultDeployment(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&appsv1.ReplicaSet{}, func(obj interface{}) { DefaultReplicaSet(obj.(*appsv1.ReplicaSet)) })
	s.AddTypeDefaultingFunc(&appsv1.ReplicaSetList{}, func(obj interface{}) {
		list := obj.(*appsv1.ReplicaSetList)
		for i := range list.Items {
			DefaultReplicaSet(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&appsv1.StatefulSet{}, func(obj interface{}) { DefaultStatefulSet(obj.(*appsv1.StatefulSet)) })
	s.AddTypeDefaultingFunc(&appsv1.StatefulSetList{}, func(obj interface{}) {
		list := obj.(*appsv1.StatefulSetList)
		for i := range list.Items {
			DefaultStatefulSet(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&appsv1.DaemonSet{}, func(obj interface{}) { DefaultDaemonSet(obj.(*appsv1.DaemonSet)) })
	s.AddTypeDefaultingFunc(&appsv1.DaemonSetList{}, func(obj interface{}) {
		list := obj.(*appsv1.DaemonSetList)
		for i := range list.Items {
			DefaultDaemonSet(&list.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&appsv1.ControllerRevision{}, func(obj interface{}) {
		DefaultControllerRevision(obj.(*appsv1.ControllerRevision))
	})
	s.AddTypeDefaultingFunc(&appsv1.ControllerRevisionList{}, func(obj interface{}) {
		list := obj.(*appsv1.ControllerRevisionList)
		for i := range list.Items {
			DefaultControllerRevision(&list.Items[i])
		}
	})
	return nil
}

func int32Ptr(v int32) *int32 { return &v }

func intOrStrPtr(v intstr.IntOrString) *intstr.IntOrString { return &v }

// DefaultDeployment sets replicas 1, a RollingUpdate strategy with maxSurge
// and maxUnavailable of 25%, revisionHistoryLimit 10 and
// progressDeadlineSeconds 600 when unset, then defaults the pod template.
// An explicit Recreate strategy gets no rollingUpdate.
func DefaultDeployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = int32Ptr(1)
	}
	st := &d.Spec.Strategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if st.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = intOrStrPtr(intstr.FromString("25%"))
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = intOrStrPtr(intstr.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = int32Ptr(600)
	}
	core.DefaultPodTemplateSpec(&d.Spec.Template)
}

// DefaultReplicaSet sets replicas 1 when unset, then defaults the pod
// template.
func DefaultReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = int32Ptr(1)
	}
	core.DefaultPodTemplateSpec(&rs.Spec.Template)
}

// DefaultStatefulSet sets podManagementPolicy OrderedReady, a RollingUpdate
// update strategy (partition 0, maxUnavailable 1), a Retain/Retain PVC
// retention policy, replicas 1 and revisionHistoryLimit 10 when unset, then
// defaults the pod template and every volume claim template (volumeMode
// Filesystem, status.phase Pending, as upstream).
//
// As upstream, rollingUpdate is only created when the strategy type itself
// was empty; an explicit RollingUpdate type without rollingUpdate keeps it
// nil.
func DefaultStatefulSet(ss *appsv1.StatefulSet) {
	if ss.Spec.PodManagementPolicy == "" {
		ss.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	us := &ss.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if us.Type == appsv1.RollingUpdateStatefulSetStrategyType && us.RollingUpdate != nil {
		if us.RollingUpdate.Partition == nil {
			us.RollingUpdate.Partition = int32Ptr(0)
		}
		if us.RollingUpdate.MaxUnavailable == nil {
			us.RollingUpdate.MaxUnavailable = intOrStrPtr(intstr.FromInt32(1))
		}
	}
	if ss.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		ss.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	rp := ss.Spec.PersistentVolumeClaimRetentionPolicy
	if rp.WhenDeleted == "" {
		rp.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if rp.WhenScaled == "" {
		rp.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if ss.Spec.Replicas == nil {
		ss.Spec.Replicas = int32Ptr(1)
	}
	if ss.Spec.RevisionHistoryLimit == nil {
		ss.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	core.DefaultPodTemplateSpec(&ss.Spec.Template)
	for i := range ss.Spec.VolumeClaimTemplates {
		core.DefaultPersistentVolumeClaim(&ss.Spec.VolumeClaimTemplates[i])
	}
}

// DefaultDaemonSet sets a RollingUpdate update strategy with maxUnavailable 1
// and maxSurge 0, and revisionHistoryLimit 10, when unset, then defaults the
// pod template.
func DefaultDaemonSet(ds *appsv1.DaemonSet) {
	us := &ds.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if us.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if us.RollingUpdate.MaxUnavailable == nil {
			us.RollingUpdate.MaxUnavailable = intOrStrPtr(intstr.FromInt32(1))
		}
		if us.RollingUpdate.MaxSurge == nil {
			us.RollingUpdate.MaxSurge = intOrStrPtr(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	core.DefaultPodTemplateSpec(&ds.Spec.Template)
}

// DefaultControllerRevision sets defaults on a ControllerRevision. Nothing is
// defaulted; the function exists so that every kind has a defaulter.
func DefaultControllerRevision(cr *appsv1.ControllerRevision) {}
