package apiserver

import (
	"context"
	"fmt"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/server/registry"
	apfregistry "github.com/k1s/k1s/server/registry/flowcontrol"
)

// flowcontrolResources are flowcontrol.apiserver.k8s.io/v1's FlowSchemas
// and PriorityLevelConfigurations, the configuration of API Priority and
// Fairness.
func flowcontrolResources() []*registry.Resource {
	gv := flowcontrolv1.SchemeGroupVersion
	fs := res(gv, "flowschemas", "FlowSchema", false, func() runtime.Object { return &flowcontrolv1.FlowSchema{} }, func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} })
	fs.Status = true
	fs.PrepareForStatusUpdate = keepMetadata
	pl := res(gv, "prioritylevelconfigurations", "PriorityLevelConfiguration", false, func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} }, func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} })
	pl.Status = true
	pl.PrepareForStatusUpdate = keepMetadata
	return []*registry.Resource{fs, pl}
}

// keepMetadata: a status update of a flowcontrol object changes status
// alone, not labels or annotations (upstream's status strategies keep
// the old metadata but for managedFields).
func keepMetadata(_ context.Context, obj, old runtime.Object) {
	switch o := obj.(type) {
	case *flowcontrolv1.FlowSchema:
		managed := o.ManagedFields
		o.ObjectMeta = *old.(*flowcontrolv1.FlowSchema).ObjectMeta.DeepCopy()
		o.ManagedFields = managed
	case *flowcontrolv1.PriorityLevelConfiguration:
		managed := o.ManagedFields
		o.ObjectMeta = *old.(*flowcontrolv1.PriorityLevelConfiguration).ObjectMeta.DeepCopy()
		o.ManagedFields = managed
	}
}

// applyFlowControl puts API Priority and Fairness in the handler chain in
// place of the max-in-flight filter, as kube-apiserver does: requests are
// classified by the FlowSchemas into priority levels that share the
// server's concurrency (--max-requests-inflight plus
// --max-mutating-requests-inflight, 600) and queue fairly within them.
// Responses carry the X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID headers. The configuration is read
// from the apiserver's shared informers.
//
// The in-process clients are classified as their identities are
// upstream: the apiserver's own loopback clients (system:masters) are
// exempt, the controllers (kube-system service accounts and
// system:kube-controller-manager) and the scheduler run at workload-high,
// their leader election at leader-election, the node agent at node-high
// (its Node and Lease) and system.
func (d *dependencies) applyFlowControl(gc *genericapiserver.RecommendedConfig) {
	gc.FlowControl = utilflowcontrol.New(d.informers, d.client.FlowcontrolV1(), gc.MaxRequestsInFlight+gc.MaxMutatingRequestsInFlight)
}

// apfEnsureInterval is how often the APF bootstrap configuration is
// re-asserted after start (upstream's).
const apfEnsureInterval = time.Minute

// ensureFlowControlConfiguration creates or corrects the mandatory and
// suggested FlowSchemas and PriorityLevelConfigurations once the informers
// have them, retrying each second for up to a minute, then goes on doing
// so every minute in the background until ctx ends.
func (d *dependencies) ensureFlowControlConfiguration(ctx context.Context) error {
	fc := d.informers.Flowcontrol().V1()
	schemas, levels := fc.FlowSchemas(), fc.PriorityLevelConfigurations()
	if !cache.WaitForCacheSync(ctx.Done(), schemas.Informer().HasSynced, levels.Informer().HasSynced) {
		return fmt.Errorf("APF configuration: informers did not sync: %w", context.Cause(ctx))
	}
	ensure := func(ctx context.Context) error {
		return apfregistry.Ensure(ctx, d.client.FlowcontrolV1(), schemas.Lister(), levels.Lister())
	}
	logger := klog.FromContext(ctx)
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		if last = ensure(ctx); last != nil {
			logger.V(2).Info("APF configuration not ensured yet; retrying", "err", last)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("APF configuration: %w (last error: %v)", err, last)
	}
	go func() {
		t := time.NewTicker(apfEnsureInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := ensure(ctx); err != nil {
				logger.Error(err, "Failed to ensure the APF configuration; retrying in a minute")
			}
		}
	}()
	return nil
}
