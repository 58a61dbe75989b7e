"""Census of the compiled PPO segment: what XLA counts in it and what each part costs.

    python benchmarks/census.py --out benchmarks/results/census_cpu
    python benchmarks/census.py --json --arms afterstates_64 afterstates_64:first_layer_grad_stopped

For each arm (`ARMS`: a recipe of `sailor_jax.config.recipes`, alone or with one change: a
network field, the first layer's gradient stopped, the minibatch shuffle left out, or the
embedding first layer computed as the gather on every backend (`:gather`: the program
accelerators ran before `board_layers.reads_one_hot` chose the matmul for them; on a CPU the
recipe's own program)), all at
the same sizes (`--num-envs` x `--num-steps`, `--update-epochs` x `--num-minibatches`):

- **cost**: XLA's FLOPs and bytes accessed per env step (`throughput.cost_per_env_step`).
- **ops**: the HLO ops by kind of the optimised program (`compiled.as_text()`), per loop
  region: `rollout_step`, `gae_step`, `epoch` (its shuffle), `minibatch` (forward, gradient,
  Adam), `update` (what runs once per update) and `segment` (once per call). Counts are static
  (ops written in the program, inside fusions counted apart) and trip-weighted (an op inside a
  nested loop of known trip count counts that many times, both branches of a conditional
  count); times `runs` (region runs per env step) they say how many ops one env step issues.
  A static count is not a profile: it says what the program is made of, not what it spends.
- **profile** (`--profile DIR`): one more call of each arm traced by `jax.profiler`, its top
  ops by self time (`trace_summary.top_ops`): what the call spent, where the census says only
  what the program holds.
- **time**: the segment's env steps/s, every arm's compiled segment called in turn
  (`--repeats` rounds, medians), and its time over its recipe's unchanged arm (median of the
  per-round ratios); the env + features alone (`throughput.env_fn`, uniformly random moves) for
  the same env steps, over each recipe's time: the env's share.

Rows: one JSON object per arm (`--json` prints them); `--out DIR` writes `census.jsonl.gz` and
the tables as `census.md`.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gzip
import os
import re
import sys
import time
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import throughput  # noqa: E402

from sailor_jax.agents import networks, ppo  # noqa: E402
from sailor_jax.cli import parse_args  # noqa: E402
from sailor_jax.config.recipes import recipe  # noqa: E402
from sailor_jax.errors import UserError, report_user_errors  # noqa: E402
from sailor_jax.game import env  # noqa: E402
from sailor_jax.game.reward import THETA0  # noqa: E402
from sailor_jax.logging import json_line  # noqa: E402
from sailor_lab import trace_summary  # noqa: E402
from sailor_lab.report import machine  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Arm:
    """One compiled segment: a recipe, optionally with one change."""

    recipe: str
    network: tuple[tuple[str, str], ...] = ()  # NetworkConfig fields replaced
    first_layer_grad: bool = True  # False: stop_gradient on the first layer's kernel
    shuffle: bool = True  # False: minibatches in rollout order (no permutation)
    gather: bool = False  # True: the embedding first layer as the gather on every backend


ARMS: dict[str, Arm] = {
    "v0": Arm("v0"),
    "v0:embedding": Arm("v0", (("first_layer", "embedding"),)),  # v0's function, our layer
    "afterstates_64": Arm("afterstates_64"),
    "afterstates_64:first_layer_grad_stopped": Arm("afterstates_64", first_layer_grad=False),
    "afterstates_64:one_hot": Arm("afterstates_64", (("first_layer", "one_hot"),)),
    "afterstates_64:symmetry_none": Arm("afterstates_64", (("symmetry", "none"),)),
    "afterstates_64:board_actions": Arm("afterstates_64", (("actions", "board"),)),
    "afterstates_64:no_shuffle": Arm("afterstates_64", shuffle=False),
    "default": Arm("default"),
    "default:first_layer_grad_stopped": Arm("default", first_layer_grad=False),
    "default:one_hot": Arm("default", (("first_layer", "one_hot"),)),
    "default:symmetry_none": Arm("default", (("symmetry", "none"),)),
    "afterstates_64:gather": Arm("afterstates_64", gather=True),
    "default:gather": Arm("default", gather=True),
}
"""Arm name -> arm; an arm's base is the arm named by its recipe."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Census of the compiled PPO segment: XLA's cost, HLO ops by loop region, times."""

    arms: tuple[str, ...] = tuple(ARMS)
    """Arms to measure (`ARMS`); each arm's recipe arm is added when missing."""
    num_envs: int = 256
    """Envs of every arm's segment."""
    num_steps: int = 32
    """Rollout length of every arm."""
    update_epochs: int = 4
    """Epochs per update of every arm."""
    num_minibatches: int = 8
    """Minibatches per epoch of every arm."""
    updates: int = 2
    """PPO updates per timed segment."""
    repeats: int = 3
    """Timed rounds (every arm once per round, after a warm-up call)."""
    timed: bool = True
    """Time the arms (else only XLA's cost and the op census)."""
    json: bool = False
    """Print one JSON object per arm (else the tables)."""
    out: str = ""
    """Folder for census.jsonl.gz and census.md (none: print only)."""
    profile: str = ""
    """Folder for one `jax.profiler` trace per arm (a call after the timed rounds); each
    arm's row gains the traced call's top ops by self time (`trace_summary`). None: no trace."""


TRIVIAL = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast"})
"""Opcodes that move no data: left out of the op totals."""
KINDS = ("fusion", "dot", "gather", "scatter", "sort", "while", "conditional", "custom-call",
         "dynamic-slice", "dynamic-update-slice", "reduce", "copy", "transpose")
"""Op kinds the tables show (counted at top level and inside fusions together)."""

_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s+(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*)$")
_OPCODE = re.compile(r"\s([a-z][a-z0-9\-]*)\(")
_CALLEE = re.compile(r"\b(calls|body|condition|to_apply|true_computation|false_computation)"
                     r"=%?([\w.\-]+)")
_CALLEES = re.compile(r"\b(?:branch_computations|called_computations)=\{([^}]*)\}")
_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_METADATA = re.compile(r",\s*metadata=\{[^}]*\}")


def _instruction(rhs: str) -> tuple[str, list[str], int | None]:
    """`(opcode, called computations, known trip count)` of `TYPE opcode(operands), attrs`;
    a reduction's `to_apply` (a scalar combiner) is not a called computation."""
    match = _OPCODE.search(rhs)  # the first `opcode(` after a space: types hold none
    opcode, attrs = match.group(1), _METADATA.sub("", rhs[match.end():])
    callees = [name for kind, name in _CALLEE.findall(attrs)
               if kind != "to_apply" or opcode == "call"]
    callees += [c.strip().lstrip("%") for group in _CALLEES.findall(attrs)
                for c in group.split(",") if c.strip()]
    trip = _TRIP.search(rhs)
    return opcode, callees, int(trip.group(1)) if trip else None


def parse_hlo(text: str) -> tuple[dict[str, list[tuple]], str]:
    """`({computation: [(opcode, callees, trip)]}, entry name)` of an HLO module's text."""
    computations, entry, current = {}, None, None
    for line in text.splitlines():
        if current is None:
            header = _COMPUTATION.match(line)
            if header and not line.startswith("HloModule"):
                current = computations.setdefault(header.group(1), [])
                entry = header.group(1) if line.startswith("ENTRY") else entry
        elif line.strip() == "}":
            current = None
        elif instruction := _INSTRUCTION.match(line):
            current.append(_instruction(instruction.group(1)))
    if entry is None:
        raise ValueError("no ENTRY computation in the HLO text")
    return computations, entry


@dataclasses.dataclass(eq=False)
class Loop:
    """A while loop of a compiled program (the entry computation: trip 1): the opcodes of its
    body and condition, at top level and inside fusions, and its nested loops."""

    trip: int | None
    top: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    fused: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    children: list[Loop] = dataclasses.field(default_factory=list)

    def size(self) -> int:
        return (sum(self.top.values()) + sum(self.fused.values())
                + sum(c.size() for c in self.children))


def loop_tree(text: str) -> Loop:
    """The loops of an optimised HLO module's text (`compiled.as_text()`), from its entry."""
    computations, entry = parse_hlo(text)

    def walk(name: str, loop: Loop, fused: bool) -> None:
        for opcode, callees, trip in computations[name]:
            (loop.fused if fused else loop.top)[opcode] += 1
            inner = Loop(trip) if opcode == "while" else loop
            if opcode == "while":
                loop.children.append(inner)
            for callee in callees:
                walk(callee, inner, fused or opcode == "fusion")

    root = Loop(1)
    walk(entry, root, False)
    return root


def _label(root: Loop, cfg) -> dict[str, tuple[Loop, float]]:
    """Region name -> (its loop, its runs per PPO update), told apart by trip counts: the
    update loop (trip U) in the entry, in it the epoch loop (trip E, holding a loop of trip
    M: the minibatch), the largest loop of trip T (the rollout step) and the next (GAE)."""
    u, t, e, m = (cfg.updates_per_segment, cfg.num_steps, cfg.update_epochs,
                  cfg.num_minibatches)
    found = {"segment": (root, 1 / u)}
    update = max((c for c in root.children if c.trip == u), key=Loop.size, default=None)
    if u > 1 and update is not None:
        found["update"] = (update, 1.0)
    parent = found.get("update", found["segment"])[0]
    epochs = [c for c in parent.children if c.trip == e and any(g.trip == m for g in c.children)]
    if epochs:
        epoch = max(epochs, key=Loop.size)
        found["epoch"] = (epoch, e)
        found["minibatch"] = (max((g for g in epoch.children if g.trip == m), key=Loop.size),
                              e * m)
    steps = sorted((c for c in parent.children if c.trip == t and c not in epochs),
                   key=Loop.size, reverse=True)
    for name, loop in zip(("rollout_step", "gae_step"), steps, strict=False):
        found[name] = (loop, t)
    return found


def _fold(loop: Loop, regions: list[Loop]) -> tuple[collections.Counter, ...]:
    """`(static top, static fused, run top, run fused)` opcodes of one run of `loop` with its
    nested loops that are not regions (run counts times their trip counts, unknown: 1)."""
    out = (loop.top.copy(), loop.fused.copy(), loop.top.copy(), loop.fused.copy())
    for child in loop.children:
        if any(child is r for r in regions):
            continue
        inner = _fold(child, regions)
        for k in range(4):
            weight = 1 if k < 2 else (child.trip or 1)
            out[k].update({op: c * weight for op, c in inner[k].items()})
    return out


def regions(root: Loop, cfg) -> dict[str, dict]:
    """Per loop region (`_label`) of the segment of `cfg`: `runs_per_env_step` and the opcode
    counts of one run: `static`, `static_fused` (inside fusions), `run`, `run_fused`
    (trip-weighted)."""
    found = _label(root, cfg)
    loops = [loop for loop, _ in found.values()]
    out = {}
    for name, (loop, runs) in found.items():
        counts = _fold(loop, loops)
        out[name] = {"runs_per_env_step": runs / (cfg.num_envs * cfg.num_steps),
                     **{key: dict(sorted(c.items())) for key, c in
                        zip(("static", "static_fused", "run", "run_fused"), counts, strict=True)}}
    return out


def arm_config(arm: Arm, args: Args):
    """The sized `PPOConfig` of `arm` (the schedule over the timed calls' updates)."""
    base = recipe(arm.recipe)
    cfg = dataclasses.replace(
        base, num_envs=args.num_envs, num_steps=args.num_steps,
        update_epochs=args.update_epochs, num_minibatches=args.num_minibatches,
        updates_per_segment=args.updates,
        network=dataclasses.replace(base.network, **dict(arm.network)))
    return cfg.over_run(args.updates * (args.repeats + 1))


def _first_layer_frozen(make_network):
    """`make_network` whose `apply` stops the gradient of every tower's first kernel (`*_0`)."""
    def make(cfg, head="actor_critic"):
        init, apply = make_network(cfg, head)

        def frozen(params, *inputs):
            params = {k: {**v, "kernel": jax.lax.stop_gradient(v["kernel"])}
                      if k.endswith("_0") else v for k, v in params.items()}
            return apply(params, *inputs)
        return init, frozen
    return make


def _in_order(cfg, batch, key):
    """`ppo.shuffle` without the permutation: minibatches in rollout order."""
    return jax.tree.map(lambda x: x.reshape((cfg.num_minibatches, -1) + x.shape[1:]), batch)


def _gather_only(first_layer: str, backend: str | None = None) -> bool:
    """`board_layers.reads_one_hot` as the CPU answers it, on every backend."""
    return first_layer == "one_hot"


@contextlib.contextmanager
def arm_changes(arm: Arm):
    """Patch `sailor_jax.agents.ppo` for `arm` (this process only) while its segment is
    built and traced."""
    with contextlib.ExitStack() as stack:
        if not arm.first_layer_grad:
            stack.enter_context(mock.patch.object(
                ppo, "make_network", _first_layer_frozen(ppo.make_network)))
        if not arm.shuffle:
            stack.enter_context(mock.patch.object(ppo, "shuffle", _in_order))
        if arm.gather:
            stack.enter_context(mock.patch.object(networks, "reads_one_hot", _gather_only))
        yield


def compile_arm(arm: Arm, cfg) -> tuple:
    """`(compiled segment, runner state, theta, compile seconds)` of `arm` at `cfg`."""
    theta = jnp.asarray(THETA0)
    with arm_changes(arm):  # built afresh (not `make_train`'s cache): the patches trace in
        init, segment = ppo.make_train.__wrapped__(cfg)
        runner = init(jax.random.PRNGKey(0))
        t0 = time.perf_counter()
        compiled = segment.lower(runner, theta).compile()
    return compiled, runner, theta, time.perf_counter() - t0


def census_arm(name: str, args: Args, once: bool | None) -> tuple[dict, tuple]:
    """One arm's row without times, and `(compiled, runner, theta)` to time it."""
    arm = ARMS[name]
    cfg = arm_config(arm, args)
    compiled, runner, theta, compile_s = compile_arm(arm, cfg)
    with arm_changes(arm):
        cost = throughput.cost_per_env_step(cfg, once, throughput.xla_cost(compiled))
    loops = loop_tree(compiled.as_text())
    net = cfg.network
    row = {"arm": name, "recipe": arm.recipe, "base": arm.recipe,
           "first_layer_grad": arm.first_layer_grad, "shuffle": arm.shuffle,
           "gather": arm.gather,
           "hidden_sizes": list(net.hidden_sizes), "first_layer": net.first_layer,
           "symmetry": net.symmetry, "actions": net.actions, "trunk": net.trunk,
           "num_envs": cfg.num_envs, "num_steps": cfg.num_steps,
           "update_epochs": cfg.update_epochs, "num_minibatches": cfg.num_minibatches,
           "updates_per_segment": cfg.updates_per_segment, "compile_s": compile_s, **cost,
           "ops": regions(loops, cfg)}
    return row, (compiled, runner, theta)


def _env_arm(args: Args) -> tuple:
    """The env + features alone for one segment's env steps: `(compiled, state, key)`."""
    n, steps = args.num_envs, args.num_steps * args.updates
    state = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))
    key = jax.random.PRNGKey(1)
    return jax.jit(throughput.env_fn(n, steps, True)).lower(state, key).compile(), state, key


def time_arms(programs: dict[str, tuple], repeats: int) -> dict[str, list[float]]:
    """Seconds per call of each program, the programs called in turn once per round after a
    warm-up round; PPO segments are fed their own runner state back (it is donated), and
    `programs` ends holding each segment's newest state."""
    state = {name: list(p[1:]) for name, p in programs.items()}
    times: dict[str, list[float]] = {name: [] for name in programs}
    for r in range(repeats + 1):
        for name, (compiled, *_) in programs.items():
            t0 = time.perf_counter()
            out = compiled(*state[name])
            jax.block_until_ready(out)
            if r:
                times[name].append(time.perf_counter() - t0)
            if name != "env_features":
                state[name][0] = out[0]
    programs.update({name: (p[0], *state[name]) for name, p in programs.items()})
    return times


def _add_times(rows: list[dict], times: dict[str, list[float]], env_steps: int) -> dict:
    """Put times and ratios into the rows; return the env + features row."""
    t = {name: np.asarray(v) for name, v in times.items()}
    for row in rows:
        mine, base = t[row["arm"]], t[row["base"]]
        row.update(times_s=mine.tolist(), segment_s=float(np.median(mine)),
                   sps=env_steps / float(np.median(mine)),
                   time_vs_base=float(np.median(mine / base)))
    env_t = t["env_features"]
    return {"arm": "env_features", "num_envs": rows[0]["num_envs"], "env_steps": env_steps,
            "times_s": env_t.tolist(), "sps": env_steps / float(np.median(env_t)),
            "share_of": {row["arm"]: float(np.median(env_t / t[row["arm"]]))
                         for row in rows if row["arm"] == row["base"]}}


def run(args: Args) -> list[dict]:
    """Every arm's row (cost, ops, and with `args.timed` times), then the env + features row
    when timed. Host-only; compiles each arm's segment twice (three times for the first)."""
    unknown = [a for a in args.arms if a not in ARMS]
    if unknown:
        raise UserError(f"unknown arm(s) {', '.join(unknown)}", f"known: {', '.join(ARMS)}")
    names = list(dict.fromkeys(n for a in args.arms for n in (ARMS[a].recipe, a)))
    rows, programs, once = [], {}, None
    for name in names:
        row, programs[name] = census_arm(name, args, once)
        once = row["loops_counted_once"]
        rows.append(row)
        print(f"compiled {name} ({row['compile_s']:.0f} s)", file=sys.stderr, flush=True)
    if not args.timed:
        return rows
    programs["env_features"] = _env_arm(args)
    times = time_arms(programs, args.repeats)
    if args.profile:
        for row in rows:
            compiled, *state = programs[row["arm"]]
            row["profile"] = trace_summary.profile_call(
                lambda c=compiled, s=state: c(*s), os.path.join(args.profile, row["arm"]))
    return [*rows, _add_times(rows, times, args.num_envs * args.num_steps * args.updates)]


def _per_env_step(row: dict, kinds: tuple[str, ...] | None) -> float:
    """Ops (of `kinds`, top level and fused; None: every top-level op that moves data) one env
    step runs, summed over the regions, trip-weighted."""
    total = 0.0
    for region in row["ops"].values():
        if kinds is None:
            n = sum(c for op, c in region["run"].items() if op not in TRIVIAL)
        else:
            n = sum(region["run"].get(k, 0) + region["run_fused"].get(k, 0) for k in kinds)
        total += n * region["runs_per_env_step"]
    return total


def tables(rows: list[dict]) -> str:
    """The census as markdown: cost and time per arm, ops per env step, ops per region."""
    arms = [r for r in rows if r["arm"] != "env_features"]
    env_row = next((r for r in rows if r["arm"] == "env_features"), None)
    out = ["| arm | MFLOP / env step | MB accessed / env step | bytes / FLOP | rollout share "
           "of FLOPs, bytes | env steps/s | time vs recipe |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in arms:
        sps = f"{r['sps']:,.0f} | {r['time_vs_base']:.2f}" if "sps" in r else "| "
        share = (f"{r['rollout_flops_per_env_step'] / r['flops_per_env_step']:.2f}, "
                 f"{r['rollout_bytes_per_env_step'] / r['bytes_per_env_step']:.2f}"
                 if r["loops_counted_once"] else "")
        out.append(f"| {r['arm']} | {r['flops_per_env_step'] / 1e6:.3f} | "
                   f"{r['bytes_per_env_step'] / 1e6:.3f} | "
                   f"{r['bytes_per_env_step'] / r['flops_per_env_step']:.2f} | {share} | {sps} |")
    if env_row:
        shares = ", ".join(f"{k} {v:.2f}" for k, v in env_row["share_of"].items())
        out.append(f"| env + features alone (share of: {shares}) | | | | | "
                   f"{env_row['sps']:,.0f} | |")
    profiled = [r for r in arms if "profile" in r]
    if profiled:
        out += ["", "Top ops of one traced call by self time (share of the ops' time):", "",
                "| arm | traced call (s) | top ops |", "| --- | ---: | --- |"]
        for r in profiled:
            p = r["profile"]
            top = "; ".join(f"`{name[:40]}` {share:.2f}" for name, _, share in p["top_ops"][:6])
            out.append(f"| {r['arm']} | {p['traced_s']:.3f} | {top} |")
    kinds = ("scatter", "gather", "sort", "while", "dot", "fusion", "custom-call")
    out += ["", "Ops one env step runs (trip-weighted static counts, summed over regions):", "",
            "| arm | ops | " + " | ".join(kinds) + " |", "| --- |" + " ---: |" * (len(kinds) + 1)]
    for r in arms:
        out.append(f"| {r['arm']} | {_per_env_step(r, None):.2f} | "
                   + " | ".join(f"{_per_env_step(r, (k,)):.3f}" for k in kinds) + " |")
    out += ["", "Ops per region (static count: top level + inside fusions; `run`: "
            "trip-weighted, top level):", "",
            "| arm | region | runs / env step | ops (run) | " + " | ".join(KINDS) + " |",
            "| --- | --- |" + " ---: |" * (len(KINDS) + 2)]
    for r in arms:
        for name, region in r["ops"].items():
            ops = sum(c for op, c in region["run"].items() if op not in TRIVIAL)
            counts = [region["static"].get(k, 0) + region["static_fused"].get(k, 0)
                      for k in KINDS]
            out.append(f"| {r['arm']} | {name} | {region['runs_per_env_step']:.2e} | {ops} | "
                       + " | ".join(map(str, counts)) + " |")
    return "\n".join(out)


def main(args: Args) -> None:
    meta = {**machine(), "command": "python " + " ".join(sys.argv)}
    rows = [{**row, **meta} for row in run(args)]
    text = tables(rows)
    if args.json:
        for row in rows:
            print(json_line(row), flush=True)
    else:
        print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        raw = "".join(json_line(row) + "\n" for row in rows).encode()
        with open(os.path.join(args.out, "census.jsonl.gz"), "wb") as f:
            f.write(gzip.compress(raw, compresslevel=9, mtime=0))
        with open(os.path.join(args.out, "census.md"), "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
