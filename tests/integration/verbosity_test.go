package integration

import (
	"flag"
	"os"

	"k8s.io/klog/v2"
)

// init lets K1S_TEST_V=<level> turn on the in-process servers' logs.
func init() {
	if v := os.Getenv("K1S_TEST_V"); v != "" {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("v", v)
	}
}
