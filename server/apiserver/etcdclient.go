package apiserver

import (
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// newEtcdClient connects to the datastore for k1s's own keys (service IP
// and node-port allocations), with the apiserver's etcd credentials.
func newEtcdClient(cfg *Config) (*clientv3.Client, error) {
	tlsInfo := transport.TLSInfo{CertFile: cfg.EtcdCertFile, KeyFile: cfg.EtcdKeyFile, TrustedCAFile: cfg.EtcdCAFile}
	cc := clientv3.Config{Endpoints: cfg.EtcdServers, DialTimeout: 10 * time.Second, Logger: zap.NewNop()}
	if cfg.EtcdCertFile != "" || cfg.EtcdCAFile != "" {
		tlsConfig, err := tlsInfo.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd client TLS: %w", err)
		}
		cc.TLS = tlsConfig
	}
	c, err := clientv3.New(cc)
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return c, nil
}
