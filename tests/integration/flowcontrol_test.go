package integration

import (
	"context"
	"io"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/integration/framework"
)

// pfHeaders GETs path with cfg over HTTPS and returns the UIDs of the
// FlowSchema and priority level API Priority and Fairness classified the
// request into.
func pfHeaders(t *testing.T, cfg *rest.Config, url string) (fs, pl types.UID) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return types.UID(resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)),
		types.UID(resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID))
}

// waitClassified waits until a GET of path by cfg is classified into the
// FlowSchema and priority level named.
func waitClassified(t *testing.T, s *framework.Server, cfg *rest.Config, path, schema, level string) {
	t.Helper()
	ctx := context.Background()
	api := s.Client(t).FlowcontrolV1()
	var gotFS, gotPL types.UID
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		fs, err := api.FlowSchemas().Get(ctx, schema, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pl, err := api.PriorityLevelConfigurations().Get(ctx, level, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		gotFS, gotPL = pfHeaders(t, cfg, s.URL()+path)
		return gotFS == fs.UID && gotPL == pl.UID, nil
	})
	if err != nil {
		t.Fatalf("GET %s not classified as %s/%s: headers say flow schema %q, priority level %q", path, schema, level, gotFS, gotPL)
	}
}

// TestFlowControl: the apiserver creates upstream's mandatory and
// suggested APF configuration, classifies requests with it (the response
// headers name the FlowSchema and priority level by UID: system:masters
// exempt, other users global-default, a new FlowSchema as soon as it
// exists), keeps the mandatory objects' specs fixed, and reports a
// FlowSchema's missing priority level in its status.
func TestFlowControl(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	api := s.Client(t).FlowcontrolV1()

	schemas, err := api.FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	levels, err := api.PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, fs := range schemas.Items {
		have["fs/"+fs.Name] = true
	}
	for _, pl := range levels.Items {
		have["pl/"+pl.Name] = true
	}
	for _, want := range []string{
		"fs/exempt", "fs/catch-all", "fs/probes", "fs/system-leader-election", "fs/system-node-high", "fs/system-nodes",
		"fs/kube-controller-manager", "fs/kube-scheduler", "fs/kube-system-service-accounts", "fs/service-accounts", "fs/global-default",
		"pl/exempt", "pl/catch-all", "pl/system", "pl/node-high", "pl/leader-election", "pl/workload-high", "pl/workload-low", "pl/global-default",
	} {
		if !have[want] {
			t.Errorf("missing %s after start (have %v)", want, have)
		}
	}

	waitClassified(t, s, s.RESTConfig(t), "/api/v1/namespaces/default", "exempt", "exempt")
	// The in-process clients' identities land where upstream puts them.
	waitClassified(t, s, s.UserConfig(t, "system:kube-scheduler"), "/api/v1/pods", "kube-scheduler", "workload-high")
	waitClassified(t, s, s.UserConfig(t, "system:kube-controller-manager"), "/apis/apps/v1/deployments", "kube-controller-manager", "workload-high")
	waitClassified(t, s, s.UserConfig(t, "system:kube-controller-manager"), "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", "system-leader-election", "leader-election")
	waitClassified(t, s, s.UserConfig(t, "system:node:n1", "system:nodes"), "/api/v1/nodes/n1", "system-node-high", "node-high")
	waitClassified(t, s, s.UserConfig(t, "system:node:n1", "system:nodes"), "/api/v1/pods", "system-nodes", "system")
	// A user without rights is still classified (then refused).
	waitClassified(t, s, s.UserConfig(t, "alice"), "/api/v1/namespaces/default", "global-default", "global-default")

	// A new priority level and schema for bob take effect.
	if _, err := api.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "bobs-level"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
				Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{},
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pl, err := api.PriorityLevelConfigurations().Get(ctx, "bobs-level", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := pl.Spec.Limited; l == nil || ptr.Deref(l.NominalConcurrencyShares, -1) != 30 || l.LimitResponse.Queuing.Queues != 64 || l.LimitResponse.Queuing.HandSize != 8 {
		t.Errorf("bobs-level not defaulted: %+v", pl.Spec.Limited)
	}
	bob := func(name, level string, precedence int32) *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: flowcontrolv1.FlowSchemaSpec{
				MatchingPrecedence:         precedence,
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "bob"}}},
					NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
					ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
						Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true,
					}},
				}},
			},
		}
	}
	if _, err := api.FlowSchemas().Create(ctx, bob("bob", "bobs-level", 200), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClassified(t, s, s.UserConfig(t, "bob"), "/api/v1/namespaces/default", "bob", "bobs-level")

	// A schema whose level does not exist is marked dangling by the
	// APF controller (through the status subresource).
	if _, err := api.FlowSchemas().Create(ctx, bob("bob-dangling", "no-such-level", 300), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		fs, err := api.FlowSchemas().Get(ctx, "bob-dangling", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status == flowcontrolv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("bob-dangling never marked Dangling: %v", err)
	}

	// The mandatory objects keep their specs; the suggested may change.
	catchAll, err := api.FlowSchemas().Get(ctx, "catch-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	catchAll.Spec.MatchingPrecedence = 9000
	_, err = api.FlowSchemas().Update(ctx, catchAll, metav1.UpdateOptions{})
	requireInvalid(t, err, "spec")
	gd, err := api.FlowSchemas().Get(ctx, "global-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gd.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	gd.Spec.MatchingPrecedence = 9800
	if gd, err = api.FlowSchemas().Update(ctx, gd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	} else if gd.Generation != 2 {
		t.Errorf("global-default generation %d after a spec change, want 2", gd.Generation)
	}

	// A status update changes status alone.
	gd.Labels = map[string]string{"sneaked": "in"}
	gd.Status.Conditions = append(gd.Status.Conditions, flowcontrolv1.FlowSchemaCondition{Type: "Test", Status: flowcontrolv1.ConditionTrue})
	gd, err = api.FlowSchemas().UpdateStatus(ctx, gd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gd.Labels["sneaked"] != "" {
		t.Errorf("a status update changed labels: %v", gd.Labels)
	}

	// Server-side printing.
	table := &metav1.Table{}
	if err := s.Client(t).FlowcontrolV1().RESTClient().Get().Resource("prioritylevelconfigurations").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table); err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != 7 || table.ColumnDefinitions[1].Name != "Type" {
		t.Errorf("priority level columns: %+v", table.ColumnDefinitions)
	}
}
