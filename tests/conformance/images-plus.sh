#!/usr/bin/env bash
# images-plus.sh [WORK] — adds the network tools of upstream's test images to
# the stand-ins that ../shared/conformance/images.sh builds, so that the
# Service and DNS [Conformance] specs can run here. Run it once after a
# run.sh (or images.sh) has written WORK/images; it writes WORK/images/zz-*.tar,
# which `k1s images import WORK/images/*.tar` imports last, so their tags win.
#
# Upstream's agnhost image (Alpine) carries OpenBSD netcat, dig and curl,
# and glibc-dns-testing carries dig and getent; the shared stand-ins are
# Debian's busybox only (busybox nc has no -v or -t, and there is no dig),
# which every Service reachability check (`nc -v -t -w 2 NAME PORT`) and
# every DNS probe (`dig +search …`, `getent hosts …`) of the suite needs.
# This adds Debian's nc.openbsd, dig, getent and curl, with their shared
# libraries, under /usr/local/bin (first on the images' PATH), and makes
# /bin/sh Debian's bash (busybox's ash would run its own nc applet instead):
#   zz-agnhost.tar            agnhost:2.66.1 and :2.55  (+ nc, dig, getent, curl)
#   zz-kitten.tar, zz-nautilus.tar                      (the same, their html)
#   zz-glibc-dns-testing.tar  glibc-dns-testing:2.1.1   (busybox + dig, getent)
#   zz-busybox.tar            busybox:1.37.0-2 (every applet under /bin, as
#                             upstream's; /bin/sh bash, see busybox_plus)
# Needs root and Debian's netcat-openbsd, bind9-dnsutils and curl packages
# (installed when missing).
#
# It also builds the two images of the Aggregator spec ("Should be able to
# support the 1.17 Sample API Server using the current Aggregator"), which
# images.sh leaves out, under the names test/utils/image/manifest.go gives:
#   zz-sample-apiserver.tar   e2e-test-images/sample-apiserver:1.29.2
#                             ENTRYPOINT /sample-apiserver, as upstream's
#                             Dockerfile (the spec passes Args only)
#   zz-etcd.tar               registry.k8s.io/etcd:3.7.0-0
#                             /usr/local/bin/etcd (the spec's Command)
# Both are the busybox stand-in root plus a static Go binary built offline
# (GOPROXY=off, CGO off) in a temporary module from the module cache:
# k8s.io/sample-apiserver at the version the suite's own module graph pins
# (v0.37.1 for v1.37.1; upstream's 1.29.2 image holds Kubernetes 1.29's),
# and etcd's etcdmain at the version of go.etcd.io/etcd/server/v3 in k1s's
# go.mod (v3.7.3; the image tag names 3.7.0, which the cache lacks). Needs
# go and those modules in the cache (k1s's build and build.sh's fill it);
# nothing is fetched. AGGREGATOR_ONLY=1 builds only these two (no network
# tools, no apt). Every tarball is written beside its name and renamed, so
# a run importing WORK/images meanwhile never reads half of one.
#
#   ../shared/conformance/run.sh bin/k1s FOCUS    # once, to build WORK
#   tests/conformance/images-plus.sh /tmp/conf-build
#   ../shared/conformance/run.sh bin/k1s FOCUS    # now with the tools
#   ../shared/conformance/run.sh bin/k1s 'Aggregator.*\[Conformance\]'
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$(cd "$here/../../../shared/conformance" 2>/dev/null && pwd || echo /work/shared/conformance)}
WORK=${1:-${WORK:-/tmp/conf-build}}
out=${IMAGES_DIR:-$WORK/images}
[ -f "$out/agnhost.tar" ] || { echo "images-plus: $out/agnhost.tar missing: run images.sh (or run.sh) first" >&2; exit 1; }
repo=$(cd "$here/../.." && pwd)
need=()
if [ "${AGGREGATOR_ONLY:-0}" != 1 ]; then
  command -v nc.openbsd >/dev/null || need+=(netcat-openbsd)
  command -v dig >/dev/null || need+=(bind9-dnsutils)
  command -v curl >/dev/null || need+=(curl)
fi
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
r=$(mktemp -d); trap 'rm -rf "$r"' EXIT

# tools DIR: the four tools and every library they load, into DIR.
tools() {
  local d=$1 bin lib
  mkdir -p "$d/usr/local/bin"
  cp -L "$(command -v nc.openbsd)" "$d/usr/local/bin/nc"
  cp -L "$(command -v dig)" "$d/usr/local/bin/dig"
  cp -L "$(command -v getent)" "$d/usr/local/bin/getent"
  cp -L "$(command -v curl)" "$d/usr/local/bin/curl"
  for bin in nc.openbsd dig getent curl; do
    for lib in $(ldd "$(command -v $bin)" | grep -o '/[^ ]*'); do
      mkdir -p "$d$(dirname "$lib")"
      cp -L "$lib" "$d$lib"
    done
  done
  # curl's stand-in script from images.sh gives way to the real one.
  rm -f "$d/usr/bin/curl"
  # Debian's static busybox ash runs its own applets before searching
  # PATH (busybox nc would shadow the real one): /bin/sh and /bin/bash
  # become Debian's bash, as Alpine's shell searches PATH.
  rm -f "$d/bin/sh" "$d/bin/bash"
  cp -L /bin/bash "$d/bin/bash"
  ln -s bash "$d/bin/sh"
  for lib in $(ldd /bin/bash | grep -o '/[^ ]*'); do
    mkdir -p "$d$(dirname "$lib")"
    cp -L "$lib" "$d$lib"
  done
  [ -f "$d/etc/nsswitch.conf" ] || echo 'hosts: files dns' >"$d/etc/nsswitch.conf"
}

# plus NAME REF...: unpack WORK/images/NAME.tar, add the tools, write zz-NAME.tar
# with the same image config and tags.
plus() {
  local name=$1; shift
  local d=$r/$name; mkdir -p "$d/root" "$d/x"
  tar -C "$d/x" -xf "$out/$name.tar"
  tar -C "$d/root" -xf "$d/x/layer.tar"
  local cfgfile; cfgfile=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["Config"])' "$d/x/manifest.json")
  local cfg; cfg=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["config"]))' "$d/x/$cfgfile")
  tools "$d/root"
  mkimg "$out/zz-$name.tar" "$d/root" "$cfg" "$@"
}

# mkimg OUT.tar ROOTFS CONFIG REF...: mkimg.sh into a temporary file renamed
# over OUT, so that a run importing WORK/images meanwhile never reads half
# a tarball.
mkimg() {
  local dst=$1; shift
  "$shared/mkimg.sh" "$dst.partial" "$@"
  mv -f "$dst.partial" "$dst"
}

# gobuild DIR OUT PKG [GO.MOD]: builds the main package PKG, static and
# stripped, in the temporary module DIR, from the module cache only. With
# GO.MOD the module starts from that file's requirements (k1s's, whose
# versions are all in the cache); without it, from PKG's module's own.
gobuild() {
  local d=$1 bin=$2 pkg=$3 gomod=${4:-}
  mkdir -p "$d"
  (
    cd "$d"
    export GOPROXY=off GOFLAGS=-mod=mod GOSUMDB=off GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off
    if [ -n "$gomod" ]; then
      sed 's#^module .*#module k1s.test/imagebuild#' "$gomod" >go.mod
      cp "$(dirname "$gomod")/go.sum" go.sum
    else
      go mod init k1s.test/imagebuild >/dev/null 2>&1
      go get "$pkg" 2>go-get.log || { cat go-get.log >&2; exit 1; }
    fi
    go build -trimpath -ldflags '-s -w' -o "$bin" "${pkg%@*}"
  )
}

# busyroot DIR: the busybox stand-in's root filesystem (images.sh's).
busyroot() {
  mkdir -p "$1/x" "$1/root"
  tar -C "$1/x" -xf "$out/busybox.tar"
  tar -C "$1/root" -xf "$1/x/layer.tar"
  rm -rf "$1/x"
}

# aggregator: the sample-apiserver and etcd images of the Aggregator spec.
aggregator() {
  local sav etcdv d=$r/agg
  sav=$(cd "$shared" && go list -m -f '{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}' k8s.io/sample-apiserver)
  etcdv=$(cd "$repo" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
  echo "images-plus: building k8s.io/sample-apiserver@$sav and etcd $etcdv (offline)"
  gobuild "$d/sa-mod" "$d/sample-apiserver" "k8s.io/sample-apiserver@$sav"
  mkdir -p "$d/etcd-mod"
  cat >"$d/etcd-mod/main.go" <<'GO'
// Command etcd is etcd's server, as its own main package runs it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  gobuild "$d/etcd-mod" "$d/etcd" . "$repo/go.mod"
  "$d/etcd" --version | grep -q "etcd Version: ${etcdv#v}" || { echo "images-plus: built etcd is not $etcdv" >&2; return 1; }

  busyroot "$d/sa"
  install -m 0755 "$d/sample-apiserver" "$d/sa/root/sample-apiserver"
  mkimg "$out/zz-sample-apiserver.tar" "$d/sa/root" \
    "{\"Entrypoint\":[\"/sample-apiserver\"],\"Env\":[$PATHENV]}" "$E2E/sample-apiserver:1.29.2"

  busyroot "$d/etcd-img"
  install -m 0755 "$d/etcd" "$d/etcd-img/root/usr/local/bin/etcd"
  mkdir -p "$d/etcd-img/root/var/etcd"
  mkimg "$out/zz-etcd.tar" "$d/etcd-img/root" \
    "{\"Cmd\":[\"/usr/local/bin/etcd\"],\"Env\":[$PATHENV],\"WorkingDir\":\"/var/etcd\"}" "registry.k8s.io/etcd:3.7.0-0"
}

# busybox_plus: the busybox stand-in as upstream's busybox image has it:
# every applet also under /bin (Debian's busybox lists sysctl and others
# under /sbin; the Sysctls spec runs /bin/sysctl), and a /bin/sh that keeps
# environment variables whose names are not shell identifiers (1-data-1;
# upstream's busybox 1.37 ash keeps them, Debian's 1.35 drops them): bash.
busybox_plus() {
  local d=$r/bb p
  busyroot "$d"
  for p in $("$d/root/bin/busybox" --list-full); do
    case $p in
      sbin/*|usr/sbin/*|usr/bin/*) [ -e "$d/root/bin/${p##*/}" ] || ln -s /bin/busybox "$d/root/bin/${p##*/}" ;;
    esac
  done
  rm -f "$d/root/bin/sh"
  cp -L /bin/bash "$d/root/bin/sh"
  for p in $(ldd /bin/bash | grep -o '/[^ ]*'); do
    mkdir -p "$d/root$(dirname "$p")"
    cp -L "$p" "$d/root$p"
  done
  mkimg "$out/zz-busybox.tar" "$d/root" "{\"Env\":[$PATHENV],\"Cmd\":[\"sh\"]}" "$E2E/busybox:1.37.0-2"
}

E2E=registry.k8s.io/e2e-test-images
PATHENV='"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"'
if [ "${AGGREGATOR_ONLY:-0}" != 1 ]; then
  busybox_plus
  plus agnhost "$E2E/agnhost:2.66.1" "$E2E/agnhost:2.55"
  plus kitten "$E2E/kitten:1.8"
  plus nautilus "$E2E/nautilus:1.8"
  plus glibc-dns-testing "$E2E/glibc-dns-testing:2.1.1"
fi
aggregator
ls -la "$out"/zz-*.tar
