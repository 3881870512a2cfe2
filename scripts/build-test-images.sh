#!/usr/bin/env bash
# Builds the images the e2e tests run, from this repository and Debian
# packages only (no registry), as OCI image-layout tarballs:
#
#   _output/images/busybox.tar  k1s.local/busybox:1.36  Debian's busybox-static
#                                with its applet symlinks (sh, ls, wget, nc, ...)
#   _output/images/testapp.tar  k1s.local/testapp:1     tests/images/testapp
#   _output/images/testapp-2.tar k1s.local/testapp:2    the same program with
#                                TESTAPP_VERSION=2 (a second version to roll to)
#
# Idempotent: the tarballs are reproducible and only replaced when their
# content changes. Set OUT to write elsewhere, MKIMAGE to use a built
# internal/ociimage/cmd/mkimage, BUSYBOX to use another static busybox.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=${OUT:-_output/images}
BUSYBOX=${BUSYBOX:-/bin/busybox}
GO=${GO:-go}
export CGO_ENABLED=0

if [ -z "${MKIMAGE:-}" ]; then
	MKIMAGE=_output/bin/mkimage
	"$GO" build -trimpath -ldflags "-s -w" -o "$MKIMAGE" ./internal/ociimage/cmd/mkimage
fi
if [ ! -x "$BUSYBOX" ]; then
	echo "build-test-images: $BUSYBOX not found: install busybox-static (scripts/deps.sh does)" >&2
	exit 1
fi
if ! "$BUSYBOX" --list-full >/dev/null 2>&1; then
	echo "build-test-images: $BUSYBOX is not a busybox" >&2
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$OUT"

# install TMP DEST: move a freshly built image into place unless an
# identical one is there already (so its mtime, which image import keys
# on, stays put).
install_image() {
	if cmp -s "$1" "$2"; then
		rm -f "$1"
		echo "$2: up to date"
	else
		mv -f "$1" "$2"
		echo "$2: written"
	fi
}

# busybox: the static binary, one symlink per applet, and the files a
# shell image is expected to have.
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$work/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$work/group"
args=(
	-name k1s.local/busybox:1.36 -o "$work/busybox.tar"
	-add "$BUSYBOX:/bin/busybox:0755"
	-add "$work/passwd:/etc/passwd:0644"
	-add "$work/group:/etc/group:0644"
	-dir /tmp:1777 -dir /root:0700 -dir /var -dir /home
	-env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	-cmd '["sh"]'
)
while read -r applet; do
	[ -n "$applet" ] && [ "$applet" != "bin/busybox" ] && args+=(-symlink "/$applet:/bin/busybox")
done < <("$BUSYBOX" --list-full | sort -u)
"$MKIMAGE" "${args[@]}"
install_image "$work/busybox.tar" "$OUT/busybox.tar"

# testapp: the static Go server.
"$GO" build -trimpath -ldflags "-s -w" -o "$work/testapp" ./tests/images/testapp
for v in 1 2; do
	name=testapp.tar
	[ "$v" = 1 ] || name=testapp-$v.tar
	"$MKIMAGE" -name k1s.local/testapp:$v -o "$work/$name" \
		-add "$work/testapp:/testapp:0755" -env TESTAPP_VERSION=$v \
		-entrypoint '["/testapp"]' -expose 8080/tcp
	install_image "$work/$name" "$OUT/$name"
done
