package integration

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/tests/integration/framework"
)

func tokenClient(t *testing.T, s *framework.Server, token string) kubernetes.Interface {
	t.Helper()
	cfg := s.Anonymous(t)
	cfg.BearerToken = token
	return kubernetes.NewForConfigOrDie(cfg)
}

func whoami(ctx context.Context, c kubernetes.Interface) (authenticationv1.UserInfo, error) {
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

func TestServiceAccountTokens(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	admin := s.Client(t)
	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	if tr.Status.Token == "" || time.Until(tr.Status.ExpirationTimestamp.Time) < 50*time.Minute {
		t.Fatalf("TokenRequest status: %+v", tr.Status)
	}
	robot := tokenClient(t, s, tr.Status.Token)
	u, err := whoami(ctx, robot)
	if err != nil {
		t.Fatalf("whoami with the token: %v", err)
	}
	if u.Username != "system:serviceaccount:default:robot" || u.UID != string(sa.UID) {
		t.Fatalf("token authenticated as %+v", u)
	}
	// TokenReview agrees.
	review, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
	if err != nil || !review.Status.Authenticated || review.Status.User.Username != u.Username {
		t.Fatalf("TokenReview: %+v %v", review.Status, err)
	}
	// No RBAC rights yet.
	if _, err := robot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("service account without rights: want 403, got %v", err)
	}

	// Deleting the service account invalidates its tokens, once the
	// apiserver's 10 s cache of successful authentications has expired.
	if err := admin.CoreV1().ServiceAccounts("default").Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 25*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := whoami(ctx, robot)
		return apierrors.IsUnauthorized(err), nil
	}); err != nil {
		t.Fatalf("token still accepted after its service account was deleted")
	}
	if _, err := whoami(ctx, tokenClient(t, s, "not-a-token")); !apierrors.IsUnauthorized(err) {
		t.Fatalf("garbage token: want 401, got %v", err)
	}
}

func TestBootstrapTokens(t *testing.T) {
	s := framework.StartAPI(t)
	ctx := context.Background()
	admin := s.Client(t)
	if _, err := admin.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef"},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"token-id": "abcdef", "token-secret": "0123456789abcdef",
			"usage-bootstrap-authentication": "true", "auth-extra-groups": "system:bootstrappers:k1s:default-node-token",
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	joiner := tokenClient(t, s, "abcdef.0123456789abcdef")
	var u authenticationv1.UserInfo
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		u, lastErr = whoami(ctx, joiner)
		return lastErr == nil, nil
	}); err != nil {
		t.Fatalf("bootstrap token not accepted: %v", lastErr)
	}
	if u.Username != "system:bootstrap:abcdef" {
		t.Fatalf("bootstrap token user %q", u.Username)
	}
	groups := map[string]bool{}
	for _, g := range u.Groups {
		groups[g] = true
	}
	if !groups["system:bootstrappers"] || !groups["system:bootstrappers:k1s:default-node-token"] {
		t.Fatalf("bootstrap token groups %v", u.Groups)
	}
	if _, err := whoami(ctx, tokenClient(t, s, "abcdef.ffffffffffffffff")); !apierrors.IsUnauthorized(err) {
		t.Fatalf("wrong bootstrap secret: want 401, got %v", err)
	}
}
