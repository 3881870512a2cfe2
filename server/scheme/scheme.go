// Package scheme holds the runtime.Scheme of the k1s apiserver.
//
// k1s has no internal API types: every served kind is registered twice, under
// its real version (e.g. v1) and under the group's internal version, with the
// same k8s.io/api Go type. The generic apiserver converts requests "to
// internal" and responses "to v1"; with one Go type on both sides those
// conversions only set the kind, so strategies, validation and admission all
// work on the k8s.io/api types directly.
package scheme

import (
	"reflect"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/k1s/k1s/internal/apis/admissionregistration"
	"github.com/k1s/k1s/internal/apis/apps"
	"github.com/k1s/k1s/internal/apis/autoscaling"
	"github.com/k1s/k1s/internal/apis/batch"
	"github.com/k1s/k1s/internal/apis/certificates"
	"github.com/k1s/k1s/internal/apis/coordination"
	"github.com/k1s/k1s/internal/apis/core"
	"github.com/k1s/k1s/internal/apis/discovery"
	"github.com/k1s/k1s/internal/apis/events"
	"github.com/k1s/k1s/internal/apis/flowcontrol"
	"github.com/k1s/k1s/internal/apis/networking"
	"github.com/k1s/k1s/internal/apis/policy"
	"github.com/k1s/k1s/internal/apis/rbac"
	resourceapi "github.com/k1s/k1s/internal/apis/resource"
	"github.com/k1s/k1s/internal/apis/scheduling"
	"github.com/k1s/k1s/internal/apis/storage"
)

var (
	// Scheme knows every kind the apiserver serves.
	Scheme = runtime.NewScheme()
	// Codecs encodes and decodes with Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec decodes query parameters into option structs.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

// GroupVersions are the versions served, in priority order per group (the
// first of a group is its preferred and storage version).
var GroupVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion,
	appsv1.SchemeGroupVersion,
	batchv1.SchemeGroupVersion,
	autoscalingv2.SchemeGroupVersion,
	autoscalingv1.SchemeGroupVersion,
	coordinationv1.SchemeGroupVersion,
	discoveryv1.SchemeGroupVersion,
	eventsv1.SchemeGroupVersion,
	rbacv1.SchemeGroupVersion,
	storagev1.SchemeGroupVersion,
	networkingv1.SchemeGroupVersion,
	policyv1.SchemeGroupVersion,
	schedulingv1.SchemeGroupVersion,
	certificatesv1.SchemeGroupVersion,
	authenticationv1.SchemeGroupVersion,
	authorizationv1.SchemeGroupVersion,
	admissionregistrationv1.SchemeGroupVersion,
	flowcontrolv1.SchemeGroupVersion,
	nodev1.SchemeGroupVersion,
	resourcev1.SchemeGroupVersion,
	storagemigrationv1.SchemeGroupVersion,
}

var addToScheme = []func(*runtime.Scheme) error{
	corev1.AddToScheme,
	appsv1.AddToScheme,
	batchv1.AddToScheme,
	autoscalingv2.AddToScheme,
	autoscalingv1.AddToScheme,
	coordinationv1.AddToScheme,
	discoveryv1.AddToScheme,
	eventsv1.AddToScheme,
	rbacv1.AddToScheme,
	storagev1.AddToScheme,
	networkingv1.AddToScheme,
	policyv1.AddToScheme,
	schedulingv1.AddToScheme,
	certificatesv1.AddToScheme,
	authenticationv1.AddToScheme,
	authorizationv1.AddToScheme,
	admissionregistrationv1.AddToScheme,
	flowcontrolv1.AddToScheme,
	nodev1.AddToScheme,
	resourcev1.AddToScheme,
	storagemigrationv1.AddToScheme,
}

// registerDefaults are the defaulting functions of each served group.
var registerDefaults = []func(*runtime.Scheme) error{
	core.RegisterDefaults,
	admissionregistration.RegisterDefaults,
	apps.RegisterDefaults,
	batch.RegisterDefaults,
	autoscaling.RegisterDefaults,
	coordination.RegisterDefaults,
	discovery.RegisterDefaults,
	events.RegisterDefaults,
	rbac.RegisterDefaults,
	storage.RegisterDefaults,
	networking.RegisterDefaults,
	policy.RegisterDefaults,
	scheduling.RegisterDefaults,
	certificates.RegisterDefaults,
	flowcontrol.RegisterDefaults,
	resourceapi.RegisterDefaults,
}

// kinds registered by metav1.AddToGroupVersion that have their own internal forms.
var metaKinds = map[string]bool{
	"WatchEvent": true, "ListOptions": true, "GetOptions": true, "DeleteOptions": true,
	"CreateOptions": true, "UpdateOptions": true, "PatchOptions": true,
}

func init() {
	utilruntime.Must(AddToScheme(Scheme))
}

// AddToScheme registers every served kind under its version and the
// group's internal version, plus the meta types the generic server needs.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range addToScheme {
		if err := add(s); err != nil {
			return err
		}
	}
	versions := map[string][]schema.GroupVersion{}
	var groups []string
	for _, gv := range GroupVersions {
		internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
		for kind, t := range s.KnownTypes(gv) {
			// A kind served in two versions (HorizontalPodAutoscaler) is
			// internally its preferred version's type; the other version
			// converts (see autoscaling.go).
			if metaKinds[kind] || s.Recognizes(internal.WithKind(kind)) {
				continue
			}
			obj, ok := reflect.New(t).Interface().(runtime.Object)
			if !ok {
				continue
			}
			s.AddKnownTypeWithName(internal.WithKind(kind), obj)
		}
		if _, ok := versions[gv.Group]; !ok {
			groups = append(groups, gv.Group)
		}
		versions[gv.Group] = append(versions[gv.Group], gv)
	}
	for _, g := range groups {
		if err := s.SetVersionPriority(versions[g]...); err != nil {
			return err
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Group: "", Version: "v1"},
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
	for _, reg := range registerDefaults {
		if err := reg(s); err != nil {
			return err
		}
	}
	if err := addEventConversions(s); err != nil {
		return err
	}
	if err := addAutoscalingConversions(s); err != nil {
		return err
	}
	if err := addQueryConversions(s); err != nil {
		return err
	}
	return addFieldLabelConversions(s)
}
