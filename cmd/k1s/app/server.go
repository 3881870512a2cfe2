package app

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/urfave/cli/v2"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/k1s/k1s/controllers/manager"
	"github.com/k1s/k1s/server"
	"github.com/k1s/k1s/server/apiserver"
	"github.com/k1s/k1s/server/etcdsnapshot"
)

// serverOptions are the flags of `k1s server`.
type serverOptions struct {
	nodeLabels  cli.StringSlice
	nodeTaints  cli.StringSlice
	externalIPs cli.StringSlice
	externalDNS cli.StringSlice
	cfg         server.Config
	configFile  string
	tlsSANs     cli.StringSlice
	disable     cli.StringSlice
	kubeMode    string
	cm          manager.Config
	controllers cli.StringSlice
	ctl         server.ControllerSettings
	// float64 forms of the float32 node lifecycle settings.
	evictionRate, secondaryEvictionRate, unhealthyZoneThreshold float64
	disableScheduler                                            bool
	disableHelmController                                       bool
}

func serverCommand() *cli.Command { return newServerCommand(runServer) }

// runServer builds the server from cfg and runs it until ctx is done.
func runServer(ctx context.Context, cfg server.Config) error {
	// The server's own clients do not log the API warnings they draw
	// (the apiserver and the endpoints controller keep v1 Endpoints, which
	// is deprecated), as kube-apiserver and kube-controller-manager do.
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	s, err := server.New(cfg)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// newServerCommand is `k1s server`, handing the completed configuration to
// run (tests pass a run that records it).
func newServerCommand(run func(context.Context, server.Config) error) *cli.Command {
	o := &serverOptions{cm: manager.DefaultConfig(), ctl: server.DefaultControllerSettings()}
	o.evictionRate = shortFloat(o.ctl.NodeLifecycle.NodeEvictionRate)
	o.secondaryEvictionRate = shortFloat(o.ctl.NodeLifecycle.SecondaryNodeEvictionRate)
	o.unhealthyZoneThreshold = shortFloat(o.ctl.NodeLifecycle.UnhealthyZoneThreshold)

	return &cli.Command{
		Name:  "server",
		Usage: "run a control plane and a node agent in this process",
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "YAML file whose keys are flag names", Value: DefaultConfigFile, EnvVars: env("CONFIG_FILE"), Destination: &o.configFile},
			&cli.StringFlag{Name: "data-dir", Aliases: []string{"d"}, Usage: "directory holding all state", Value: "/var/lib/k1s", EnvVars: env("DATA_DIR"), Destination: &o.cfg.DataDir},
			&cli.StringFlag{Name: "bind-address", Usage: "apiserver listen address", Value: "0.0.0.0", EnvVars: env("BIND_ADDRESS"), Destination: &o.cfg.BindAddress},
			&cli.IntFlag{Name: "https-listen-port", Usage: "apiserver HTTPS port", Value: 6443, EnvVars: env("HTTPS_LISTEN_PORT"), Destination: &o.cfg.HTTPSPort},
			&cli.StringFlag{Name: "advertise-address", Usage: "address the kubernetes service and other nodes use (default: --node-ip)", EnvVars: env("ADVERTISE_ADDRESS"), Destination: &o.cfg.AdvertiseAddress},
			&cli.StringFlag{Name: "node-ip", Usage: "this node's IP (default: the default route's interface address)", EnvVars: env("NODE_IP"), Destination: &o.cfg.NodeIP},
			&cli.StringSliceFlag{Name: "tls-san", Usage: "extra hostname or IP in the serving certificate (repeatable)", EnvVars: env("TLS_SAN"), Destination: &o.tlsSANs},
			&cli.StringFlag{Name: "service-cidr", Usage: "service cluster IP range", Value: "10.43.0.0/16", EnvVars: env("SERVICE_CIDR"), Destination: &o.cfg.ServiceCIDR},
			&cli.StringFlag{Name: "cluster-cidr", Usage: "pod IP range", Value: "10.42.0.0/16", EnvVars: env("CLUSTER_CIDR"), Destination: &o.cfg.ClusterCIDR},
			&cli.IntFlag{Name: "node-cidr-mask-size", Usage: "prefix length of each node's pod CIDR", Value: 24, EnvVars: env("NODE_CIDR_MASK_SIZE"), Destination: &o.cfg.NodeCIDRMaskSize},
			&cli.StringFlag{Name: "service-node-port-range", Usage: "NodePort range", Value: "30000-32767", EnvVars: env("SERVICE_NODE_PORT_RANGE"), Destination: &o.cfg.ServiceNodePortRange},
			&cli.StringFlag{Name: "cluster-domain", Usage: "cluster DNS domain", Value: "cluster.local", EnvVars: env("CLUSTER_DOMAIN"), Destination: &o.cfg.ClusterDomain},
			&cli.StringFlag{Name: "write-kubeconfig", Aliases: []string{"o"}, Usage: "where to write the admin kubeconfig", Value: "/etc/k1s/k1s.yaml", EnvVars: env("KUBECONFIG_OUTPUT"), Destination: &o.cfg.WriteKubeconfig},
			&cli.StringFlag{Name: "write-kubeconfig-mode", Usage: "file mode of the admin kubeconfig (octal)", Value: "0600", EnvVars: env("KUBECONFIG_MODE"), Destination: &o.kubeMode},
			&cli.StringFlag{Name: "datastore-endpoint", Usage: "external etcd URLs (comma-separated); empty runs embedded etcd", EnvVars: env("DATASTORE_ENDPOINT"), Destination: &o.cfg.DatastoreEndpoint},
			&cli.StringFlag{Name: "datastore-cafile", Usage: "CA of the external etcd", EnvVars: env("DATASTORE_CAFILE"), Destination: &o.cfg.DatastoreCAFile},
			&cli.StringFlag{Name: "datastore-certfile", Usage: "client certificate for the external etcd", EnvVars: env("DATASTORE_CERTFILE"), Destination: &o.cfg.DatastoreCertFile},
			&cli.StringFlag{Name: "datastore-keyfile", Usage: "client key for the external etcd", EnvVars: env("DATASTORE_KEYFILE"), Destination: &o.cfg.DatastoreKeyFile},
			&cli.IntFlag{Name: "etcd-client-port", Usage: "embedded etcd client port (loopback only)", Value: 2379, Destination: &o.cfg.EtcdClientPort},
			&cli.IntFlag{Name: "etcd-peer-port", Usage: "embedded etcd peer port (loopback only; on --node-ip with TLS once the server is one of a cluster)", Value: 2380, Destination: &o.cfg.EtcdPeerPort},
			&cli.StringFlag{Name: "etcd-snapshot-schedule-cron", Usage: "schedule of the etcd snapshots (cron: minute hour day-of-month month day-of-week, or @every DURATION …)", Value: etcdsnapshot.DefaultCron, EnvVars: env("ETCD_SNAPSHOT_SCHEDULE_CRON"), Destination: &o.cfg.EtcdSnapshots.Cron},
			&cli.IntFlag{Name: "etcd-snapshot-retention", Usage: "scheduled etcd snapshots kept (0: all)", Value: etcdsnapshot.DefaultRetention, EnvVars: env("ETCD_SNAPSHOT_RETENTION"), Destination: &o.cfg.EtcdSnapshots.Retention},
			&cli.StringFlag{Name: "etcd-snapshot-dir", Usage: "directory of the etcd snapshots (default <data-dir>/server/db/snapshots)", EnvVars: env("ETCD_SNAPSHOT_DIR"), Destination: &o.cfg.EtcdSnapshots.Dir},
			&cli.StringFlag{Name: "etcd-snapshot-name", Usage: "base name of the scheduled etcd snapshots", Value: etcdsnapshot.DefaultScheduledName, EnvVars: env("ETCD_SNAPSHOT_NAME"), Destination: &o.cfg.EtcdSnapshots.Name},
			&cli.BoolFlag{Name: "etcd-snapshot-compress", Usage: "compress the etcd snapshots (zip)", EnvVars: env("ETCD_SNAPSHOT_COMPRESS"), Destination: &o.cfg.EtcdSnapshots.Compress},
			&cli.BoolFlag{Name: "etcd-disable-snapshots", Aliases: []string{"disable-snapshots"}, Usage: "take no scheduled etcd snapshots", EnvVars: env("ETCD_DISABLE_SNAPSHOTS"), Destination: &o.cfg.DisableSnapshots},
			&cli.BoolFlag{Name: "cluster-reset", Usage: "make the embedded etcd member a cluster of itself alone, keeping its data (or restoring --cluster-reset-restore-path), then exit", EnvVars: env("CLUSTER_RESET"), Destination: &o.cfg.ClusterReset},
			&cli.StringFlag{Name: "cluster-reset-restore-path", Usage: "with --cluster-reset: the etcd snapshot file to restore", EnvVars: env("CLUSTER_RESET_RESTORE_PATH"), Destination: &o.cfg.ClusterResetRestorePath},
			&cli.BoolFlag{Name: "cluster-init", Usage: "start the embedded etcd as the first member of a cluster other servers join with --server", EnvVars: env("CLUSTER_INIT"), Destination: &o.cfg.ClusterInit},
			&cli.StringFlag{Name: "server", Aliases: []string{"s"}, Usage: "join the cluster of the server at this URL, https://HOST:6443, as another server", EnvVars: []string{"K1S_URL"}, Destination: &o.cfg.JoinServer},
			&cli.StringFlag{Name: "token", Aliases: []string{"t"}, Usage: "server token: with --server the K10… token of <data-dir>/server/token of a server of the cluster; without, the new cluster's token (<id>.<secret>)", EnvVars: []string{"K1S_TOKEN"}, Destination: &o.cfg.Token},
			&cli.StringFlag{Name: "token-file", Usage: "file holding the server token", EnvVars: []string{"K1S_TOKEN_FILE"}, Destination: &o.cfg.TokenFile},
			&cli.StringFlag{Name: "agent-token", Usage: "token agents join with (<id>.<secret>), kept in <data-dir>/server/agent-token; it never lets a server join (default: agents use the server token)", EnvVars: env("AGENT_TOKEN"), Destination: &o.cfg.AgentToken},
			&cli.StringFlag{Name: "agent-token-file", Usage: "file holding the agent token", EnvVars: env("AGENT_TOKEN_FILE"), Destination: &o.cfg.AgentTokenFile},
			&cli.StringFlag{Name: "egress-selector-mode", Usage: "how the apiserver reaches nodes' agent API: agent (directly, else through the tunnel the agent opened) or disabled (directly only)", Value: "agent", EnvVars: env("EGRESS_SELECTOR_MODE"), Destination: &o.cfg.EgressSelectorMode},
			&cli.Int64Flag{Name: "default-not-ready-toleration-seconds", Usage: "tolerationSeconds added to pods for node.kubernetes.io/not-ready", Value: 300, Destination: &o.cfg.DefaultNotReadyTolerationSeconds},
			&cli.Int64Flag{Name: "default-unreachable-toleration-seconds", Usage: "tolerationSeconds added to pods for node.kubernetes.io/unreachable", Value: 300, Destination: &o.cfg.DefaultUnreachableTolerationSeconds},
			&cli.StringFlag{Name: "pod-security-admission-config-file", Usage: "AdmissionConfiguration whose PodSecurity entry sets the default Pod Security levels and exemptions (default: privileged, none exempt)", EnvVars: env("POD_SECURITY_ADMISSION_CONFIG_FILE"), Destination: &o.cfg.PodSecurityAdmissionConfigFile},
			&cli.BoolFlag{Name: "secrets-encryption", Usage: "encrypt Secrets in etcd with the key of <data-dir>/server/cred/encryption-config.json (written at the first start); see k1s secrets-encrypt --help", EnvVars: env("SECRETS_ENCRYPTION"), Destination: &o.cfg.SecretsEncryption},
			&cli.StringFlag{Name: "secrets-encryption-provider", Usage: "provider of the key --secrets-encryption writes: aescbc or secretbox", Value: "aescbc", EnvVars: env("SECRETS_ENCRYPTION_PROVIDER"), Destination: &o.cfg.SecretsEncryptionProvider},
			&cli.StringFlag{Name: "audit-log-path", Usage: "file the apiserver writes audit events to ('-': standard out); needs --audit-policy-file", Destination: &o.cfg.Audit.LogPath},
			&cli.StringFlag{Name: "audit-policy-file", Usage: "audit Policy (audit.k8s.io/v1) choosing what is recorded", Destination: &o.cfg.Audit.PolicyFile},
			&cli.IntFlag{Name: "audit-log-maxage", Usage: "days rotated audit logs are kept (0: no limit)", Value: apiserver.DefaultAuditLogMaxAge, Destination: &o.cfg.Audit.MaxAge},
			&cli.IntFlag{Name: "audit-log-maxbackup", Usage: "rotated audit logs kept (0: no limit)", Value: apiserver.DefaultAuditLogMaxBackups, Destination: &o.cfg.Audit.MaxBackups},
			&cli.IntFlag{Name: "audit-log-maxsize", Usage: "megabytes at which the audit log is rotated (0: never)", Value: apiserver.DefaultAuditLogMaxSize, Destination: &o.cfg.Audit.MaxSize},
			&cli.StringFlag{Name: "audit-log-format", Usage: "audit log format: json or legacy", Value: "json", Destination: &o.cfg.Audit.Format},
			&cli.BoolFlag{Name: "disable-agent", Usage: "run no node agent (and no containerd) in this server", EnvVars: env("DISABLE_AGENT"), Destination: &o.cfg.DisableAgent},
			&cli.StringFlag{Name: "node-name", Usage: "this node's name (default: the hostname)", EnvVars: env("NODE_NAME"), Destination: &o.cfg.NodeName},
			&cli.StringSliceFlag{Name: "node-label", Usage: "label the node gets at registration, key=value (repeatable)", EnvVars: env("NODE_LABEL"), Destination: &o.nodeLabels},
			&cli.StringSliceFlag{Name: "node-taint", Usage: "taint the node gets at registration, key=value:Effect (repeatable)", EnvVars: env("NODE_TAINT"), Destination: &o.nodeTaints},
			&cli.StringFlag{Name: "pod-manifests", Usage: "static pod directory (default <data-dir>/agent/pod-manifests)", Destination: &o.cfg.PodManifests},
			&cli.StringSliceFlag{Name: "node-external-ip", Usage: "this node's external IP addresses (repeatable); servicelb advertises them as load-balancer ingress", EnvVars: env("NODE_EXTERNAL_IP"), Destination: &o.externalIPs},
			&cli.StringSliceFlag{Name: "node-external-dns", Usage: "this node's external DNS names (repeatable)", EnvVars: env("NODE_EXTERNAL_DNS"), Destination: &o.externalDNS},
			&cli.IntFlag{Name: "max-pods", Usage: "pods this node takes (capacity and allocatable); k3s's --kubelet-arg=max-pods=N", Value: 110, Hidden: true, Destination: &o.cfg.MaxPods},
			&cli.StringFlag{Name: "private-registry", Usage: "k3s's registries.yaml: mirrors, credentials and TLS of image registries for the embedded containerd (a missing file configures none)", Value: DefaultPrivateRegistry, EnvVars: env("PRIVATE_REGISTRY"), Destination: &o.cfg.PrivateRegistry},
			&cli.StringFlag{Name: "system-default-registry", Usage: "k3s's registry for its system images: accepted, with no effect (k1s's own images are in the binary, never pulled)", EnvVars: env("SYSTEM_DEFAULT_REGISTRY"), Destination: &o.cfg.SystemDefaultRegistry},
			&cli.StringFlag{Name: "container-runtime-endpoint", Usage: "CRI socket of an external container runtime; empty runs the embedded containerd", EnvVars: env("CONTAINER_RUNTIME_ENDPOINT"), Destination: &o.cfg.ContainerRuntimeEndpoint},
			&cli.StringFlag{Name: "cluster-dns", Usage: "cluster DNS server address in pods' resolv.conf", Value: "10.43.0.10", EnvVars: env("CLUSTER_DNS"), Destination: &o.cfg.ClusterDNS},
			&cli.StringFlag{Name: "resolv-conf", Usage: "host resolver file: upstream servers of the cluster DNS, resolv.conf of dnsPolicy Default pods (default /etc/resolv.conf, or systemd-resolved's server list when that names only its stub)", EnvVars: env("RESOLV_CONF"), Destination: &o.cfg.ResolvConf},
			&cli.StringFlag{Name: "flannel-backend", Usage: "pod network between nodes: vxlan, host-gw or none", Value: "vxlan", EnvVars: env("FLANNEL_BACKEND"), Destination: &o.cfg.FlannelBackend},
			&cli.BoolFlag{Name: "disable-kube-proxy", Usage: "run no service proxy on this node", EnvVars: env("DISABLE_KUBE_PROXY"), Destination: &o.cfg.DisableKubeProxy},
			&cli.StringSliceFlag{Name: "disable", Usage: "packaged component not to run: servicelb, coredns, local-storage, metrics-server, or any packaged manifest by name (repeatable)", EnvVars: env("DISABLE"), Destination: &o.disable},
			&cli.StringFlag{Name: "default-local-storage-path", Usage: "directory of this node's local-path volumes (default <data-dir>/storage)", EnvVars: env("DEFAULT_LOCAL_STORAGE_PATH"), Destination: &o.cfg.DefaultLocalStoragePath},
			&cli.StringFlag{Name: "container-log-max-size", Usage: "size at which a container log is rotated", Value: "10Mi", Destination: &o.cfg.ContainerLogMaxSize},
			&cli.IntFlag{Name: "container-log-max-files", Usage: "log files kept per container", Value: 5, Destination: &o.cfg.ContainerLogMaxFiles},
			&cli.IntFlag{Name: "read-only-port", Usage: "unauthenticated read-only agent API port (0: off)", Value: 0, Destination: &o.cfg.ReadOnlyPort},
			&cli.StringSliceFlag{Name: "controllers", Usage: "controllers to run: '*' for all on by default, 'name' to enable, '-name' to disable", Value: cli.NewStringSlice("*"), Destination: &o.controllers},
			&cli.BoolFlag{Name: "leader-elect", Usage: "run controllers only while holding the kube-system/kube-controller-manager lease", Value: true, Destination: &o.cm.LeaderElect},
			&cli.DurationFlag{Name: "leader-elect-lease-duration", Usage: "how long followers wait before taking over an unrenewed lease", Value: o.cm.LeaseDuration, Destination: &o.cm.LeaseDuration},
			&cli.DurationFlag{Name: "leader-elect-renew-deadline", Usage: "how long the leader retries renewing before giving up", Value: o.cm.RenewDeadline, Destination: &o.cm.RenewDeadline},
			&cli.DurationFlag{Name: "leader-elect-retry-period", Usage: "wait between lease acquire or renew attempts", Value: o.cm.RetryPeriod, Destination: &o.cm.RetryPeriod},
			&cli.BoolFlag{Name: "use-service-account-credentials", Usage: "give each controller its own service account's credentials", Value: true, Destination: &o.cm.UseServiceAccountCredentials},
			&cli.BoolFlag{Name: "disable-scheduler", Usage: "run no scheduler (the same as --controllers=-scheduler,...)", EnvVars: env("DISABLE_SCHEDULER"), Destination: &o.disableScheduler},
			&cli.BoolFlag{Name: "disable-helm-controller", Usage: "install no HelmCharts (the same as --controllers=-helm-controller,...)", EnvVars: env("DISABLE_HELM_CONTROLLER"), Destination: &o.disableHelmController},
			&cli.IntFlag{Name: "concurrent-replicaset-syncs", Usage: "ReplicaSets synced at once", Value: o.ctl.ReplicaSet.ConcurrentSyncs, Destination: &o.ctl.ReplicaSet.ConcurrentSyncs},
			&cli.IntFlag{Name: "concurrent-rc-syncs", Usage: "ReplicationControllers synced at once", Value: o.ctl.Replication.ConcurrentSyncs, Destination: &o.ctl.Replication.ConcurrentSyncs},
			&cli.IntFlag{Name: "concurrent-deployment-syncs", Usage: "Deployments synced at once", Value: o.ctl.Deployment.ConcurrentSyncs, Destination: &o.ctl.Deployment.ConcurrentSyncs},
			&cli.IntFlag{Name: "concurrent-endpoint-syncs", Usage: "Services whose Endpoints are synced at once", Value: o.ctl.Endpoints.Workers, Destination: &o.ctl.Endpoints.Workers},
			&cli.DurationFlag{Name: "endpoint-updates-batch-period", Usage: "delay batching pod changes into one Endpoints update", Value: o.ctl.Endpoints.BatchPeriod, Destination: &o.ctl.Endpoints.BatchPeriod},
			&cli.IntFlag{Name: "concurrent-service-endpoint-syncs", Usage: "Services whose EndpointSlices are synced at once", Value: o.ctl.EndpointSlice.Workers, Destination: &o.ctl.EndpointSlice.Workers},
			&cli.IntFlag{Name: "max-endpoints-per-slice", Usage: "endpoints in one EndpointSlice", Value: o.ctl.EndpointSlice.MaxEndpointsPerSlice, Destination: &o.ctl.EndpointSlice.MaxEndpointsPerSlice},
			&cli.DurationFlag{Name: "endpointslice-updates-batch-period", Usage: "delay batching pod changes into one EndpointSlice update", Value: o.ctl.EndpointSlice.BatchPeriod, Destination: &o.ctl.EndpointSlice.BatchPeriod},
			&cli.IntFlag{Name: "concurrent-gc-syncs", Usage: "objects the garbage collector processes at once", Value: o.ctl.GarbageCollector.Workers, Destination: &o.ctl.GarbageCollector.Workers},
			&cli.IntFlag{Name: "concurrent-resource-quota-syncs", Usage: "ResourceQuotas computed at once", Value: o.ctl.ResourceQuota.Workers, Destination: &o.ctl.ResourceQuota.Workers},
			&cli.DurationFlag{Name: "resource-quota-sync-period", Usage: "period of the full ResourceQuota usage recomputation", Value: o.ctl.ResourceQuota.ResyncPeriod, Destination: &o.ctl.ResourceQuota.ResyncPeriod},
			&cli.DurationFlag{Name: "cluster-signing-duration", Usage: "longest life of a certificate the csrsigning controller signs", Value: o.ctl.ClusterSigningDuration, Destination: &o.ctl.ClusterSigningDuration},
			&cli.IntFlag{Name: "terminated-pod-gc-threshold", Usage: "terminated pods kept before the oldest are deleted (0: no limit)", Value: o.ctl.PodGC.TerminatedPodGCThreshold, Destination: &o.ctl.PodGC.TerminatedPodGCThreshold},
			&cli.DurationFlag{Name: "node-monitor-period", Usage: "period of the node heartbeat check", Value: o.ctl.NodeLifecycle.NodeMonitorPeriod, Destination: &o.ctl.NodeLifecycle.NodeMonitorPeriod},
			&cli.DurationFlag{Name: "node-monitor-grace-period", Usage: "time without heartbeat before a node is marked Unknown", Value: o.ctl.NodeLifecycle.NodeMonitorGracePeriod, Destination: &o.ctl.NodeLifecycle.NodeMonitorGracePeriod},
			&cli.DurationFlag{Name: "node-startup-grace-period", Usage: "time a starting node may take to report Ready before it is marked Unknown", Value: o.ctl.NodeLifecycle.NodeStartupGracePeriod, Destination: &o.ctl.NodeLifecycle.NodeStartupGracePeriod},
			&cli.Float64Flag{Name: "node-eviction-rate", Usage: "nodes per second per zone tainted for eviction in a healthy zone", Value: o.evictionRate, Destination: &o.evictionRate},
			&cli.Float64Flag{Name: "secondary-node-eviction-rate", Usage: "nodes per second per zone tainted for eviction in a partially disrupted large zone", Value: o.secondaryEvictionRate, Destination: &o.secondaryEvictionRate},
			&cli.IntFlag{Name: "large-cluster-size-threshold", Usage: "zone size above which a disrupted zone keeps evicting at the secondary rate", Value: int(o.ctl.NodeLifecycle.LargeClusterSizeThreshold)},
			&cli.Float64Flag{Name: "unhealthy-zone-threshold", Usage: "share of NotReady nodes (at least 3) from which a zone counts as disrupted", Value: o.unhealthyZoneThreshold, Destination: &o.unhealthyZoneThreshold},
			&cli.DurationFlag{Name: "horizontal-pod-autoscaler-sync-period", Usage: "period of each HorizontalPodAutoscaler's reconciliation", Value: o.ctl.HPA.SyncPeriod, Destination: &o.ctl.HPA.SyncPeriod},
			&cli.DurationFlag{Name: "horizontal-pod-autoscaler-downscale-stabilization", Usage: "how far back the autoscaler looks for higher recommendations before scaling down", Value: o.ctl.HPA.DownscaleStabilizationWindow, Destination: &o.ctl.HPA.DownscaleStabilizationWindow},
			&cli.Float64Flag{Name: "horizontal-pod-autoscaler-tolerance", Usage: "smallest relative difference between a metric and its target that causes scaling", Value: o.ctl.HPA.Tolerance, Destination: &o.ctl.HPA.Tolerance},
			&cli.DurationFlag{Name: "horizontal-pod-autoscaler-cpu-initialization-period", Usage: "time after a pod starts during which its CPU samples may be skipped", Value: o.ctl.HPA.CPUInitializationPeriod, Destination: &o.ctl.HPA.CPUInitializationPeriod},
			&cli.DurationFlag{Name: "horizontal-pod-autoscaler-initial-readiness-delay", Usage: "time after a pod starts during which a readiness change counts as its initial readiness", Value: o.ctl.HPA.InitialReadinessDelay, Destination: &o.ctl.HPA.InitialReadinessDelay},
			&cli.IntFlag{Name: "concurrent-horizontal-pod-autoscaler-syncs", Usage: "HorizontalPodAutoscalers reconciled at once", Value: o.ctl.HPA.ConcurrentSyncs, Destination: &o.ctl.HPA.ConcurrentSyncs},
		}, append(passthroughFlags(serverPassthrough()), o.cfg.NodeFlags.CLIFlags()...)...), unsupportedFlags(serverUnsupported())...),
		Action: func(c *cli.Context) error {
			if err := loadConfigFile(c, o.configFile, c.IsSet("config")); err != nil {
				return err
			}
			if err := checkUnsupported(c, serverUnsupported()); err != nil {
				return err
			}
			if err := applyPassthrough(c, serverPassthrough()); err != nil {
				return err
			}
			if c.Args().Len() > 0 {
				return fmt.Errorf("k1s server takes no arguments, got %q", c.Args().Slice())
			}
			mode, err := strconv.ParseUint(o.kubeMode, 8, 32)
			if err != nil || mode > 0o777 {
				return fmt.Errorf("--write-kubeconfig-mode: %q is not an octal file mode", o.kubeMode)
			}
			o.cfg.WriteKubeconfigMode = os.FileMode(mode)
			o.cfg.TLSSANs = splitList(o.tlsSANs.Value())
			o.cfg.Disable = splitList(o.disable.Value())
			o.cfg.NodeLabels = splitList(o.nodeLabels.Value())
			o.cfg.NodeTaints = splitList(o.nodeTaints.Value())
			o.cfg.NodeExternalIPs = splitList(o.externalIPs.Value())
			o.cfg.NodeExternalDNS = splitList(o.externalDNS.Value())
			o.cm.Controllers = splitList(o.controllers.Value())
			if o.disableScheduler {
				// The first entry naming a controller decides for it.
				o.cm.Controllers = append([]string{"-scheduler"}, o.cm.Controllers...)
			}
			if o.disableHelmController {
				o.cm.Controllers = append([]string{"-helm-controller"}, o.cm.Controllers...)
			}
			if o.cfg.NodeFlags.LowWrite {
				lowWriteLeaderElection(c, &o.cm)
			}
			o.cfg.ControllerManager = &o.cm
			o.ctl.NodeLifecycle.NodeEvictionRate = float32(o.evictionRate)
			o.ctl.NodeLifecycle.SecondaryNodeEvictionRate = float32(o.secondaryEvictionRate)
			o.ctl.NodeLifecycle.UnhealthyZoneThreshold = float32(o.unhealthyZoneThreshold)
			large := c.Int("large-cluster-size-threshold")
			if large < 0 || large > math.MaxInt32 {
				return fmt.Errorf("--large-cluster-size-threshold: %d must be between 0 and %d", large, math.MaxInt32)
			}
			o.ctl.NodeLifecycle.LargeClusterSizeThreshold = int32(large)
			o.cfg.Controllers = &o.ctl
			if o.cfg.SystemDefaultRegistry != "" {
				klog.Background().Info("--system-default-registry has no effect: k1s's own images are carried in the binary and never pulled", "registry", o.cfg.SystemDefaultRegistry)
			}
			return run(klog.NewContext(c.Context, klog.Background()), o.cfg)
		},
	}
}

// shortFloat widens f to float64 by its shortest decimal form, so 0.1
// stays 0.1 (not 0.10000000149011612) in --help and in the configuration.
func shortFloat(f float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return v
}
