// Package podsecurity owns the PodSecurity admission plugin of the k1s
// apiserver (upstream's plugin/pkg/admission/security/podsecurity), built
// on upstream's library, k8s.io/pod-security-admission.
//
// A namespace's pod-security.kubernetes.io/{enforce,audit,warn} labels
// (and their -version labels) name a Pod Security Standard level
// (privileged, baseline, restricted) and version; where a label is absent,
// the configuration's defaults apply (upstream's default: privileged,
// latest). A pod violating its namespace's enforce level is refused, with
// the violated checks in the message; warn violations come back to the
// client as warnings, audit violations as audit annotations. Workload
// objects embedding a pod template (Deployments, Jobs ...) draw warnings
// and audit annotations, never a refusal. Changing a namespace's enforce
// label evaluates the pods already there and warns about those that would
// be refused. Exempt usernames, runtime classes and namespaces are taken
// from the configuration (a PodSecurityConfiguration, read from the
// plugin's entry of the AdmissionConfiguration file).
//
// k1s's own components run no pods (the cluster DNS, the service proxy
// and ServiceLB are part of each node, not pods), so nothing needs an
// exemption by default.
package podsecurity
