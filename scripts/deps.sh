#!/usr/bin/env bash
# Installs what apiary's tests need, idempotently, on a fresh Debian machine
# (run as root). Safe to run again: each step checks before it installs.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'deps: %s\n' "$*" >&2; }

# Debian packages: command to look for, then the package that provides it.
apt_wants=(
	"git git"
	"etcd etcd-server"
	"etcdctl etcd-client"
	"chromium chromium"
)
missing=()
for pair in "${apt_wants[@]}"; do
	cmd=${pair% *}
	pkg=${pair#* }
	command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
	if [ "$(id -u)" != 0 ]; then
		say "missing ${missing[*]} and not root: install them by hand"
		exit 1
	fi
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# etcd-server's package starts a system etcd on 2379; tests start their
	# own members, so stop it if the package's service came up.
	if command -v systemctl >/dev/null 2>&1; then systemctl disable --now etcd >/dev/null 2>&1 || true; fi
	pkill -x etcd >/dev/null 2>&1 || true
fi

# Node packages pinned by test/package-lock.json. Reinstall only when the lock
# changed since the last install.
stamp=test/node_modules/.apiary-lock.sha256
want=$(sha256sum test/package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -x test/node_modules/.bin/claude ]; then
	say "installing Node packages from test/package-lock.json"
	# npm ci rejects this lock (an optional Windows-only dependency of vite has no
	# lock entry); npm install --no-save installs exactly the locked versions.
	(cd test && npm install --no-save --no-audit --no-fund --loglevel=error >/dev/null)
	echo "$want" >"$stamp"
fi

# Go modules (tools included) so a later offline step never stalls.
go mod download
