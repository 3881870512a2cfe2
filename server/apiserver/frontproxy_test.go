package apiserver

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestAuthenticationConfigMap(t *testing.T) {
	data, err := authenticationConfigMapData([]byte("CLIENT CA\n"), []byte("PROXY CA\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"client-ca-file":                     "CLIENT CA\n",
		"requestheader-client-ca-file":       "PROXY CA\n",
		"requestheader-allowed-names":        `["system:auth-proxy"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-uid-headers":          `["X-Remote-Uid"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("%s = %q, want %q", k, data[k], v)
		}
	}
	if len(data) != len(want) {
		t.Errorf("data has %d keys, want %d", len(data), len(want))
	}
	// Without a request-header CA only the client CA is published.
	if data, _ := authenticationConfigMapData([]byte("CLIENT CA\n"), nil); len(data) != 1 {
		t.Errorf("no request-header CA: %v", data)
	}

	// Created when missing, corrected when changed, left alone otherwise.
	ctx := context.Background()
	client := fake.NewClientset()
	info := &authenticationInfo{client: client, data: data}
	if err := info.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	api := client.CoreV1().ConfigMaps("kube-system")
	cm, err := api.Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["client-ca-file"] = "SOMEONE ELSE'S"
	if _, err := api.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := info.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if cm, _ = api.Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{}); cm.Data["client-ca-file"] != want["client-ca-file"] {
		t.Errorf("not corrected: %q", cm.Data["client-ca-file"])
	}
	before := len(client.Actions())
	if err := info.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions()[before:] {
		if a.GetVerb() != "get" {
			t.Errorf("reconcile of an unchanged config map: %s", a.GetVerb())
		}
	}
}
