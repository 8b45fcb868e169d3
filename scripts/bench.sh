#!/usr/bin/env bash
# The long benchmarks behind `make bench`. Each prints its own progress on
# stderr and its table on stdout; docs/benchmarks.md records the numbers with
# the command that produced them. Set SCALE to shorten the gateway scenarios
# (1 = the evaluation's real 60-second windows).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/apiary}
SCALE=${SCALE:-0.1}
out=${OUT:-bench-results}
mkdir -p "$out"

run() {
	local name=$1
	shift
	echo "== $name: $*" >&2
	"$@" | tee "$out/$name.txt"
}

run llmfake "$BIN" bench llmfake --duration 5s --concurrency 64
run gateway-overhead "$BIN" bench overhead --duration 10s --rate 1000 --streams 1000
run gateway-scenarios "$BIN" bench gateway --variant all --time-scale "$SCALE"
run gateway-ablations "$BIN" bench gateway --scenario stress,replay-11 --no-direct --ablate retry --time-scale "$SCALE"
# The upstream zoo: 60 randomised upstreams the gateway is told nothing of.
run gateway-zoo "$BIN" bench gateway --zoo "${ZOO_SEEDS:-60}" --no-direct
# HIVEMIND's own harness, direct / HIVEMIND's proxy / apiary, when a checkout
# of HIVEMIND is named (its evaluation/ and src/; nothing of it is kept here).
# Needs Debian's python3-httpx, python3-uvicorn, python3-starlette and
# python3-aiosqlite.
if [ -n "${HIVEMIND_DIR:-}" ]; then
	export HIVEMIND_DIR APIARY_BIN="$BIN" OUT="$out"
	run hivemind-60s /usr/bin/python3 scripts/hivemind-compare.py --window 60
	run hivemind-10s /usr/bin/python3 scripts/hivemind-compare.py --window 10 --seeds 1,2
else
	echo "== hivemind: skipped (set HIVEMIND_DIR to a checkout of HIVEMIND)" >&2
fi
run swarm-scale "$BIN" bench swarm --tasks 4000 --workers 16,32,64,128,256,512,1024 --out "$out/swarm"
run durable-routes go test ./internal/mcpserver -run '^$' -bench SafeWriteRoutes -benchtime 40x -count 6
run worktree-pool go test ./internal/git -run '^$' -bench WorktreePool10k -benchtime 5s -timeout 30m
run worktree-pool-random go test ./internal/git -run TestWorktreePoolRandom -pool.seeds=50
run etcd-capacity go test ./internal/board/etcd/etcdproc -run 'TestCapacity3Members|TestCheckPerf' -etcdproc.full -v
run claim-path go test ./internal/board/etcd -run TestClaimPathScale -etcd.full -v -timeout 30m
run runtime-supervision go test -run '^$' -bench 'AttemptLingering|LongCheck' -benchtime 3x ./internal/agent ./internal/runs
run go-benchmarks go test -run '^$' -bench . -benchtime 1s \
	./internal/sse ./internal/llmapi ./internal/sched ./internal/gateway ./internal/capability ./internal/durable ./internal/plan \
	./internal/board/local
echo "results in $out/" >&2
