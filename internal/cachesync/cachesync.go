// Package cachesync waits for informer caches to sync, sooner than
// client-go's helper notices.
package cachesync

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// syncPollInterval is how often WaitForCacheSync looks; client-go's looks
// every 100 ms.
const syncPollInterval = 10 * time.Millisecond

// WaitForCacheSync is cache.WaitForCacheSync, looking every 10 ms instead
// of every 100 ms, for what lies on the path to a node's first Ready (the
// node-ipam controller, the agent's start). It reports false if ctx ends
// first.
func WaitForCacheSync(ctx context.Context, synced ...cache.InformerSynced) bool {
	err := wait.PollUntilContextCancel(ctx, syncPollInterval, true, func(context.Context) (bool, error) {
		for _, s := range synced {
			if !s() {
				return false, nil
			}
		}
		return true, nil
	})
	return err == nil
}
