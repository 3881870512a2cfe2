package volume

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestHostPath(t *testing.T) {
	base := t.TempDir()
	mustWrite(t, filepath.Join(base, "file"), "x")
	if err := os.Mkdir(filepath.Join(base, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(base, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	tests := []struct {
		name     string
		path     string
		typ      corev1.HostPathType
		wantErr  string
		wantMode os.FileMode // checked on a created path
	}{
		{name: "unset type needs nothing", path: filepath.Join(base, "absent")},
		{name: "directory", path: filepath.Join(base, "dir"), typ: corev1.HostPathDirectory},
		{name: "directory is a file", path: filepath.Join(base, "file"), typ: corev1.HostPathDirectory,
			wantErr: "hostPath type check failed: " + filepath.Join(base, "file") + " is not a directory, it's a File"},
		{name: "missing directory", path: filepath.Join(base, "absent"), typ: corev1.HostPathDirectory,
			wantErr: "hostPath type check failed, " + filepath.Join(base, "absent") + ` is not a directory, unable to determine its type: path "` + filepath.Join(base, "absent") + `" does not exist`},
		{name: "directory created", path: filepath.Join(base, "new/dir"), typ: corev1.HostPathDirectoryOrCreate, wantMode: os.ModeDir | 0o755},
		{name: "directoryOrCreate on a file", path: filepath.Join(base, "file"), typ: corev1.HostPathDirectoryOrCreate,
			wantErr: "hostPath type check failed: " + filepath.Join(base, "file") + " is not a directory, it's a File"},
		{name: "file", path: filepath.Join(base, "file"), typ: corev1.HostPathFile},
		{name: "file created", path: filepath.Join(base, "newfile"), typ: corev1.HostPathFileOrCreate, wantMode: 0o644},
		{name: "file is a directory", path: filepath.Join(base, "dir"), typ: corev1.HostPathFile,
			wantErr: "hostPath type check failed: " + filepath.Join(base, "dir") + " is not a file, it's a Directory"},
		{name: "socket", path: filepath.Join(base, "sock"), typ: corev1.HostPathSocket},
		{name: "socket is a file", path: filepath.Join(base, "file"), typ: corev1.HostPathSocket,
			wantErr: "hostPath type check failed: " + filepath.Join(base, "file") + " is not a socket file, it's a File"},
		{name: "char device", path: "/dev/null", typ: corev1.HostPathCharDev},
		{name: "block device is a char device", path: "/dev/null", typ: corev1.HostPathBlockDev,
			wantErr: "hostPath type check failed: /dev/null is not a block device, it's a CharDevice"},
		{name: "climbing path", path: base + "/dir/../file", wantErr: `invalid hostPath "` + base + `/dir/../file": must not contain '..'`},
		{name: "bad type", path: base, typ: "Pipe", wantErr: "Pipe is an invalid hostPath type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			src := &corev1.HostPathVolumeSource{Path: tt.path}
			if tt.typ != "" {
				src.Type = ptr(tt.typ)
			}
			paths, err := e.mgr.SetUpPod(context.Background(), newPod("uid1", corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: src}}))
			if tt.wantErr != "" {
				ves := mustVolumeErrors(t, err)
				if want := `MountVolume.SetUp failed for volume "host" : ` + tt.wantErr; ves[0].Error() != want {
					t.Fatalf("error = %q\nwant    %q", ves[0].Error(), want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if paths["host"] != tt.path {
				t.Errorf("path = %q, want %q", paths["host"], tt.path)
			}
			if tt.wantMode != 0 {
				info, err := os.Stat(tt.path)
				if err != nil {
					t.Fatal(err)
				}
				if got := info.Mode() & (os.ModeDir | os.ModePerm); got != tt.wantMode {
					t.Errorf("created mode = %v, want %v", got, tt.wantMode)
				}
			}
		})
	}
}

func mustWrite(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mountsPod has an emptyDir, a configMap and a hostPath volume.
func mountsPod(t *testing.T, e *env) (*corev1.Pod, map[string]string) {
	t.Helper()
	e.objects.setConfigMap("ns1", "app", map[string]string{"app.conf": "conf"})
	hostDir := filepath.Join(e.dir, "host")
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	pod := newPod("uid1",
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		configMapVolume("cfg", "app"),
		corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}},
	)
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.42.0.7"}}
	return pod, e.setUp(pod)
}

func TestMountsVolumes(t *testing.T) {
	e := newEnv(t)
	pod, paths := mountsPod(t, e)
	h2c := corev1.MountPropagationHostToContainer
	bidi := corev1.MountPropagationBidirectional
	c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "cfg", MountPath: "/etc/app"},
		{Name: "host", MountPath: "/host", ReadOnly: true, MountPropagation: &h2c},
		{Name: "host", MountPath: "/host-rw", MountPropagation: &bidi, BindMountOptions: []string{"noexec"}},
	}}
	mounts, err := e.mgr.Mounts(pod, c, paths, ContainerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []*runtimeapi.Mount{
		{ContainerPath: "/scratch", HostPath: paths["scratch"]},
		// configMap volumes are always read-only.
		{ContainerPath: "/etc/app", HostPath: paths["cfg"], Readonly: true},
		{ContainerPath: "/host", HostPath: paths["host"], Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{ContainerPath: "/host-rw", HostPath: paths["host"], Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, MountOptions: []string{"noexec"}},
		{ContainerPath: "/etc/hosts", HostPath: filepath.Join(e.podDir("uid1"), "etc-hosts")},
	}
	if len(mounts) != len(want) {
		t.Fatalf("mounts = %v, want %v", mounts, want)
	}
	for i := range want {
		if mounts[i].String() != want[i].String() {
			t.Errorf("mount %d = %v, want %v", i, mounts[i], want[i])
		}
	}

	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "ghost", MountPath: "/g"})
	if _, err := e.mgr.Mounts(pod, c, paths, ContainerOptions{}); err == nil || err.Error() != `cannot find volume "ghost" to mount into container "app"` {
		t.Errorf("error = %v, want the missing volume", err)
	}
}

func TestMountsTerminationLog(t *testing.T) {
	e := newEnv(t)
	pod, paths := mountsPod(t, e)
	c := &corev1.Container{Name: "app", TerminationMessagePath: "/dev/termination-log"}
	first, err := e.mgr.Mounts(pod, c, paths, ContainerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.mgr.Mounts(pod, c, paths, ContainerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := first[len(first)-1], second[len(second)-1]
	re := regexp.MustCompile("^" + regexp.QuoteMeta(filepath.Join(e.podDir("uid1"), "containers", "app")) + "/[0-9a-f]{8}$")
	for _, m := range []*runtimeapi.Mount{a, b} {
		if m.ContainerPath != "/dev/termination-log" || !re.MatchString(m.HostPath) || m.Readonly {
			t.Errorf("termination log mount = %v", m)
		}
		if got := fileMode(t, m.HostPath); got != 0o666 {
			t.Errorf("termination log mode = %v, want 0666", got)
		}
	}
	if a.HostPath == b.HostPath {
		t.Errorf("two container instances share the termination log %s", a.HostPath)
	}
}

func TestEtcHosts(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*corev1.Pod)
		opts       ContainerOptions
		nodeHosts  string
		mountsEtc  bool
		wantNoFile bool
		want       string
	}{
		{
			name: "pod IP and name",
			opts: ContainerOptions{PodIPs: []string{"10.42.0.9"}},
			want: "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
				"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
				"10.42.0.9\tweb\n",
		},
		{
			name: "hostname, subdomain and aliases; IPs from the status",
			mutate: func(p *corev1.Pod) {
				p.Spec.Hostname = "db-0"
				p.Spec.Subdomain = "db"
				p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"foo", "foo.local"}}}
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.42.0.3"}}
			},
			want: "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
				"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
				"10.42.0.3\tdb-0.db.ns1.svc.cluster.local\tdb-0\n" +
				"\n# Entries added by HostAliases.\n10.0.0.1\tfoo\tfoo.local\n",
		},
		{
			name: "host network copies the node's file",
			mutate: func(p *corev1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.2", Hostnames: []string{"bar"}}}
			},
			nodeHosts: "127.0.0.1 localhost\n192.168.1.5 node1\n",
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n192.168.1.5 node1\n" +
				"\n# Entries added by HostAliases.\n10.0.0.2\tbar\n",
		},
		{name: "no IP yet", wantNoFile: true},
		{name: "container mounts its own /etc/hosts", opts: ContainerOptions{PodIPs: []string{"10.42.0.9"}}, mountsEtc: true, wantNoFile: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			mustWrite(t, filepath.Join(e.dir, "node-hosts"), tt.nodeHosts)
			pod := newPod("uid1", corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			if tt.mutate != nil {
				tt.mutate(pod)
			}
			paths := e.setUp(pod)
			c := &corev1.Container{Name: "app"}
			if tt.mountsEtc {
				c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/etc/hosts"}}
			}
			mounts, err := e.mgr.Mounts(pod, c, paths, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var hosts *runtimeapi.Mount
			for _, m := range mounts {
				if m.ContainerPath == "/etc/hosts" && strings.HasSuffix(m.HostPath, "etc-hosts") {
					hosts = m
				}
			}
			if tt.wantNoFile {
				if hosts != nil {
					t.Fatalf("got an /etc/hosts mount %v, want none", hosts)
				}
				return
			}
			if hosts == nil || hosts.HostPath != filepath.Join(e.podDir("uid1"), "etc-hosts") || hosts.Readonly {
				t.Fatalf("hosts mount = %v", hosts)
			}
			if got := readFile(t, hosts.HostPath); got != tt.want {
				t.Errorf("hosts file:\n%s\nwant:\n%s", got, tt.want)
			}
			if got := fileMode(t, hosts.HostPath); got != 0o644 {
				t.Errorf("hosts file mode = %v", got)
			}
		})
	}
}

func TestSubPath(t *testing.T) {
	e := newEnv(t)
	pod, paths := mountsPod(t, e)
	scratch := paths["scratch"]
	outside := filepath.Join(e.dir, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(scratch, "data", "f"), "x")
	mustSymlink(t, outside, filepath.Join(scratch, "abs-escape"))
	mustSymlink(t, "../../../../..", filepath.Join(scratch, "rel-escape"))
	mustSymlink(t, "data", filepath.Join(scratch, "inside"))
	mustSymlink(t, "rel-escape/outside", filepath.Join(scratch, "chain"))
	mustSymlink(t, "rel-escape/missing", filepath.Join(scratch, "dangling"))

	tests := []struct {
		name       string
		volume     string
		subPath    string
		expr       string
		env        map[string]string
		wantSource string // the path bind-mounted, relative to the volume
		wantDir    bool   // the source is a directory created by Mounts
		wantErr    string
	}{
		{name: "existing directory", volume: "scratch", subPath: "data", wantSource: "data"},
		{name: "existing file", volume: "scratch", subPath: "data/f", wantSource: "data/f"},
		{name: "created directories", volume: "scratch", subPath: "logs/app", wantSource: "logs/app", wantDir: true},
		{name: "symlink inside the volume", volume: "scratch", subPath: "inside/f", wantSource: "data/f"},
		{name: "configMap key through ..data", volume: "cfg", subPath: "app.conf", wantSource: "..data/app.conf"},
		{name: "hostPath subdirectory", volume: "host", subPath: "sub", wantSource: "sub", wantDir: true},
		{name: "expression", volume: "scratch", expr: "pods/$(POD_NAME)", env: map[string]string{"POD_NAME": "web"}, wantSource: "pods/web", wantDir: true},
		{name: "expression with a missing variable", volume: "scratch", expr: "$(POD_NAME)/$(NODE)", env: map[string]string{"POD_NAME": "web"},
			wantErr: `volumeMount "scratch" of container "app": subPathExpr "$(POD_NAME)/$(NODE)": missing value for NODE`},
		{name: "absolute", volume: "scratch", subPath: "/etc", wantErr: `volumeMount "scratch" of container "app": subPath "/etc" must not be an absolute path`},
		{name: "backsteps", volume: "scratch", subPath: "data/../../x", wantErr: `volumeMount "scratch" of container "app": subPath "data/../../x" must not contain '..'`},
		{name: "expression expanding to backsteps", volume: "scratch", expr: "$(P)", env: map[string]string{"P": "../x"},
			wantErr: `volumeMount "scratch" of container "app": subPath "../x" must not contain '..'`},
		{name: "absolute symlink out", volume: "scratch", subPath: "abs-escape",
			wantErr: `volumeMount "scratch" of container "app": prepare subPath "abs-escape": subPath resolves to ` + outside + `, outside the volume ` + scratch},
		{name: "relative symlink out", volume: "scratch", subPath: "rel-escape/tmp", wantErr: "outside the volume"},
		{name: "creating through a symlink out", volume: "scratch", subPath: "abs-escape/new", wantErr: "outside the volume"},
		{name: "chained symlink out", volume: "scratch", subPath: "chain/y", wantErr: "outside the volume"},
		{name: "dangling symlink", volume: "scratch", subPath: "dangling/y", wantErr: "resolve subPath: lstat " + filepath.Join(e.dir, "missing") + ": no such file or directory"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
				{Name: tt.volume, MountPath: "/mnt", SubPath: tt.subPath, SubPathExpr: tt.expr},
			}}
			mounts, err := e.mgr.Mounts(pod, c, paths, ContainerOptions{Env: tt.env})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
					t.Errorf("a directory was created outside the volume")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(e.podDir("uid1"), "volume-subpaths", tt.volume, "app", "0")
			if mounts[0].HostPath != target {
				t.Fatalf("host path = %s, want the pinned target %s", mounts[0].HostPath, target)
			}
			m, ok := e.mounter.Get(target)
			if !ok || m.Type != "bind" {
				t.Fatalf("no bind mount on %s", target)
			}
			base, _ := filepath.EvalSymlinks(paths[tt.volume])
			wantSource, _ := filepath.EvalSymlinks(filepath.Join(base, tt.wantSource))
			if m.Source != wantSource {
				t.Errorf("bind source = %s, want %s", m.Source, wantSource)
			}
			srcInfo, err := os.Stat(wantSource)
			if err != nil {
				t.Fatal(err)
			}
			tgtInfo, err := os.Lstat(target)
			if err != nil || tgtInfo.IsDir() != srcInfo.IsDir() {
				t.Errorf("target %s is dir=%v, source dir=%v (%v)", target, tgtInfo != nil && tgtInfo.IsDir(), srcInfo.IsDir(), err)
			}
			if tt.wantDir {
				// Created with the volume root's mode.
				rootMode := fileMode(t, paths[tt.volume])
				if got := fileMode(t, wantSource); got != rootMode {
					t.Errorf("created subPath mode = %v, want the volume's %v", got, rootMode)
				}
			}
			_ = i
		})
	}
}

func mustSymlink(t *testing.T, oldname, newname string) {
	t.Helper()
	if err := os.Symlink(oldname, newname); err != nil {
		t.Fatal(err)
	}
}

func TestRecursiveReadOnly(t *testing.T) {
	enabled := corev1.RecursiveReadOnlyEnabled
	ifPossible := corev1.RecursiveReadOnlyIfPossible
	tests := []struct {
		name      string
		supported bool
		mode      *corev1.RecursiveReadOnlyMode
		readOnly  bool
		want      bool
		wantErr   string
	}{
		{name: "unset", readOnly: true},
		{name: "if possible, supported", supported: true, mode: &ifPossible, readOnly: true, want: true},
		{name: "if possible, unsupported", mode: &ifPossible, readOnly: true},
		{name: "enabled, supported", supported: true, mode: &enabled, readOnly: true, want: true},
		{name: "enabled, unsupported", mode: &enabled, readOnly: true, wantErr: "recursive read-only mounts are not supported by the container runtime"},
		{name: "enabled, writable", supported: true, mode: &enabled, wantErr: "recursiveReadOnly Enabled needs a read-only mount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.RecursiveReadOnlySupported = tt.supported })
			pod, paths := mountsPod(t, e)
			c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
				{Name: "host", MountPath: "/h", ReadOnly: tt.readOnly, RecursiveReadOnly: tt.mode}}}
			mounts, err := e.mgr.Mounts(pod, c, paths, ContainerOptions{})
			if tt.wantErr != "" {
				if err == nil || !strings.HasSuffix(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if mounts[0].RecursiveReadOnly != tt.want {
				t.Errorf("recursive read-only = %v, want %v", mounts[0].RecursiveReadOnly, tt.want)
			}
		})
	}
}

func TestPodHostnameAndDomain(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	tests := []struct {
		name                 string
		pod                  corev1.Pod
		wantHost, wantDomain string
		wantErr              string
	}{
		{name: "name", pod: corev1.Pod{}, wantHost: "web"},
		{name: "hostname and subdomain", pod: corev1.Pod{Spec: corev1.PodSpec{Hostname: "h", Subdomain: "s"}}, wantHost: "h", wantDomain: "s.ns1.svc.cluster.local"},
		{name: "override", pod: corev1.Pod{Spec: corev1.PodSpec{HostnameOverride: ptr("my.host"), Subdomain: "s"}}, wantHost: "my.host"},
		{name: "long hostname cut", pod: corev1.Pod{Spec: corev1.PodSpec{HostnameOverride: ptr(long)}}, wantHost: strings.Repeat("a", 62)},
		{name: "bad hostname", pod: corev1.Pod{Spec: corev1.PodSpec{Hostname: "Bad_Name"}}, wantErr: `pod hostname "Bad_Name" is not a valid DNS label`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod
			pod.Name, pod.Namespace = "web", "ns1"
			h, d, err := PodHostnameAndDomain(&pod, "cluster.local")
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || h != tt.wantHost || d != tt.wantDomain {
				t.Errorf("= %q, %q, %v; want %q, %q", h, d, err, tt.wantHost, tt.wantDomain)
			}
		})
	}
}
