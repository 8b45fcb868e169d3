#!/usr/bin/env bash
# Installs what apiary's tests need, idempotently, on a fresh Debian machine
# (run as root). Safe to run again: each step checks before it installs.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'deps: %s\n' "$*" >&2; }

# stop_package_etcd stops the etcd service that installing etcd-server
# started, if it started one.
stop_package_etcd() {
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now etcd.service >/dev/null 2>&1 || true
		return
	fi
	local pidfile=/run/etcd.pid pid
	[ -r "$pidfile" ] || return 0
	pid=$(cat "$pidfile")
	case "$pid" in '' | *[!0-9]*) return 0 ;; esac
	if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = /usr/bin/etcd ]; then
		say "stopping the etcd service the package started (pid $pid)"
		kill "$pid" 2>/dev/null || true
		rm -f "$pidfile"
	fi
}

# Debian packages: command to look for, then the package that provides it.
apt_wants=(
	"git git"
	"etcd etcd-server"
	"etcdctl etcd-client"
	"chromium chromium"
	"tmux tmux"
	"curl curl"
	"zsh zsh"
	"fish fish"
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
	# etcd-server's package may start a system etcd on 2379 (tests start
	# their own members on free ports). Stop only that service — through
	# systemd when systemd runs it, else the pid its init script recorded,
	# and only if that pid is really the package's etcd — never any other
	# process named etcd: a user's own cluster may be running here.
	for pkg in "${missing[@]}"; do [ "$pkg" = etcd-server ] && stop_package_etcd; done
fi

# Node packages pinned by test/package-lock.json: the agent CLIs the tests
# drive (Claude Code, Codex, Gemini CLI, opencode) and the MCP Inspector.
# Reinstall only when the lock changed since the last install or a CLI is
# missing or not at its pinned version (a half-finished install, a hand-made
# change). Codex and opencode ship their native binaries as per-platform
# optional packages; npm installs the one for this machine.
node_bins=(claude codex gemini opencode mcp-inspector)
stamp=test/node_modules/.apiary-lock.sha256
want=$(sha256sum test/package-lock.json | cut -d' ' -f1)
node_ok() {
	[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] || return 1
	local b
	for b in "${node_bins[@]}"; do
		[ -x "test/node_modules/.bin/$b" ] || return 1
	done
	# Each pinned CLI reports the version the lock names.
	node -e '
		const lock = require("./test/package-lock.json").packages;
		const pins = {"@openai/codex": 1, "@google/gemini-cli": 1, "opencode-ai": 1, "@anthropic-ai/claude-code": 1};
		for (const name of Object.keys(pins)) {
			const want = lock["node_modules/" + name] && lock["node_modules/" + name].version;
			let got;
			try { got = require("./test/node_modules/" + name + "/package.json").version; } catch (e) {}
			if (!want || got !== want) { console.error("deps: " + name + " is " + got + ", the lock pins " + want); process.exit(1); }
		}' || return 1
}
if ! node_ok; then
	say "installing Node packages from test/package-lock.json"
	rm -f "$stamp"
	# npm ci rejects this lock (an optional Windows-only dependency of vite has no
	# lock entry); npm install --no-save installs exactly the locked versions.
	(cd test && npm install --no-save --no-audit --no-fund --loglevel=error >/dev/null)
	for b in "${node_bins[@]}"; do
		[ -x "test/node_modules/.bin/$b" ] || { say "npm install left no test/node_modules/.bin/$b"; exit 1; }
	done
	echo "$want" >"$stamp"
fi

# Go modules (tools included) so a later offline step never stalls.
go mod download
