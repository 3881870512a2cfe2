package apiserver

import (
	"crypto"
	"fmt"
	"os"
	"time"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	requestunion "k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/path"
	authzunion "k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/internal/tunnel"
	"github.com/k1s/k1s/server/auth/node"
	"github.com/k1s/k1s/server/auth/rbac"
	sa "github.com/k1s/k1s/server/auth/serviceaccount"
	"github.com/k1s/k1s/server/registry/core/service"
)

// publicPaths answer anonymous requests; every other anonymous request is 401.
var publicPaths = []string{"/healthz", "/livez", "/readyz", "/version", "/version/", CACertsPath}

// CACertsPath serves the bundle of the CA that signed the apiserver's
// serving certificate, to anyone: a joining agent fetches it without
// trust and checks it against the hash in its join token (k3s's /cacerts).
const CACertsPath = "/cacerts"

// dependencies are the handles shared by the parts of the server.
type dependencies struct {
	cfg       *Config
	client    kubernetes.Interface
	informers informers.SharedInformerFactory
	// ready is closed once the server has started (Server.Ready).
	ready <-chan struct{}
	// openAPIRead is closed once the admission plugins' first, held read
	// of the OpenAPI v3 index is over (Server.Settled).
	openAPIRead chan<- struct{}

	logger klog.Logger
	// serviceAllocators hand out cluster IPs and node ports.
	serviceAllocators *service.Allocators

	saKey               crypto.Signer
	saGetter            sa.ServiceAccountTokenGetter
	tokenAuthenticators []authenticator.Token
	// requestAuthenticator authenticates credentials (no anonymous): TokenReview uses it.
	requestAuthenticator authenticator.Request
	authorizer           authorizer.Authorizer
	ruleResolver         authorizer.RuleResolver
	rbac                 *rbac.Authorizer
	nodeAuthz            *node.Authorizer
	// apiServices is done once the built-in APIServices are Available
	// (the aggregator's autoregistration); ready waits for it.
	apiServices *apiServiceWaiter
	// tunnels are the nodes' tunnels to the server (internal/tunnel).
	tunnels *tunnel.Registry
	// endpointLeases are the apiservers' leases behind the kubernetes
	// service's endpoints.
	endpointLeases endpointLeases
}

// tokenCacheSuccessTTL is how long a successful token authentication is
// reused (kube-apiserver's default).
const tokenCacheSuccessTTL = 10 * time.Second

// applyAuth configures authentication (client certificates, bearer tokens,
// anonymous access to the public health and version paths) and authorization
// (public paths, system:masters, the node authorizer and RBAC).
func (d *dependencies) applyAuth(gc *genericapiserver.RecommendedConfig) error {
	caPEM, err := os.ReadFile(d.cfg.ClientCAFile)
	if err != nil {
		return fmt.Errorf("read client CA: %w", err)
	}
	ca, err := dynamiccertificates.NewStaticCAContent("client-ca", caPEM)
	if err != nil {
		return fmt.Errorf("client CA %s: %w", d.cfg.ClientCAFile, err)
	}
	if err := gc.Authentication.ApplyClientCert(ca, gc.SecureServing); err != nil {
		return fmt.Errorf("client CA: %w", err)
	}
	gc.Authentication.APIAudiences = d.cfg.APIAudiences

	if err := d.buildTokenAuthenticators(); err != nil {
		return err
	}
	reqAuth := []authenticator.Request{x509request.NewDynamic(ca.VerifyOptions, x509request.CommonNameUserConversion)}
	// A front proxy's requests first, as kube-apiserver orders them.
	if rh, err := d.requestHeaderAuthenticator(gc); err != nil {
		return err
	} else if rh != nil {
		reqAuth = append([]authenticator.Request{rh}, reqAuth...)
	}
	if len(d.tokenAuthenticators) > 0 {
		// Successful token authentications are cached for 10 s and
		// failures not at all, as kube-apiserver does: a JWT signature
		// check per request costs more than a small request itself.
		tokens := tokencache.New(tokenunion.New(d.tokenAuthenticators...), true, tokenCacheSuccessTTL, 0)
		reqAuth = append(reqAuth, bearertoken.New(tokens), websocket.NewProtocolAuthenticator(tokens))
	}
	var anonConditions []apiserver.AnonymousAuthCondition
	for _, p := range publicPaths {
		anonConditions = append(anonConditions, apiserver.AnonymousAuthCondition{Path: p})
	}
	d.requestAuthenticator = group.NewAuthenticatedGroupAdder(requestunion.New(reqAuth...))
	gc.Authentication.Authenticator = requestunion.NewFailOnError(
		d.requestAuthenticator,
		anonymous.NewAuthenticator(anonConditions),
	)

	public, err := path.NewAuthorizer(publicPaths)
	if err != nil {
		return err
	}
	authorizers := []authzunion.NamedAuthorizer{
		{AuthorizerName: "public-paths", Authorizer: public},
		{AuthorizerName: "system-masters", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)},
	}
	extra, resolvers, err := d.buildAuthorizers()
	if err != nil {
		return err
	}
	authorizers = append(authorizers, extra...)
	if d.authorizer, err = authzunion.New(authorizers...); err != nil {
		return fmt.Errorf("authorizer: %w", err)
	}
	d.ruleResolver = authzunion.NewRuleResolvers(resolvers...)
	gc.Authorization.Authorizer = d.authorizer
	genericapiserver.AuthorizeClientBearerToken(gc.LoopbackClientConfig, &gc.Authentication, &gc.Authorization)
	return nil
}
