package proxy

import (
	"flag"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain lets K1S_TEST_V=<level> turn on the proxy's logs in tests.
func TestMain(m *testing.M) {
	if v := os.Getenv("K1S_TEST_V"); v != "" {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("v", v)
	}
	os.Exit(m.Run())
}
