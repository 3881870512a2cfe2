package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/internal/pki"
)

// The front proxy's headers, as kubeadm and k3s configure them (and as
// kube-aggregator's proxy sends them).
var (
	requestHeaderUsername    = []string{"X-Remote-User"}
	requestHeaderUID         = []string{"X-Remote-Uid"}
	requestHeaderGroup       = []string{"X-Remote-Group"}
	requestHeaderExtraPrefix = []string{"X-Remote-Extra-"}
)

// requestHeaderAuthenticator configures requestheader authentication:
// a request whose TLS client certificate is signed by the request-header
// CA and names pki.AuthProxyUser is the user its X-Remote-* headers name
// (kube-apiserver's --requestheader-* flags). The CA is also offered to
// TLS clients, and the headers are stripped from every request once it is
// authenticated. Nil when no request-header CA is configured.
func (d *dependencies) requestHeaderAuthenticator(gc *genericapiserver.RecommendedConfig) (authenticator.Request, error) {
	if d.cfg.RequestHeaderCAFile == "" {
		return nil, nil
	}
	caPEM, err := os.ReadFile(d.cfg.RequestHeaderCAFile)
	if err != nil {
		return nil, fmt.Errorf("read request-header CA: %w", err)
	}
	ca, err := dynamiccertificates.NewStaticCAContent("request-header-ca", caPEM)
	if err != nil {
		return nil, fmt.Errorf("request-header CA %s: %w", d.cfg.RequestHeaderCAFile, err)
	}
	if err := gc.Authentication.ApplyClientCert(ca, gc.SecureServing); err != nil {
		return nil, fmt.Errorf("request-header CA: %w", err)
	}
	cfg := &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders:     headerrequest.StaticStringSlice(requestHeaderUsername),
		UIDHeaders:          headerrequest.StaticStringSlice(requestHeaderUID),
		GroupHeaders:        headerrequest.StaticStringSlice(requestHeaderGroup),
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice(requestHeaderExtraPrefix),
		CAContentProvider:   ca,
		AllowedClientNames:  headerrequest.StaticStringSlice{pki.AuthProxyUser},
	}
	gc.Authentication.RequestHeaderConfig = cfg
	return headerrequest.NewDynamicVerifyOptionsSecure(ca.VerifyOptions, cfg.AllowedClientNames,
		cfg.UsernameHeaders, cfg.UIDHeaders, cfg.GroupHeaders, cfg.ExtraHeaderPrefixes), nil
}

// Where the apiserver publishes how it authenticates, for aggregated API
// servers (k8s.io/apiserver's delegated authentication reads it).
const (
	authenticationConfigMapNamespace = metav1.NamespaceSystem
	authenticationConfigMapName      = "extension-apiserver-authentication"
)

// authenticationConfigMapData is what kube-apiserver's
// cluster-authentication-trust controller writes: the client CA, and with
// a request-header CA that CA, the allowed proxy names and the header
// names, each list as JSON.
func authenticationConfigMapData(clientCA, requestHeaderCA []byte) (map[string]string, error) {
	data := map[string]string{}
	if len(clientCA) > 0 {
		data["client-ca-file"] = string(clientCA)
	}
	if len(requestHeaderCA) == 0 {
		return data, nil
	}
	for key, list := range map[string][]string{
		"requestheader-username-headers":     requestHeaderUsername,
		"requestheader-uid-headers":          requestHeaderUID,
		"requestheader-group-headers":        requestHeaderGroup,
		"requestheader-extra-headers-prefix": requestHeaderExtraPrefix,
		"requestheader-allowed-names":        {pki.AuthProxyUser},
	} {
		b, err := json.Marshal(list)
		if err != nil {
			return nil, err
		}
		data[key] = string(b)
	}
	data["requestheader-client-ca-file"] = string(requestHeaderCA)
	return data, nil
}

// authenticationInfo keeps kube-system/extension-apiserver-authentication
// saying how this apiserver authenticates. (kube-apiserver merges the CA
// bundles of every apiserver of a cluster into it; k1s has one, and
// writes its own.)
type authenticationInfo struct {
	client kubernetes.Interface
	data   map[string]string
}

func (d *dependencies) newAuthenticationInfo() (*authenticationInfo, error) {
	clientCA, err := os.ReadFile(d.cfg.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("read client CA: %w", err)
	}
	var requestHeaderCA []byte
	if d.cfg.RequestHeaderCAFile != "" {
		if requestHeaderCA, err = os.ReadFile(d.cfg.RequestHeaderCAFile); err != nil {
			return nil, fmt.Errorf("read request-header CA: %w", err)
		}
	}
	data, err := authenticationConfigMapData(clientCA, requestHeaderCA)
	if err != nil {
		return nil, err
	}
	return &authenticationInfo{client: d.client, data: data}, nil
}

// reconcile creates or corrects the config map.
func (a *authenticationInfo) reconcile(ctx context.Context) error {
	api := a.client.CoreV1().ConfigMaps(authenticationConfigMapNamespace)
	cur, err := api.Get(ctx, authenticationConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: authenticationConfigMapNamespace, Name: authenticationConfigMapName}, Data: a.data}
		if _, err = api.Create(ctx, cm, metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("%s/%s: %w", authenticationConfigMapNamespace, authenticationConfigMapName, err)
	}
	if maps.Equal(cur.Data, a.data) {
		return nil
	}
	cur = cur.DeepCopy()
	cur.Data = a.data
	if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("%s/%s: %w", authenticationConfigMapNamespace, authenticationConfigMapName, err)
	}
	return nil
}

// run reconciles every interval until ctx ends (upstream's controller
// re-checks every minute too).
func (a *authenticationInfo) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.reconcile(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to publish the authentication configuration")
		}
	}
}
