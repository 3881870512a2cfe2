// Package warm imports the heavy dependencies so the build cache is warmed.
package warm

import (
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver"
	_ "k8s.io/apiserver/pkg/server"
	_ "k8s.io/apiserver/pkg/registry/generic/registry"
	_ "k8s.io/kubectl/pkg/cmd"
	_ "github.com/urfave/cli/v2"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	_ "k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	_ "k8s.io/kube-openapi/pkg/common"
	_ "gopkg.in/go-jose/go-jose.v2/jwt"
	_ "k8s.io/cluster-bootstrap/token/util"
	_ "k8s.io/utils/clock"
)
