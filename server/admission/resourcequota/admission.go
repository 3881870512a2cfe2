package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	quotaplugin "k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	quotaapi "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota/validation"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	apicore "github.com/k1s/k1s/internal/apis/core"
)

// Name is the name of the plugin, as upstream registers it.
const Name = quotaplugin.PluginName

// evaluatorWorkers is how many namespaces the plugin evaluates at once.
const evaluatorWorkers = 5

// NewAdmission returns k8s.io/apiserver's ResourceQuota validating plugin,
// wired without the plugin initializers:
//
//   - client writes quota status.used and lists quotas the informer has
//     not seen yet;
//   - factory provides the ResourceQuota informer (registered here, so the
//     caller must start the factory after NewAdmission);
//   - cfg holds the evaluators, e.g. quota.NewConfiguration(quota.NewRegistry(nil)) of internal/quota;
//   - limits lists resources and scopes that may only be used under a
//     covering quota; nil for none;
//   - drained is closed when the server has stopped serving requests; it
//     stops the plugin's workers.
//
// The plugin charges the usage of each admitted object to the status.used
// of every quota matching it and rejects it as Forbidden ("exceeded
// quota: ...") when that would exceed status.hard. It keeps no readiness of
// its own: until the informer has synced it lists quotas from the API.
func NewAdmission(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg quota.Configuration, limits *quotaapi.Configuration, drained <-chan struct{}) (admission.ValidationInterface, error) {
	if client == nil || factory == nil || cfg == nil || drained == nil {
		return nil, errors.New("resource quota admission needs a client, an informer factory, a quota configuration and a drained channel")
	}
	if limits != nil {
		if errs := validation.ValidateConfiguration(limits); len(errs) > 0 {
			return nil, fmt.Errorf("resource quota admission configuration: %w", errs.ToAggregate())
		}
	}
	plugin, err := quotaplugin.NewResourceQuota(limits, evaluatorWorkers)
	if err != nil {
		return nil, fmt.Errorf("create resource quota admission: %w", err)
	}
	// The order matters: the configuration builds the evaluator, which
	// needs the drained channel.
	plugin.SetDrainedNotification(drained)
	plugin.SetExternalKubeClientSet(client)
	plugin.SetExternalKubeInformerFactory(factory)
	plugin.SetQuotaConfiguration(cfg)
	if err := plugin.ValidateInitialization(); err != nil {
		return nil, fmt.Errorf("initialize resource quota admission: %w", err)
	}
	return &failClosed{ValidationInterface: plugin, quotas: factory.Core().V1().ResourceQuotas().Lister()}, nil
}

// failClosed refuses, as 403 Forbidden naming the quota and its field, an
// object that a quota the plugin cannot evaluate might cover: a quota
// whose scopes or scope selector k1s's validation refuses now (a value
// that is no label value, an unknown operator) but that is stored anyway
// (from before, or written to etcd directly). The plugin
// itself returns a plain error for it, a 500 for every such object in the
// namespace, server-side dry-run included, which names no fault of the
// client's. Objects the quota cannot cover are admitted as before.
type failClosed struct {
	admission.ValidationInterface
	quotas corelisters.ResourceQuotaLister
}

func (f *failClosed) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	err := f.ValidationInterface.Validate(ctx, a, o)
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	quotas, lerr := f.quotas.ResourceQuotas(a.GetNamespace()).List(labels.Everything())
	if lerr != nil {
		return err
	}
	// The quota the plugin's error names ("error matching scopes of
	// quota NAME, ..."), else the first by name.
	slices.SortStableFunc(quotas, func(x, y *corev1.ResourceQuota) int {
		xn, yn := strings.Contains(err.Error(), "quota "+x.Name+","), strings.Contains(err.Error(), "quota "+y.Name+",")
		if xn != yn {
			if xn {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Name, y.Name)
	})
	for _, q := range quotas {
		if errs := apicore.QuotaScopeErrors(q); len(errs) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("resource quota %q cannot be evaluated, fix or delete it: %w", q.Name, errs.ToAggregate()))
		}
	}
	return err
}

// LimitPriorityClasses returns a limitedResources entry under which pods
// may use the named priority classes only in namespaces with a quota
// whose scope selector covers them (the upstream way to keep, e.g.,
// system-node-critical to kube-system: give kube-system such a quota).
func LimitPriorityClasses(classes ...string) quotaapi.LimitedResource {
	return quotaapi.LimitedResource{
		Resource: "pods",
		MatchScopes: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass,
			Operator:  corev1.ScopeSelectorOpIn,
			Values:    append([]string(nil), classes...),
		}},
	}
}
