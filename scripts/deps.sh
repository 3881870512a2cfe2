#!/usr/bin/env bash
# Installs what building and testing k1s needs on Debian: Debian packages
# (iptables, runc and the CNI plugins for the node agent, busybox-static for
# the e2e test images, make, git) and a
# check that Go is new enough. Idempotent; run as root.
set -euo pipefail

GO_MIN=1.26

if [ "$(id -u)" -ne 0 ]; then
	echo "scripts/deps.sh: run as root (it installs Debian packages)" >&2
	exit 1
fi

pkgs=(ca-certificates git make iptables nftables iproute2 runc containernetworking-plugins busybox-static)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "Installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null 2>&1; then
	echo "scripts/deps.sh: Go $GO_MIN or newer is required (expected at /usr/local/go/bin/go)" >&2
	exit 1
fi
have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$GO_MIN" "$have" | sort -V | head -1)" != "$GO_MIN" ]; then
	echo "scripts/deps.sh: Go $GO_MIN or newer is required, found $have" >&2
	exit 1
fi
