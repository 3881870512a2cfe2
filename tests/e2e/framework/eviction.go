package framework

import "os"

// The e2e nodes keep their data on the developer's disk, which may well
// be fuller than upstream's default hard eviction thresholds allow
// (imagefs.available<15%): the node would report DiskPressure, refuse
// pods and evict them. Every k1s the tests start inherits this
// environment, so its thresholds only fire on a nearly full disk, unless
// K1S_EVICTION_HARD is set already. TestEviction passes its own
// --eviction-hard, which wins over the environment.
//
// Image GC likewise: over 85 % it would remove the test images imported
// from their tarballs (no registry brings them back) while a test still
// needs them, so it is off (high threshold 100) unless the environment
// says otherwise; TestEviction passes its own thresholds.
func init() {
	if _, ok := os.LookupEnv("K1S_EVICTION_HARD"); !ok {
		os.Setenv("K1S_EVICTION_HARD", "memory.available<100Mi,nodefs.available<1%,nodefs.inodesFree<1%,imagefs.available<1%,imagefs.inodesFree<1%")
	}
	if _, ok := os.LookupEnv("K1S_IMAGE_GC_HIGH_THRESHOLD"); !ok {
		os.Setenv("K1S_IMAGE_GC_HIGH_THRESHOLD", "100")
		os.Setenv("K1S_IMAGE_GC_LOW_THRESHOLD", "99")
	}
}
