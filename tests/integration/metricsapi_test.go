package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationhelper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/k1s/k1s/tests/integration/framework"
)

// TestMetricsAPI: the built-in metrics.k8s.io/v1beta1 has a local,
// Available APIService with metrics-server's priorities, is in discovery,
// lists (no nodes: empty) and reads (NotFound) through the typed client
// kubectl top uses, and is readable by whoever has view through the
// aggregated-metrics-reader role; --disable=metrics-server takes all of
// it away.
func TestMetricsAPI(t *testing.T) {
	s := framework.Start(t)
	ctx := context.Background()
	agg := aggregatorclient.NewForConfigOrDie(s.RESTConfig(t)).ApiregistrationV1().APIServices()
	var svc *apiregistrationv1.APIService
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		svc, err = agg.Get(ctx, "v1beta1.metrics.k8s.io", metav1.GetOptions{})
		return err == nil && apiregistrationhelper.IsAPIServiceConditionTrue(svc, apiregistrationv1.Available), nil
	})
	if err != nil {
		t.Fatalf("APIService v1beta1.metrics.k8s.io not Available: %+v", svc)
	}
	if svc.Spec.Service != nil || svc.Spec.GroupPriorityMinimum != 100 || svc.Spec.VersionPriority != 100 {
		t.Errorf("APIService spec %+v: want local, priorities 100/100", svc.Spec)
	}

	dc := discovery.NewDiscoveryClientForConfigOrDie(s.RESTConfig(t))
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range lists {
		if l.GroupVersion == "metrics.k8s.io/v1beta1" {
			for _, r := range l.APIResources {
				names = append(names, r.Name+"/"+r.Kind)
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"nodes/NodeMetrics", "pods/PodMetrics"}) {
		t.Errorf("aggregated discovery of metrics.k8s.io/v1beta1: %v", names)
	}

	mc := metricsclient.NewForConfigOrDie(s.RESTConfig(t)).MetricsV1beta1()
	nodes, err := mc.NodeMetricses().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 0 {
		t.Errorf("node metrics without nodes: %v %v", nodes, err)
	}
	if _, err := mc.PodMetricses("default").Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod metrics of a missing pod: %v, want NotFound", err)
	}
	if _, err := mc.NodeMetricses().List(ctx, metav1.ListOptions{FieldSelector: "spec.unschedulable=false"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: %v, want BadRequest", err)
	}

	admin := s.Client(t)
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	viewer := metricsclient.NewForConfigOrDie(s.UserConfig(t, "viewer")).MetricsV1beta1()
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := viewer.PodMetricses("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("a viewer of default cannot list its pod metrics (view aggregates system:aggregated-metrics-reader)")
	}
	if _, err := viewer.PodMetricses("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("pod metrics of another namespace: %v, want Forbidden", err)
	}

	t.Run("--disable=metrics-server", func(t *testing.T) {
		cfg := s.Config
		s.Stop(t)
		cfg.Disable = []string{"metrics-server"}
		s2 := framework.StartWith(t, cfg)
		agg := aggregatorclient.NewForConfigOrDie(s2.RESTConfig(t)).ApiregistrationV1().APIServices()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := agg.Get(ctx, "v1beta1.metrics.k8s.io", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatal("APIService v1beta1.metrics.k8s.io still there with metrics-server disabled")
		}
		mc := metricsclient.NewForConfigOrDie(s2.RESTConfig(t)).MetricsV1beta1()
		if _, err := mc.NodeMetricses().List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("node metrics with metrics-server disabled: %v, want NotFound", err)
		}
	})
}
