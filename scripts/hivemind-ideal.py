#!/usr/bin/env python3
"""How close to hivemind-compare.py's floor an ideal proxy gets, by simulation.

The floor (scripts/hivemind-compare.py, floor_seconds) counts the last
window's turns at the mock's *mean* answering time. The mock draws every
latency at random (HIVEMIND's evaluation/mock_api.py: base + gauss(0, jitter),
times the spike multiplier for a spike_rate share of answers, at least 10 ms),
so even a proxy that wastes nothing ends when the slowest agent's chain in
the last window does, which is longer than the mean chain.

This simulates that ideal proxy for one scenario of HIVEMIND's: its turns
split evenly across windows (as many as the limit lets each agent have in
every window but the last, the rest in the last), the last window opened at
its very boundary, no proxy delay, no concurrency cap, and the mock agent's
50 ms pause between turns. The scenario's numbers are read from HIVEMIND's
own scenarios.py; the mock's latency model is HIVEMIND's, as above. It prints
the distribution of the ideal wall over the floor.

Usage:
  HIVEMIND_DIR=/path/to/hivemind python3 scripts/hivemind-ideal.py --scenario latency-spike --window 10
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys

HIVEMIND_DIR = os.environ.get("HIVEMIND_DIR")
if not HIVEMIND_DIR:
    sys.exit("hivemind-ideal: set HIVEMIND_DIR to a checkout of HIVEMIND (the directory holding evaluation/ and src/)")
sys.path[:0] = [HIVEMIND_DIR, os.path.join(HIVEMIND_DIR, "src")]

from evaluation.mock_api import MockAPIConfig  # noqa: E402
from evaluation.scenarios import ALL_SCENARIOS  # noqa: E402

PAUSE = 0.05  # the mock agent's pause between turns


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="latency-spike")
    p.add_argument("--window", type=float, default=10.0, help="the mock's window in seconds")
    p.add_argument("--first-left", type=float, default=None,
                   help="seconds of the first window left when the agents start (default: the whole window)")
    p.add_argument("--trials", type=int, default=20000)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    sc = ALL_SCENARIOS[args.scenario]()
    spike_mult = MockAPIConfig().latency_spike_multiplier
    rng = random.Random(args.seed)

    def latency() -> float:
        ms = sc.api_base_latency_ms + rng.gauss(0, sc.api_latency_jitter_ms)
        if rng.random() < sc.api_latency_spike_rate:
            ms *= spike_mult
        return max(10.0, ms) / 1000.0

    agents, turns, limit = sc.num_agents, sc.agent_turns, sc.api_requests_per_minute
    total = agents * turns
    windows = math.ceil(total / limit)
    if windows < 2:
        sys.exit(f"hivemind-ideal: {args.scenario} fits one window; its floor is the latency chain")
    per_window = limit // agents  # each agent's turns in every window but the last
    last = turns - per_window * (windows - 1)
    if last <= 0 or last * agents > limit:
        sys.exit(f"hivemind-ideal: {args.scenario} does not split evenly by agent; not modelled")
    floor_last = math.ceil((total - limit * (windows - 1)) / agents)  # the floor's turns in the last window
    first_left = args.window if args.first_left is None else args.first_left
    start = first_left + (windows - 2) * args.window  # the last window opens
    ratios = []
    for _ in range(args.trials):
        lat = [[latency() for _ in range(turns)] for _ in range(agents)]
        mean = sum(map(sum, lat)) / total
        floor = start + floor_last * mean + (floor_last - 1) * PAUSE
        chain = max(sum(a) + (turns - 1) * PAUSE for a in lat)
        wall = max(start + max(sum(a[turns - last:]) + (last - 1) * PAUSE for a in lat), chain)
        ratios.append(wall / max(floor, chain))
    ratios.sort()
    n = len(ratios)
    print(f"{args.scenario}, {args.window:g} s windows, {n} trials: ideal wall / floor median ×{ratios[n // 2]:.3f}, "
          f"p90 ×{ratios[int(0.9 * n)]:.3f}, max ×{ratios[-1]:.3f}; above ×1.10 in {sum(r > 1.10 for r in ratios) / n:.1%}, "
          f"above ×1.15 in {sum(r > 1.15 for r in ratios) / n:.1%}")


if __name__ == "__main__":
    main()
