package pki

import (
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/util/cert"
)

// Leaf is one leaf certificate k1s keeps, named for `k1s certificate`.
type Leaf struct {
	// Service is the component that presents it, by k3s's names
	// (api-server, admin, controller-manager, scheduler, auth-proxy,
	// etcd, kubelet, kube-proxy).
	Service string
	// Name is its file name without .crt or .key, relative to the PKI
	// directory (Ensure) or, for Node leaves, to the node's directory
	// (IssueNodeCerts; a joined agent's kubelet certificates have the
	// same names).
	Name string
	Node bool
}

// Leaves are the leaf certificates Ensure and IssueNodeCerts keep.
var Leaves = []Leaf{
	{Service: "api-server", Name: "serving-kube-apiserver"},
	{Service: "api-server", Name: "client-kube-apiserver"},
	{Service: "admin", Name: "client-admin"},
	{Service: "controller-manager", Name: "client-controller"},
	{Service: "scheduler", Name: "client-scheduler"},
	{Service: "auth-proxy", Name: "client-auth-proxy"},
	{Service: "etcd", Name: "etcd/server-client"},
	{Service: "etcd", Name: "etcd/client"},
	{Service: "etcd", Name: "etcd/peer-server-client"},
	{Service: "kubelet", Name: "client-agent", Node: true},
	{Service: "kubelet", Name: "serving-agent", Node: true},
	{Service: "kube-proxy", Name: "client-kube-proxy", Node: true},
}

// CANames are the certificate authorities Ensure keeps, relative to the
// PKI directory (10 years; `k1s certificate rotate` leaves them).
var CANames = []string{"server-ca", "client-ca", "request-header-ca", "etcd/server-ca"}

// Services lists the services of Leaves, in order, once each.
func Services() []string {
	var out []string
	for _, l := range Leaves {
		if !slices.Contains(out, l.Service) {
			out = append(out, l.Service)
		}
	}
	return out
}

// Status is a certificate's state at a time, as `k1s certificate check`
// reports it (k3s's words).
type Status string

// The statuses.
const (
	StatusOK          Status = "OK"
	StatusWarning     Status = "WARNING" // expires within DefaultRenewBefore
	StatusExpired     Status = "EXPIRED"
	StatusNotYetValid Status = "NOT YET VALID"
)

// RenewalDue is when the leaf at certFile is due to be issued again:
// renewBefore (0: DefaultRenewBefore) ahead of its expiry.
func RenewalDue(certFile string, renewBefore time.Duration) (time.Time, error) {
	certs, err := cert.CertsFromFile(certFile)
	if err != nil {
		return time.Time{}, err
	}
	if renewBefore == 0 {
		renewBefore = DefaultRenewBefore
	}
	return certs[0].NotAfter.Add(-renewBefore), nil
}

// Inspection describes one certificate file.
type Inspection struct {
	Subject   string // the common name, with the organizations
	Usages    []string
	NotBefore time.Time
	NotAfter  time.Time
	Status    Status
}

// Inspect reads the first certificate of path and describes it at now.
func Inspect(path string, now time.Time) (Inspection, error) {
	certs, err := cert.CertsFromFile(path)
	if err != nil {
		return Inspection{}, err
	}
	c := certs[0]
	in := Inspection{Subject: subject(c), Usages: usages(c), NotBefore: c.NotBefore, NotAfter: c.NotAfter}
	switch {
	case now.Before(c.NotBefore):
		in.Status = StatusNotYetValid
	case !now.Before(c.NotAfter):
		in.Status = StatusExpired
	case c.NotAfter.Sub(now) < DefaultRenewBefore:
		in.Status = StatusWarning
	default:
		in.Status = StatusOK
	}
	return in, nil
}

func subject(c *x509.Certificate) string {
	s := "CN=" + c.Subject.CommonName
	for _, o := range c.Subject.Organization {
		s += ",O=" + o
	}
	return s
}

func usages(c *x509.Certificate) []string {
	var out []string
	if c.IsCA {
		out = append(out, "CertSign")
	}
	for _, u := range c.ExtKeyUsage {
		switch u {
		case x509.ExtKeyUsageServerAuth:
			out = append(out, "ServerAuth")
		case x509.ExtKeyUsageClientAuth:
			out = append(out, "ClientAuth")
		default:
			out = append(out, fmt.Sprintf("ExtKeyUsage(%d)", u))
		}
	}
	return out
}
