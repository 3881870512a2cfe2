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
# Needs root and Debian's netcat-openbsd, bind9-dnsutils and curl packages
# (installed when missing).
#
#   ../shared/conformance/run.sh bin/k1s FOCUS    # once, to build WORK
#   tests/conformance/images-plus.sh /tmp/conf-build
#   ../shared/conformance/run.sh bin/k1s FOCUS    # now with the tools
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$(cd "$here/../../../shared/conformance" 2>/dev/null && pwd || echo /work/shared/conformance)}
WORK=${1:-${WORK:-/tmp/conf-build}}
out=${IMAGES_DIR:-$WORK/images}
[ -f "$out/agnhost.tar" ] || { echo "images-plus: $out/agnhost.tar missing: run images.sh (or run.sh) first" >&2; exit 1; }
need=()
command -v nc.openbsd >/dev/null || need+=(netcat-openbsd)
command -v dig >/dev/null || need+=(bind9-dnsutils)
command -v curl >/dev/null || need+=(curl)
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
  "$shared/mkimg.sh" "$out/zz-$name.tar" "$d/root" "$cfg" "$@"
}

E2E=registry.k8s.io/e2e-test-images
plus agnhost "$E2E/agnhost:2.66.1" "$E2E/agnhost:2.55"
plus kitten "$E2E/kitten:1.8"
plus nautilus "$E2E/nautilus:1.8"
plus glibc-dns-testing "$E2E/glibc-dns-testing:2.1.1"
ls -la "$out"/zz-*.tar
