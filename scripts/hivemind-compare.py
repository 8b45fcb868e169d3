#!/usr/bin/env python3
"""Run HIVEMIND's own evaluation harness against three targets, side by side.

HIVEMIND's evaluation/ (its mock API, mock agents, scenarios and harness) is
used as it is, from a checkout named by $HIVEMIND_DIR (nothing of it is kept in
this repository). For each scenario and seed the harness runs its mock agents

  direct    against its mock API,
  hivemind  through HIVEMIND's own proxy (the harness's use_hivemind=True path),
  apiary    through `apiary gateway` ($APIARY_BIN), started on the port the
            harness allocated for the proxy, with the scenario's concurrency.

The only thing this driver changes is what the harness cannot be told: the
mock API's window length (--window; HIVEMIND's own runs use 60 s). It prints a
progress line per run on stderr and one JSON object per run on stdout.

Usage:
  HIVEMIND_DIR=/path/to/hivemind APIARY_BIN=bin/apiary \
    python3 scripts/hivemind-compare.py --modes direct,hivemind,apiary --window 60 > runs.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import subprocess
import sys
import time

HIVEMIND_DIR = os.environ.get("HIVEMIND_DIR")
if not HIVEMIND_DIR:
    sys.exit("hivemind-compare: set HIVEMIND_DIR to a checkout of HIVEMIND (the directory holding evaluation/ and src/)")
sys.path[:0] = [HIVEMIND_DIR, os.path.join(HIVEMIND_DIR, "src")]

import httpx  # noqa: E402

import evaluation.harness as harness  # noqa: E402
from evaluation.mock_api import MockAPIServer  # noqa: E402
from evaluation.scenarios import ALL_SCENARIOS  # noqa: E402

SCENARIOS = ["micro-5", "micro-10", "micro-20", "micro-50", "replay-11", "stress", "latency-spike"]


MOCKS: list = []  # the mock APIs started, for their first window's start


def windowed_server(window: float):
    """MockAPIServer whose fixed window lasts window seconds instead of 60, and
    which notes when it served each successful request (for the floor; the
    answers are the mock's own)."""

    class Windowed(MockAPIServer):
        def __init__(self, config=None):
            super().__init__(config)
            self._rate_state.window_seconds = window
            self._rate_state_started = self._rate_state.window_start
            self.served: list[tuple[str, float, float]] = []  # (agent, arrived, answered)
            MOCKS.append(self)

        async def _handle_messages(self, request):
            arrived = time.time()
            resp = await super()._handle_messages(request)
            if resp.status_code == 200:
                self.served.append((request.headers.get("x-hivemind-agent-id", ""), arrived, time.time()))
            return resp

    return Windowed


class ApiaryHarness(harness.BenchmarkHarness):
    """The harness, with `apiary gateway` where it would start HIVEMIND's proxy."""

    def __init__(self, binary: str, log_path: str, concurrency: int) -> None:
        super().__init__()
        self.binary = binary
        self.log_path = log_path
        self.concurrency = concurrency
        self.proc: subprocess.Popen | None = None

    async def _start_proxy(self, scenario) -> None:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [self.binary, "gateway",
             "--listen", f"127.0.0.1:{self._proxy_port}",
             "--upstream", f"anthropic=http://127.0.0.1:{self._api_port}",
             "--max-concurrency", str(self.concurrency),
             "--ledger", os.path.join(os.path.dirname(self.log_path) or ".", f"ledger-{self._proxy_port}.db"),
             "--log-level", "warn"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        url = f"http://127.0.0.1:{self._proxy_port}/_apiary/health"
        deadline = time.monotonic() + 30  # a loaded machine can take a while to start it
        async with httpx.AsyncClient() as client:
            while time.monotonic() < deadline:
                try:
                    if (await client.get(url, timeout=1.0)).status_code == 200:
                        return
                except (httpx.ConnectError, httpx.ReadError, httpx.TimeoutException):
                    pass
                await asyncio.sleep(0.05)
        self._stop_proxy()  # the harness does not stop a proxy that never started
        raise TimeoutError("apiary gateway did not become ready")

    def _stop_proxy(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    async def _stop_all(self) -> None:
        self._stop_proxy()
        await super()._stop_all()


def floor_seconds(scenario, mock, window: float, first_left: float, proxy_cap: int = 0) -> dict:
    """The least wall time any proxy could need, from what the mock did in this
    run (its latencies are random, a fifth of latency-spike's answers take five
    times as long, and no proxy makes the mock answer faster than it did):

    chain: no agent finishes before the mock has served its turns one after
      another, each taking as long as the mock took to answer it here, with the
      mock agent's 50 ms pause between turns;
    rate:  the S successful requests cannot outrun the limit L: R = S - L(w-1)
      of them go in window w = ceil(S/L) or later (the mock's first window began
      when it started, first_left seconds before the agents' start; each later
      one begins at its first request), so some agent makes ceil(R/agents) turns
      one after another in that window, each taking the mock's mean answering
      time m, and under a concurrency cap c the mock needs R*m/c for them;
    proxy: the rate floor again, with c the proxy's own concurrency cap as well
      (proxy_cap: the harness gives HIVEMIND's proxy max_concurrency equal to the
      scenario's hm_max_concurrency, and this driver gives apiary the same as
      --max-concurrency unless --apiary-max-concurrency says otherwise), so that
      R*m/c counts for a proxy whatever the mock's cap. It is the floor for a proxy held to that cap, not for direct runs."""
    served = list(mock.served) if mock else []
    per_agent: dict[str, list[float]] = {}
    for agent, arrived, answered in served:
        per_agent.setdefault(agent, []).append(answered - arrived)
    chain = max((sum(d) + (len(d) - 1) * 0.05 for d in per_agent.values()), default=0.0)
    succeeded, limit = len(served), scenario.api_requests_per_minute
    rate = proxy_rate = 0.0
    if succeeded:
        windows = math.ceil(succeeded / limit)
        start = first_left + (windows - 2) * window if windows >= 2 else 0.0
        mean = sum(answered - arrived for _, arrived, answered in served) / succeeded
        last = succeeded - limit * (windows - 1)
        turns = math.ceil(last / scenario.num_agents)
        work = turns * mean + (turns - 1) * 0.05
        if scenario.api_max_concurrent > 0:
            work = max(work, last * mean / scenario.api_max_concurrent)
        rate = start + work
        if proxy_cap > 0:
            proxy_rate = start + max(work, last * mean / proxy_cap)
    out = {"floor_s": round(max(chain, rate), 2), "floor_chain_s": round(chain, 2), "floor_rate_s": round(rate, 2)}
    if proxy_cap > 0:
        out["proxy_floor_s"] = round(max(chain, proxy_rate), 2)
    return out


async def run_one(name: str, mode: str, window: float, seed: int, binary: str, logdir: str,
                  apiary_concurrency: int = 0) -> dict:
    scenario = ALL_SCENARIOS[name]()
    # HIVEMIND's proxy gets the scenario's concurrency from the harness; apiary
    # gets the same unless --apiary-max-concurrency says otherwise.
    cap = {"direct": 0, "hivemind": scenario.hm_max_concurrency,
           "apiary": apiary_concurrency or scenario.hm_max_concurrency}[mode]
    harness.MockAPIServer = windowed_server(window)
    MOCKS.clear()
    random.seed(seed)
    if mode == "apiary":
        h = ApiaryHarness(binary, os.path.join(logdir, f"apiary-{name}-{int(window)}s-{seed}.log"), cap)
        res = await h.run_scenario(scenario, use_hivemind=True)
    else:
        h = harness.BenchmarkHarness()
        res = await h.run_scenario(scenario, use_hivemind=(mode == "hivemind"))
    s = res.summary()
    s["mode"] = mode
    s["window_s"] = window
    s["seed"] = seed
    s["proxy_max_concurrency"] = cap
    api = res.mock_api_stats or {}
    s["upstream_requests"] = api.get("total_requests")
    s["upstream_429"] = api.get("total_rate_limited")
    s["upstream_errors"] = api.get("total_errors")
    first_left = window - (res.started_at - MOCKS[0]._rate_state_started) if MOCKS else window
    s.update(floor_seconds(scenario, MOCKS[0] if MOCKS else None, window, first_left, cap))
    s["wall_over_floor"] = round(res.wall_time_s / s["floor_s"], 3) if s["floor_s"] else None
    if s.get("proxy_floor_s"):
        s["wall_over_proxy_floor"] = round(res.wall_time_s / s["proxy_floor_s"], 3)
    s["errors"] = sorted({e for r in res.agent_results for e in r.errors})[:5]
    if MOCKS:
        s["turns_per_window"] = turns_per_window(MOCKS[0], window)
    return s


def turns_per_window(mock, window: float) -> list[list[int]]:
    """Each of the mock's windows, the successful requests it counted from each
    agent (agents in name order). The mock starts a window with the first
    request after the one before it has expired."""
    agents = sorted({a for a, _, _ in mock.served})
    out: list[dict[str, int]] = []
    start = mock._rate_state_started
    for agent, arrived, _ in sorted(mock.served, key=lambda r: r[1]):
        if not out or arrived >= start + window:
            if out:
                start = arrived
            out.append({})
        out[-1][agent] = out[-1].get(agent, 0) + 1
    return [[w.get(a, 0) for a in agents] for w in out]


async def main_async(args) -> None:
    names = SCENARIOS if args.scenarios == "all" else args.scenarios.split(",")
    modes = args.modes.split(",")
    os.makedirs(args.logdir, exist_ok=True)
    total = len(names) * len(modes) * len(args.seeds)
    done = 0
    t0 = time.monotonic()
    for seed in args.seeds:
        for name in names:
            for mode in modes:
                print(f"hivemind-compare: [{done + 1}/{total}] {name} {mode} window={args.window:g}s seed={seed} "
                      f"({time.monotonic() - t0:.0f}s elapsed)", file=sys.stderr, flush=True)
                s = await run_one(name, mode, args.window, seed, args.binary, args.logdir, args.apiary_max_concurrency)
                done += 1
                print(f"hivemind-compare:   {name} {mode}: {s['agents_dead']}/{s['num_agents']} dead, "
                      f"wall {s['wall_time_s']:.1f}s (floor {s['floor_s']:.2f}s, ×{s['wall_over_floor']}"
                      + (f"; proxy floor {s['proxy_floor_s']:.2f}s, ×{s['wall_over_proxy_floor']}" if s.get("proxy_floor_s") else "")
                      + f"), 429s {s['upstream_429']}",
                      file=sys.stderr, flush=True)
                print(json.dumps(s), flush=True)
                await asyncio.sleep(0.5)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--modes", default="direct,hivemind,apiary")
    p.add_argument("--scenarios", default="all")
    p.add_argument("--window", type=float, default=60.0, help="the mock API's window in seconds (HIVEMIND's: 60)")
    p.add_argument("--seeds", type=lambda v: [int(x) for x in v.split(",")], default=[1])
    p.add_argument("--apiary-max-concurrency", type=int, default=0,
                   help="apiary's --max-concurrency (default: the scenario's, as the harness gives HIVEMIND's proxy)")
    p.add_argument("--binary", default=os.environ.get("APIARY_BIN", "bin/apiary"))
    p.add_argument("--logdir", default=os.environ.get("OUT", "bench-results") + "/hivemind")
    args = p.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
