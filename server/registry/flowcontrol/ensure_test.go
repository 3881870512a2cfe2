package flowcontrol

import (
	"context"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/kubernetes/fake"
	flowcontrollisters "k8s.io/client-go/listers/flowcontrol/v1"
	"k8s.io/client-go/tools/cache"
)

// cluster is a fake clientset with listers that see what it holds once
// sync is called, as the apiserver's informers would.
type cluster struct {
	client *fake.Clientset
	fs, pl cache.Indexer
}

func newCluster(t *testing.T) *cluster {
	return &cluster{
		client: fake.NewClientset(),
		fs:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		pl:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
}

func (c *cluster) sync(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	fss, err := c.client.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var objs []interface{}
	for i := range fss.Items {
		objs = append(objs, &fss.Items[i])
	}
	if err := c.fs.Replace(objs, ""); err != nil {
		t.Fatal(err)
	}
	pls, err := c.client.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	objs = nil
	for i := range pls.Items {
		objs = append(objs, &pls.Items[i])
	}
	if err := c.pl.Replace(objs, ""); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) ensure(t *testing.T) {
	t.Helper()
	c.sync(t)
	err := Ensure(context.Background(), c.client.FlowcontrolV1(), flowcontrollisters.NewFlowSchemaLister(c.fs), flowcontrollisters.NewPriorityLevelConfigurationLister(c.pl))
	if err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) schema(t *testing.T, name string) *flowcontrolv1.FlowSchema {
	t.Helper()
	fs, err := c.client.FlowcontrolV1().FlowSchemas().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func (c *cluster) level(t *testing.T, name string) *flowcontrolv1.PriorityLevelConfiguration {
	t.Helper()
	pl, err := c.client.FlowcontrolV1().PriorityLevelConfigurations().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func TestEnsureCreatesTheBootstrapConfiguration(t *testing.T) {
	c := newCluster(t)
	c.ensure(t)
	fss, _ := c.client.FlowcontrolV1().FlowSchemas().List(context.Background(), metav1.ListOptions{})
	pls, _ := c.client.FlowcontrolV1().PriorityLevelConfigurations().List(context.Background(), metav1.ListOptions{})
	if got, want := len(fss.Items), len(bootstrap.MandatoryFlowSchemas)+len(bootstrap.SuggestedFlowSchemas); got != want {
		t.Errorf("%d flow schemas, want %d", got, want)
	}
	if got, want := len(pls.Items), len(bootstrap.MandatoryPriorityLevelConfigurations)+len(bootstrap.SuggestedPriorityLevelConfigurations); got != want {
		t.Errorf("%d priority levels, want %d", got, want)
	}
	for _, name := range []string{"exempt", "catch-all", "system", "node-high", "leader-election", "workload-high", "workload-low", "global-default"} {
		if pl := c.level(t, name); pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("level %s: annotations %v", name, pl.Annotations)
		}
	}
	// A second pass over an unchanged cluster writes nothing.
	before := len(c.client.Actions())
	c.ensure(t)
	for _, a := range c.client.Actions()[before:] {
		if a.GetVerb() != "list" {
			t.Errorf("second pass: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestEnsureRespectsOperators(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	c.ensure(t)
	api := c.client.FlowcontrolV1()

	// An operator took global-default over explicitly.
	gd := c.schema(t, "global-default")
	gd.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	gd.Spec.MatchingPrecedence = 9800
	// An operator changed workload-low without the annotation: the spec
	// is theirs (generation > 1) and the annotation comes to say so.
	wl := c.level(t, "workload-low")
	delete(wl.Annotations, flowcontrolv1.AutoUpdateAnnotationKey)
	wl.Generation = 2
	wl.Spec.Limited.NominalConcurrencyShares = new(int32)
	// system differs but is still generation 1: restored.
	sys := c.level(t, "system")
	delete(sys.Annotations, flowcontrolv1.AutoUpdateAnnotationKey)
	sys.Generation = 1
	*sys.Spec.Limited.NominalConcurrencyShares = 99
	// A mandatory object is always restored, whatever it says.
	ca := c.schema(t, "catch-all")
	ca.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	ca.Spec.MatchingPrecedence = 9999
	// exempt's spec.exempt is the operator's.
	ex := c.level(t, "exempt")
	*ex.Spec.Exempt.LendablePercent = 40
	for _, fs := range []*flowcontrolv1.FlowSchema{gd, ca} {
		if _, err := api.FlowSchemas().Update(ctx, fs, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pl := range []*flowcontrolv1.PriorityLevelConfiguration{wl, sys, ex} {
		if _, err := api.PriorityLevelConfigurations().Update(ctx, pl, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Left from an older version, and the operator's own.
	for name, ann := range map[string]map[string]string{
		"retired": {flowcontrolv1.AutoUpdateAnnotationKey: "true"},
		"mine":    nil,
	} {
		fs := bootstrap.SuggestedFlowSchemaGlobalDefault.DeepCopy()
		fs.Name, fs.Annotations = name, ann
		if _, err := api.FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	c.ensure(t)

	if got := c.schema(t, "global-default"); got.Spec.MatchingPrecedence != 9800 {
		t.Errorf("global-default taken over: precedence %d, want 9800", got.Spec.MatchingPrecedence)
	}
	got := c.level(t, "workload-low")
	if *got.Spec.Limited.NominalConcurrencyShares != 0 || got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "false" {
		t.Errorf("workload-low: shares %d, annotations %v", *got.Spec.Limited.NominalConcurrencyShares, got.Annotations)
	}
	got = c.level(t, "system")
	if *got.Spec.Limited.NominalConcurrencyShares != 30 || got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("system: shares %d, annotations %v", *got.Spec.Limited.NominalConcurrencyShares, got.Annotations)
	}
	if got := c.schema(t, "catch-all"); got.Spec.MatchingPrecedence != 10000 || got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("catch-all: precedence %d, annotations %v", got.Spec.MatchingPrecedence, got.Annotations)
	}
	if got := c.level(t, "exempt"); *got.Spec.Exempt.LendablePercent != 40 {
		t.Errorf("exempt: lendablePercent %d, want the operator's 40", *got.Spec.Exempt.LendablePercent)
	}
	if _, err := api.FlowSchemas().Get(ctx, "retired", metav1.GetOptions{}); err == nil {
		t.Error("retired flow schema not deleted")
	}
	c.schema(t, "mine")
}
