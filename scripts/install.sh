#!/usr/bin/env bash
# Sets up k1s on a fresh Debian machine: installs what is missing, builds
# the binary, installs it as /usr/local/bin/k1s and starts a single-node
# cluster (a systemd service when systemd runs, else a background process
# logging to /var/log/k1s.log). Extra arguments go to `k1s server`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

./scripts/deps.sh
make build
install -m 0755 bin/k1s /usr/local/bin/k1s

if [ -d /run/systemd/system ]; then
	cat > /etc/systemd/system/k1s.service <<UNIT
[Unit]
Description=k1s - a Kubernetes cluster in one binary
After=network-online.target
Wants=network-online.target

[Service]
Type=exec
ExecStart=/usr/local/bin/k1s server $*
KillMode=process
Delegate=yes
LimitNOFILE=1048576
Restart=always
RestartSec=5s

[Install]
WantedBy=multi-user.target
UNIT
	systemctl daemon-reload
	systemctl enable k1s >/dev/null 2>&1
	systemctl restart k1s
else
	mkdir -p /run/k1s
	if [ -f /run/k1s/k1s.pid ] && kill -0 "$(cat /run/k1s/k1s.pid)" 2>/dev/null; then
		kill "$(cat /run/k1s/k1s.pid)"
		while kill -0 "$(cat /run/k1s/k1s.pid)" 2>/dev/null; do sleep 0.2; done
	fi
	# shellcheck disable=SC2068
	nohup /usr/local/bin/k1s server $@ >>/var/log/k1s.log 2>&1 &
	echo $! > /run/k1s/k1s.pid
fi

for _ in $(seq 1 300); do
	if /usr/local/bin/k1s kubectl get --raw /readyz >/dev/null 2>&1; then
		echo "k1s is running. Try: k1s kubectl get nodes,namespaces"
		exit 0
	fi
	sleep 0.2
done
echo "k1s did not become ready within 60s; see /var/log/k1s.log or journalctl -u k1s" >&2
exit 1
