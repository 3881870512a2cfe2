// Package bootstraptoken authenticates bootstrap (join) tokens of the form
// "<id>.<secret>" ([a-z0-9]{6}.[a-z0-9]{16}) against Secrets named
// "bootstrap-token-<id>" of type bootstrap.kubernetes.io/token in kube-system.
// A matching token authenticates as "system:bootstrap:<id>" in the group
// "system:bootstrappers" plus the Secret's auth-extra-groups. A token whose
// expiration has passed (or cannot be parsed) is refused at once, while its
// Secret waits for the token-cleaner controller.
package bootstraptoken
