package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// webhookBackoff paces retries of TokenReview and SubjectAccessReview
// calls: five tries over about four seconds.
var webhookBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// delegatingAuth builds the authenticator (client certificates from the
// client CA, then bearer tokens by TokenReview, both cached) and the
// authorizer (SubjectAccessReview, cached) the API uses.
func delegatingAuth(cfg Config, client kubernetes.Interface, clientCA dynamiccertificates.CAContentProvider) (authenticator.Request, authorizer.Authorizer, error) {
	authnConfig := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserverconfig.AnonymousAuthConfig{Enabled: false},
		TokenAccessReviewClient:  client.AuthenticationV1(),
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      &webhookBackoff,
		CacheTTL:                 cfg.AuthenticationCacheTTL,
	}
	if clientCA != nil {
		authnConfig.ClientCertificateCAContentProvider = clientCA
	}
	authn, _, err := authnConfig.New()
	if err != nil {
		return nil, nil, fmt.Errorf("agent API authenticator: %w", err)
	}
	authzConfig := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client.AuthorizationV1(),
		AllowCacheTTL:             cfg.AuthorizationAllowTTL,
		DenyCacheTTL:              cfg.AuthorizationDenyTTL,
		WebhookRetryBackoff:       &webhookBackoff,
	}
	authz, err := authzConfig.New()
	if err != nil {
		return nil, nil, fmt.Errorf("agent API authorizer: %w", err)
	}
	// system:masters is allowed without a SubjectAccessReview: the
	// apiserver allows the group everything anyway, and so an operator's
	// certificate still reaches logs and exec while the node is cut off
	// from its apiservers (edge autonomy). Kubelet asks for every request.
	return authn, privilegedFirst{authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup), authz}, nil
}

// privilegedFirst allows what privileged allows, and asks delegate the
// rest.
type privilegedFirst struct {
	privileged, delegate authorizer.Authorizer
}

func (p privilegedFirst) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if d, reason, _ := p.privileged.Authorize(ctx, a); d == authorizer.DecisionAllow {
		return d, reason, nil
	}
	return p.delegate.Authorize(ctx, a)
}

func (p privilegedFirst) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(p.Authorize(ctx, a))
}

func (p privilegedFirst) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// withAuth authenticates every request and authorizes it against the
// attributes RequestAttributes maps it to.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger := klog.FromContext(r.Context())
		resp, ok, err := s.authn.AuthenticateRequest(r)
		if err != nil {
			logger.V(2).Info("Agent API authentication failed", "err", err, "remote", r.RemoteAddr)
		}
		if err != nil || !ok {
			writeText(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		attrs := RequestAttributes(resp.User, r, s.cfg.NodeName)
		subresources := make([]string, 0, len(attrs))
		for _, a := range attrs {
			subresources = append(subresources, a.GetSubresource())
			decision, _, err := s.authz.Authorize(r.Context(), a)
			if err != nil {
				logger.Error(err, "Agent API authorization failed", "user", a.GetUser().GetName(), "verb", a.GetVerb(), "subresource", a.GetSubresource())
				writeText(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					a.GetUser().GetName(), a.GetVerb(), a.GetResource(), a.GetSubresource()))
				return
			}
			if decision == authorizer.DecisionAllow {
				next.ServeHTTP(w, r)
				return
			}
		}
		a := attrs[0]
		logger.V(2).Info("Agent API request forbidden", "user", a.GetUser().GetName(), "verb", a.GetVerb(), "subresources", subresources, "path", r.URL.Path)
		writeText(w, http.StatusForbidden, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)\n",
			a.GetUser().GetName(), a.GetVerb(), a.GetResource(), subresources))
	})
}

// RequestAttributes maps a request to the authorization checks it needs,
// as the kubelet does: the node object (resource "nodes", the node's name,
// the core group) with a subresource chosen by path, and the verb by HTTP
// method. Allowed when any one check allows. /pods, /runningpods/,
// /healthz and /configz accept their own subresource or "proxy"; /stats,
// /metrics, /logs, /checkpoint, /statusz and /flagz need theirs; every
// other path needs "proxy".
func RequestAttributes(u user.Info, r *http.Request, nodeName string) []authorizer.Attributes {
	var verb string
	switch r.Method {
	case http.MethodGet:
		verb = "get"
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	p := r.URL.Path
	var subresources []string
	switch {
	case underPath(p, podsPath), underPath(p, runningPodsPath):
		subresources = []string{"pods", "proxy"}
	case underPath(p, healthzPath):
		subresources = []string{"healthz", "proxy"}
	case underPath(p, configzPath):
		subresources = []string{"configz", "proxy"}
	case underPath(p, statsPath):
		subresources = []string{"stats"}
	case underPath(p, metricsPath):
		subresources = []string{"metrics"}
	case underPath(p, logsPath):
		subresources = []string{"log"}
	case underPath(p, checkpointPath):
		subresources = []string{"checkpoint"}
	case underPath(p, statuszPath):
		subresources = []string{"statusz"}
	case underPath(p, flagzPath):
		subresources = []string{"configz"}
	default:
		subresources = []string{"proxy"}
	}
	attrs := make([]authorizer.Attributes, 0, len(subresources))
	for _, sub := range subresources {
		attrs = append(attrs, authorizer.AttributesRecord{
			User:            u,
			Verb:            verb,
			APIGroup:        "",
			APIVersion:      "v1",
			Resource:        "nodes",
			Subresource:     sub,
			Name:            nodeName,
			ResourceRequest: true,
			Path:            p,
		})
	}
	return attrs
}

// underPath reports whether p is base or below it; a trailing slash on
// base is ignored.
func underPath(p, base string) bool {
	base = strings.TrimSuffix(base, "/")
	return p == base || (strings.HasPrefix(p, base) && p[len(base)] == '/')
}
