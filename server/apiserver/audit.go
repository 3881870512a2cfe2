package apiserver

import (
	"errors"
	"fmt"
	"os"

	auditpolicy "k8s.io/apiserver/pkg/audit/policy"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	pluginlog "k8s.io/apiserver/plugin/pkg/audit/log"
)

// AuditConfig is the audit log, kube-apiserver's flags and defaults
// (k8s.io/apiserver's log backend, in its blocking mode: a request's
// events are written before its response).
type AuditConfig struct {
	// LogPath is the file audit events are written to; "-" is standard
	// out (--audit-log-path). Default: none, no audit log.
	LogPath string
	// PolicyFile is the audit Policy (audit.k8s.io/v1) deciding which
	// requests are recorded at which level (--audit-policy-file). With
	// LogPath but no policy nothing is recorded, as upstream. Default: none.
	PolicyFile string
	// MaxAge is the days rotated files are kept, 0 keeping them by age
	// (--audit-log-maxage). Default 366 when unset through the flags.
	MaxAge int
	// MaxBackups is the rotated files kept, 0 keeping all
	// (--audit-log-maxbackup). Default 100 when unset through the flags.
	MaxBackups int
	// MaxSize is the megabytes at which the file is rotated, 0 never
	// rotating (--audit-log-maxsize). Default 100 when unset through the flags.
	MaxSize int
	// Format is json (one audit.k8s.io/v1 Event per line) or legacy
	// (--audit-log-format). Default json.
	Format string
}

// Audit log defaults, kube-apiserver's.
const (
	DefaultAuditLogMaxAge     = 366
	DefaultAuditLogMaxBackups = 100
	DefaultAuditLogMaxSize    = 100
)

// Validate reports bad settings, naming the flag.
func (c AuditConfig) Validate() error {
	var errs []error
	if c.PolicyFile != "" {
		if _, err := os.Stat(c.PolicyFile); err != nil {
			errs = append(errs, fmt.Errorf("--audit-policy-file: %w", err))
		} else if _, err := auditpolicy.LoadPolicyFromFile(c.PolicyFile); err != nil {
			errs = append(errs, fmt.Errorf("--audit-policy-file: %w", err))
		}
	}
	if c.LogPath == "" {
		// A policy alone records nothing (as upstream without a backend).
		return errors.Join(errs...)
	}
	if c.Format != "" && c.Format != pluginlog.FormatJson && c.Format != pluginlog.FormatLegacy {
		errs = append(errs, fmt.Errorf("--audit-log-format: %q is not json or legacy", c.Format))
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxage: %d must not be negative", c.MaxAge))
	}
	if c.MaxBackups < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxbackup: %d must not be negative", c.MaxBackups))
	}
	if c.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxsize: %d must not be negative", c.MaxSize))
	}
	return errors.Join(errs...)
}

// applyAudit sets the audit policy and log backend of gc.
func (c AuditConfig) applyAudit(gc *genericapiserver.Config) error {
	if c.LogPath == "" {
		return nil
	}
	o := genericoptions.NewAuditOptions()
	o.PolicyFile = c.PolicyFile
	o.LogOptions.Path = c.LogPath
	o.LogOptions.MaxAge = c.MaxAge
	o.LogOptions.MaxBackups = c.MaxBackups
	o.LogOptions.MaxSize = c.MaxSize
	if c.Format != "" {
		o.LogOptions.Format = c.Format
	}
	if errs := o.Validate(); len(errs) > 0 {
		return fmt.Errorf("audit: %w", errors.Join(errs...))
	}
	if err := o.ApplyTo(gc); err != nil {
		return fmt.Errorf("--audit-log-path %s: %w", c.LogPath, err)
	}
	return nil
}
