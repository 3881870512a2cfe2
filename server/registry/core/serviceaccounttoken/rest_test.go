package serviceaccounttoken

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/k1s/k1s/server/auth/serviceaccount"
	satesting "github.com/k1s/k1s/server/auth/serviceaccount/testing"
)

const (
	issuer = "https://kubernetes.default.svc.cluster.local"
	apiAud = "https://kubernetes.default.svc.cluster.local"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func sa() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "builder", UID: "sa-uid"}}
}

func pod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "web-0", UID: "pod-uid"},
		Spec:       corev1.PodSpec{ServiceAccountName: "builder", NodeName: "node-a"},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func node() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
}

func secret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "s1", UID: "secret-uid"}}
}

func ref(apiVersion, kind, name, uid string) *authenticationv1.BoundObjectReference {
	return &authenticationv1.BoundObjectReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid)}
}

func payload(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func signingKey(t *testing.T) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// recorder collects warnings added during a request.
type recorder struct{ warnings []string }

func (r *recorder) AddWarning(_, text string) { r.warnings = append(r.warnings, text) }

func TestCreate(t *testing.T) {
	day := int64(24 * 3600)
	tests := []struct {
		name    string
		cfg     Config
		objects []any
		saName  string // default "builder"
		reqNS   string // default "ns1"
		req     authenticationv1.TokenRequest

		wantErr     func(error) bool
		wantFields  []string
		wantExpSecs int64          // status lifetime
		wantJWTLife int64          // exp - iat in the token; default wantExpSecs
		wantAud     []string       // default {apiAud}
		wantK8s     map[string]any // expected kubernetes.io claim subset
		wantWarn    string
		wantExtra   map[string][]string // user extra after authenticating
		noAuth      bool                // do not try to authenticate (token audiences not the API's)
	}{
		{
			name:        "defaults",
			req:         authenticationv1.TokenRequest{},
			wantExpSecs: 3600,
			wantK8s: map[string]any{
				"namespace":      "ns1",
				"serviceaccount": map[string]any{"name": "builder", "uid": "sa-uid"},
			},
		},
		{
			name:        "explicit audiences and expiration",
			req:         authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: ptr.To(day)}},
			wantExpSecs: day,
			wantAud:     []string{"vault"},
			noAuth:      true,
		},
		{
			name:        "max expiration shortens with a warning",
			cfg:         Config{MaxExpiration: 2 * time.Hour},
			req:         authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(day)}},
			wantExpSecs: 7200,
			wantWarn:    "requested expiration of 86400 seconds shortened to 7200 seconds",
		},
		{
			name:       "too short",
			req:        authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(599))}},
			wantFields: []string{"spec.expirationSeconds"},
		},
		{
			name:       "too long",
			req:        authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(1<<32 + 1))}},
			wantFields: []string{"spec.expirationSeconds"},
		},
		{
			name: "attestations without webhook binding",
			req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				Attestations: map[string]authenticationv1.AttestationValue{"admissionReviewAPIGroups": {"*"}},
			}},
			wantFields: []string{"spec.attestations"},
		},
		{
			name:       "bound object without name",
			req:        authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Pod", "", "")}},
			wantFields: []string{"spec.boundObjectRef.name"},
		},
		{
			name:       "body name differs from URL",
			req:        authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
			wantFields: []string{"metadata.name"},
		},
		{
			name:       "body namespace differs from URL",
			req:        authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns2"}},
			wantFields: []string{"metadata.namespace"},
		},
		{name: "service account missing", saName: "ghost", wantErr: apierrors.IsNotFound},
		{name: "no namespace", reqNS: "-", wantErr: apierrors.IsBadRequest},
		{
			name:    "request UID differs from service account",
			req:     authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "old-sa-uid"}},
			wantErr: apierrors.IsConflict,
		},
		{
			name:        "pod bound",
			req:         authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Pod", "web-0", "pod-uid")}},
			wantExpSecs: 3600,
			wantK8s: map[string]any{
				"pod":  map[string]any{"name": "web-0", "uid": "pod-uid"},
				"node": map[string]any{"name": "node-a", "uid": "node-uid"},
			},
			wantExtra: map[string][]string{
				"authentication.kubernetes.io/pod-name":  {"web-0"},
				"authentication.kubernetes.io/pod-uid":   {"pod-uid"},
				"authentication.kubernetes.io/node-name": {"node-a"},
				"authentication.kubernetes.io/node-uid":  {"node-uid"},
			},
		},
		{
			name:        "pod bound, node object missing",
			objects:     []any{sa(), pod()},
			req:         authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Pod", "web-0", "")}},
			wantExpSecs: 3600,
			wantK8s:     map[string]any{"node": map[string]any{"name": "node-a"}},
			wantExtra:   map[string][]string{"authentication.kubernetes.io/node-name": {"node-a"}},
		},
		{
			name:        "pod bound, unscheduled pod",
			objects:     []any{sa(), pod(func(p *corev1.Pod) { p.Spec.NodeName = "" })},
			req:         authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Pod", "web-0", "")}},
			wantExpSecs: 3600,
			wantK8s:     map[string]any{"pod": map[string]any{"name": "web-0", "uid": "pod-uid"}},
		},
		{
			name:    "pod runs as another service account",
			objects: []any{sa(), pod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" })},
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Pod", "web-0", "")}},
			wantErr: apierrors.IsBadRequest,
		},
		{
			name:    "pod in another namespace",
			objects: []any{sa(), pod(func(p *corev1.Pod) { p.Namespace = "ns2" })},
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Pod", "web-0", "")}},
			wantErr: apierrors.IsNotFound,
		},
		{
			name:    "pod UID mismatch",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Pod", "web-0", "stale")}},
			wantErr: apierrors.IsConflict,
		},
		{
			name:        "secret bound",
			req:         authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Secret", "s1", "secret-uid")}},
			wantExpSecs: 3600,
			wantK8s:     map[string]any{"secret": map[string]any{"name": "s1", "uid": "secret-uid"}},
		},
		{
			name:    "secret missing",
			objects: []any{sa()},
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Secret", "s1", "")}},
			wantErr: apierrors.IsNotFound,
		},
		{
			name:        "node bound",
			req:         authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Node", "node-a", "")}},
			wantExpSecs: 3600,
			wantK8s:     map[string]any{"node": map[string]any{"name": "node-a", "uid": "node-uid"}},
			wantExtra:   map[string][]string{"authentication.kubernetes.io/node-name": {"node-a"}},
		},
		{
			name:    "node UID mismatch",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "Node", "node-a", "x")}},
			wantErr: apierrors.IsConflict,
		},
		{
			name:    "unsupported kind",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("v1", "ConfigMap", "cm", "")}},
			wantErr: apierrors.IsBadRequest,
		},
		{
			name:    "pod kind in another group",
			req:     authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("example.com/v1", "Pod", "web-0", "")}},
			wantErr: apierrors.IsBadRequest,
		},
		{
			name: "extended expiration for projected volume tokens",
			req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: ptr.To(int64(3607)), BoundObjectRef: ref("v1", "Pod", "web-0", ""),
			}},
			wantExpSecs: 3607,
			wantJWTLife: 365 * day,
			wantK8s:     map[string]any{"warnafter": float64(now.Unix() + 3607)},
		},
		{
			name: "no extension when disabled",
			cfg:  Config{DisableExtendedExpiration: true},
			req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: ptr.To(int64(3607)), BoundObjectRef: ref("v1", "Pod", "web-0", ""),
			}},
			wantExpSecs: 3607,
		},
		{
			name: "no extension for foreign audiences",
			req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				Audiences: []string{"vault"}, ExpirationSeconds: ptr.To(int64(3607)), BoundObjectRef: ref("v1", "Pod", "web-0", ""),
			}},
			wantExpSecs: 3607,
			wantAud:     []string{"vault"},
			noAuth:      true,
		},
		{
			name:        "no extension without a pod",
			req:         authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3607))}},
			wantExpSecs: 3607,
		},
	}
	key := signingKey(t)
	gen, err := serviceaccount.NewTokenGenerator(issuer, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := tc.objects
			if objs == nil {
				objs = []any{sa(), pod(), node(), secret()}
			}
			getter := satesting.NewGetter(objs...)
			cfg := tc.cfg
			cfg.APIAudiences = []string{apiAud}
			clk := clocktesting.NewFakePassiveClock(now)
			r, err := NewREST(gen, getter, cfg, clk)
			if err != nil {
				t.Fatal(err)
			}
			saName := tc.saName
			if saName == "" {
				saName = "builder"
			}
			ctx := context.Background()
			switch tc.reqNS {
			case "":
				ctx = genericapirequest.WithNamespace(ctx, "ns1")
			case "-":
			default:
				ctx = genericapirequest.WithNamespace(ctx, tc.reqNS)
			}
			rec := &recorder{}
			ctx = warning.WithWarningRecorder(ctx, rec)

			req := tc.req.DeepCopy()
			out, err := r.Create(ctx, saName, req, nil, &metav1.CreateOptions{})
			switch {
			case tc.wantFields != nil:
				var se *apierrors.StatusError
				if !apierrors.IsInvalid(err) || !errors.As(err, &se) {
					t.Fatalf("err = %v, want Invalid", err)
				}
				var got []string
				for _, c := range se.ErrStatus.Details.Causes {
					got = append(got, c.Field)
				}
				if !reflect.DeepEqual(got, tc.wantFields) {
					t.Fatalf("invalid fields = %v, want %v", got, tc.wantFields)
				}
				return
			case tc.wantErr != nil:
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("err = %v, not the expected kind", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}

			tr := out.(*authenticationv1.TokenRequest)
			if tr.Name != "builder" || tr.Namespace != "ns1" || tr.UID != "sa-uid" || !tr.CreationTimestamp.Time.Equal(now) {
				t.Errorf("metadata = %+v", tr.ObjectMeta)
			}
			if got := *tr.Spec.ExpirationSeconds; got != tc.wantExpSecs {
				t.Errorf("spec.expirationSeconds = %d, want %d", got, tc.wantExpSecs)
			}
			if want := now.Add(time.Duration(tc.wantExpSecs) * time.Second); !tr.Status.ExpirationTimestamp.Time.Equal(want) {
				t.Errorf("expirationTimestamp = %v, want %v", tr.Status.ExpirationTimestamp, want)
			}
			wantAud := tc.wantAud
			if wantAud == nil {
				wantAud = []string{apiAud}
			}
			if !reflect.DeepEqual(tr.Spec.Audiences, wantAud) {
				t.Errorf("spec.audiences = %v, want %v", tr.Spec.Audiences, wantAud)
			}
			if tc.wantWarn != "" && !reflect.DeepEqual(rec.warnings, []string{tc.wantWarn}) {
				t.Errorf("warnings = %q, want %q", rec.warnings, tc.wantWarn)
			}

			p := payload(t, tr.Status.Token)
			if p["iss"] != issuer || p["sub"] != "system:serviceaccount:ns1:builder" {
				t.Errorf("iss/sub = %v / %v", p["iss"], p["sub"])
			}
			var aud []string
			for _, a := range p["aud"].([]any) {
				aud = append(aud, a.(string))
			}
			if !reflect.DeepEqual(aud, wantAud) {
				t.Errorf("aud claim = %v, want %v", aud, wantAud)
			}
			life := tc.wantJWTLife
			if life == 0 {
				life = tc.wantExpSecs
			}
			if got := int64(p["exp"].(float64) - p["iat"].(float64)); got != life {
				t.Errorf("token lifetime = %d, want %d", got, life)
			}
			k8s := p["kubernetes.io"].(map[string]any)
			for k, v := range tc.wantK8s {
				if !reflect.DeepEqual(k8s[k], v) {
					t.Errorf("kubernetes.io[%s] = %v, want %v", k, k8s[k], v)
				}
			}
			if _, ok := tc.wantK8s["warnafter"]; !ok && k8s["warnafter"] != nil {
				t.Errorf("unexpected warnafter %v", k8s["warnafter"])
			}

			if tc.noAuth {
				return
			}
			// The issued token must authenticate against the same world.
			authn, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
				Issuers: []string{issuer}, APIAudiences: []string{apiAud}, PublicKeys: []crypto.PublicKey{key.Public()},
			}, getter, clk)
			if err != nil {
				t.Fatal(err)
			}
			resp, ok, err := authn.AuthenticateToken(authenticator.WithAudiences(context.Background(), []string{apiAud}), tr.Status.Token)
			if err != nil || !ok {
				t.Fatalf("issued token does not authenticate: ok=%v err=%v", ok, err)
			}
			if resp.User.GetName() != "system:serviceaccount:ns1:builder" || resp.User.GetUID() != "sa-uid" {
				t.Errorf("user = %s/%s", resp.User.GetName(), resp.User.GetUID())
			}
			for k, v := range tc.wantExtra {
				if got := resp.User.GetExtra()[k]; !reflect.DeepEqual(got, v) {
					t.Errorf("extra[%s] = %v, want %v", k, got, v)
				}
			}
		})
	}
}

func TestCreateValidationAndGetterErrors(t *testing.T) {
	gen, err := serviceaccount.NewTokenGenerator(issuer, signingKey(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := genericapirequest.WithNamespace(context.Background(), "ns1")

	r, err := NewREST(gen, satesting.NewGetter(sa()), Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	deny := func(context.Context, runtime.Object) error {
		return apierrors.NewForbidden(authenticationv1.Resource("tokenrequests"), "builder", errors.New("admission says no"))
	}
	if _, err := r.Create(ctx, "builder", &authenticationv1.TokenRequest{}, deny, nil); !apierrors.IsForbidden(err) {
		t.Errorf("err = %v, want createValidation's Forbidden", err)
	}

	broken := satesting.NewGetter(sa())
	broken.SetError(errors.New("etcd down"))
	r, err = NewREST(gen, broken, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(ctx, "builder", &authenticationv1.TokenRequest{}, nil, nil); !apierrors.IsInternalError(err) {
		t.Errorf("err = %v, want InternalError for a plain getter error", err)
	}
}

func TestConfigAndMetadata(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "zero value", cfg: Config{}},
		{name: "negative max", cfg: Config{MaxExpiration: -time.Second}, wantErr: "must not be negative"},
		{name: "max below minimum", cfg: Config{MaxExpiration: time.Minute}, wantErr: "below the 600s minimum"},
		{name: "negative extended", cfg: Config{MaxExtendedExpiration: -time.Second}, wantErr: "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
	if _, err := NewREST(nil, satesting.NewGetter(), Config{}, nil); err == nil {
		t.Error("NewREST without generator succeeded")
	}
	gen, _ := serviceaccount.NewTokenGenerator(issuer, signingKey(t))
	r, err := NewREST(gen, satesting.NewGetter(), Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gvk := r.GroupVersionKind(corev1.SchemeGroupVersion); gvk.String() != "authentication.k8s.io/v1, Kind=TokenRequest" {
		t.Errorf("GVK = %s", gvk)
	}
	if !r.PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate() {
		t.Error("request UID not preserved")
	}
	if _, ok := r.New().(*authenticationv1.TokenRequest); !ok {
		t.Error("New is not a TokenRequest")
	}
}
