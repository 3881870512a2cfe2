package apiserver

import (
	"fmt"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/server/metricsapi"
)

// aggregatedMetricsReader is the ClusterRole metrics-server installs:
// reading metrics.k8s.io, aggregated into view, edit and admin.
const aggregatedMetricsReader = "system:aggregated-metrics-reader"

// installMetricsAPI serves metrics.k8s.io/v1beta1 from k1s's built-in
// metrics API (server/metricsapi) on core's non-REST mux: core lists the
// path, so autoregister keeps a local APIService for it, and the group
// goes into aggregated discovery here. A post-start hook keeps the
// aggregated-metrics-reader role and starts scraping the nodes.
func (d *dependencies) installMetricsAPI(core *genericapiserver.GenericAPIServer) error {
	api, err := metricsapi.New(metricsapi.Config{}, d.informers.Core().V1().Nodes().Lister(), d.informers.Core().V1().Pods().Lister())
	if err != nil {
		return err
	}
	core.Handler.NonGoRestfulMux.Handle(metricsapi.Prefix, api)
	core.Handler.NonGoRestfulMux.HandlePrefix(metricsapi.Prefix+"/", api)
	if m := core.AggregatedDiscoveryGroupManager; m != nil {
		var resources []apidiscoveryv2.APIResourceDiscovery
		for _, r := range metricsapi.Resources() {
			scope := apidiscoveryv2.ScopeCluster
			if r.Namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			resources = append(resources, apidiscoveryv2.APIResourceDiscovery{
				Resource:     r.Name,
				ResponseKind: &metav1.GroupVersionKind{Group: metricsapi.GroupVersion.Group, Version: metricsapi.GroupVersion.Version, Kind: r.Kind},
				Scope:        scope,
				Verbs:        r.Verbs,
			})
		}
		m.AddGroupVersion(metricsapi.GroupVersion.Group, apidiscoveryv2.APIVersionDiscovery{
			Version:   metricsapi.GroupVersion.Version,
			Resources: resources,
			Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
		})
	}
	return core.AddPostStartHook("k1s-metrics-api", func(hc genericapiserver.PostStartHookContext) error {
		client, err := kubernetes.NewForConfig(hc.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("metrics API client: %w", err)
		}
		if err := ensureMetricsReader(hc, client); err != nil {
			return err
		}
		go func() {
			ctx := klog.NewContext(hc, klog.FromContext(hc).WithName("metrics-api"))
			_ = api.Run(ctx, client)
		}()
		return nil
	})
}

// ensureMetricsReader creates or updates the aggregated-metrics-reader
// ClusterRole as metrics-server's manifest has it.
func ensureMetricsReader(hc genericapiserver.PostStartHookContext, client kubernetes.Interface) error {
	want := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: aggregatedMetricsReader, Labels: map[string]string{
			"k8s-app": "metrics-server",
			"rbac.authorization.k8s.io/aggregate-to-admin": "true",
			"rbac.authorization.k8s.io/aggregate-to-edit":  "true",
			"rbac.authorization.k8s.io/aggregate-to-view":  "true",
		}},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{metricsapi.GroupVersion.Group},
			Resources: []string{"pods", "nodes"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}
	roles := client.RbacV1().ClusterRoles()
	cur, err := roles.Get(hc, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = roles.Create(hc, want, metav1.CreateOptions{})
	case err == nil:
		cur = cur.DeepCopy()
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		for k, v := range want.Labels {
			cur.Labels[k] = v
		}
		cur.Rules = want.Rules
		_, err = roles.Update(hc, cur, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("keep the %s ClusterRole: %w", aggregatedMetricsReader, err)
	}
	return nil
}
