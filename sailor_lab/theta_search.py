"""Direct search for the theta whose trained agent scores best: CMA-ES over PPO rows. Host-only.

The "headroom over theta0": how much better than theta0 can a fixed reward do at a
given budget? CMA-ES (N. Hansen and A. Ostermeier 2001, "Completely derandomized
self-adaptation in evolution strategies", Evolutionary Computation 9(2); N. Hansen 2016, "The
CMA Evolution Strategy: A Tutorial", arXiv:1604.00772), from Hansen's `cma` package, searches
the tunable entries of theta inside the `RewardSpec` bounds (cma's `bounds` option, its
`BoundTransform`), starting at the start reward with step size `sigma0`. Every candidate trains from
scratch: one generation is one compiled program of `population x seeds_per_candidate` rows
(rows carry their own theta, `run.fixed_reward.FixedReward`), run by `runner.run_segments`
with a checkpoint every segment. A candidate's fitness is minus the mean greedy-evaluation
game score of its rows (native score, never R_theta; cma minimises). Seed j of every candidate
of generation g starts from the same network, games and PPO keys and is evaluated on the same
evaluation key (common random numbers: the ranking inside a generation sees theta, not seed
luck); generations use different seeds (`fold_in(seed, g)`), so the search cannot fit one seed.

Output under `out_dir`: `config.json` (the `ThetaSearchConfig`), and per generation g
`generations/gNNN/`: a run folder (`config.json` naming the candidates, `metrics.jsonl`,
`checkpoints/`) plus `generation.json` once it is scored (candidates, per-row scores, the CMA
mean and sigma after `tell`).

Resume: CMA's state is not pickled; it is rebuilt by replay. A fresh `CMAEvolutionStrategy`
draws its normal samples from its own `numpy.random.Generator(seed)` (cma's `randn` option, so
no global numpy state is involved), and for every saved generation `ask()` must give exactly
the saved candidates (else `UserError`: another cma version or config made the folder) and
`tell()` gets the saved fitness. The saved JSON is the one source of truth, readable without
cma, and a resumed search asks the same candidates as an uninterrupted one. A generation
killed mid-training continues from its newest segment checkpoint (`run_segments` resume); one
killed after training but before `generation.json` restores the last checkpoint and evaluates.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable

import cma
import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.agents import ppo
from sailor_jax.errors import UserError
from sailor_jax.game.reward import RewardSpec
from sailor_jax.logging import to_jsonable
from sailor_jax.run.fixed_reward import FixedReward
from sailor_jax.run.run_dir import (
    check_writable,
    config_differences,
    config_json,
    prepare_out_dir,
    read_config,
)
from sailor_jax.run.runner import evaluate_rows, rows, run_segments
from sailor_lab.search_config import ThetaSearchConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class RowsRun:
    """`config.json` of one program of rows: the search, the stage, every row's theta."""

    search: ThetaSearchConfig
    stage: str
    """"generation N" or "retrain"."""
    thetas: tuple[tuple[float, ...], ...]
    """`[R][F]` reward weights of the rows (float32 values)."""


def root_keys(cfg: ThetaSearchConfig) -> tuple[jax.Array, jax.Array]:
    """`(key_search, key_retrain)`: disjoint streams; generation g uses `fold_in(key_search, g)`."""
    key_search, key_retrain = jax.random.split(jax.random.PRNGKey(cfg.seed))
    return key_search, key_retrain


def make_strategy(cfg: ThetaSearchConfig) -> cma.CMAEvolutionStrategy:
    """A fresh CMA-ES over the tunable weights, from the start, with its own normal generator.

    Host-only. Dimension K = number of tunable features; `popsize`, `bounds` (the spec's),
    `randn` from `numpy.random.default_rng(cfg.seed)` (replayable; cma's own `seed` option
    would reseed numpy's global state), no console output, no `outcmaes/` files.
    """
    spec = cfg.reward_spec()
    idx = spec.tunable_index
    rng = np.random.default_rng(cfg.seed)
    opts = {"popsize": cfg.population, "seed": float("nan"),
            "bounds": [list(np.asarray(spec.lower)[idx]), list(np.asarray(spec.upper)[idx])],
            "randn": lambda *shape: rng.standard_normal(shape),
            "verbose": -9, "verb_log": 0, "verb_disp": 0}
    return cma.CMAEvolutionStrategy(list(np.asarray(spec.start, np.float64)[idx]), cfg.sigma0,
                                    opts)


def candidate_thetas(spec: RewardSpec, xs: np.ndarray) -> np.ndarray:
    """Full thetas from tunable-entry vectors: the start with the tunable entries replaced.

    Args:
      spec: the reward spec (start, tunable mask, bounds).
      xs: `float64[P, K]` values of the K tunable entries.

    Returns:
      `float32[P, F]`.

    Raises:
      ValueError: a theta outside the spec's bounds (`RewardSpec.validate`).
    """
    thetas = np.tile(np.asarray(spec.start, np.float64), (len(xs), 1))
    thetas[:, spec.tunable_index] = xs
    return np.stack([spec.validate(t, f"candidate {i}") for i, t in enumerate(thetas)])


def shared_init(cfg: ThetaSearchConfig, key: jax.Array, seeds: int, copies: int):
    """`copies` copies of `seeds` fresh PPO runs: row `c * seeds + j` is seed j (`[R, ...]`)."""
    init, _ = ppo.make_train(cfg.run_ppo, num_seeds=seeds)
    state = init(key)
    return jax.tree.map(lambda x: jnp.concatenate([x] * copies), state)


def train_rows(folder: str, cfg: ThetaSearchConfig, stage: str, thetas: np.ndarray, runner,
               progress=None) -> tuple[object, dict]:
    """Train every row of `runner` on its theta for `cfg.num_segments` segments. Host-only.

    A run folder of its own (`RowsRun` config, metrics, a checkpoint every segment); when the
    folder already holds this run it continues from its newest checkpoint.

    Args:
      folder: the run folder.
      cfg: the search config (PPO, budget).
      stage: names the program (progress label, `RowsRun.stage`).
      thetas: `float32[R, F]`, one theta per row.
      runner: the fresh `[R, ...]` runner state.

    Returns:
      `(params [R, ...], timings in seconds: compile, train, checkpoint)`.

    Raises:
      UserError: the folder holds a run with other rows or config (`prepare_out_dir`).
    """
    resume = os.path.exists(os.path.join(folder, "config.json"))
    run = RowsRun(search=cfg, stage=stage, thetas=tuple(map(tuple, thetas.tolist())))
    prepare_out_dir(folder, run, resume)
    _, segment = ppo.make_train(cfg.run_ppo, num_seeds=len(thetas))
    hooks = FixedReward(thetas, cfg.num_segments, cfg.ppo.steps_per_segment, cfg.ppo.batch_size)
    runner = run_segments(folder, runner, segment, hooks, resume=resume,
                          tensorboard=cfg.tensorboard, progress=progress, label=stage)
    return runner.params, dict(hooks.timings)


def evaluate_groups(params, cfg: ThetaSearchConfig, key: jax.Array, groups: int,
                    size: int) -> list[dict]:
    """Greedy evaluation of `groups` consecutive groups of `size` rows, every group on the same
    `size` evaluation keys (paired). Host-only. Returns one `evaluate_rows` dict per group."""
    return [evaluate_rows(rows(params, g * size, size), cfg.ppo.network, cfg.eval, key, size)
            for g in range(groups)]


def per_seed_scores(evaluation: dict) -> list[float]:
    """Mean game score of each seed of an `evaluate_rows` dict."""
    return [e["score_mean"] for e in evaluation["per_seed"]]


def run_generation(cfg: ThetaSearchConfig, out_dir: str, g: int, xs: np.ndarray,
                   progress=None) -> dict:
    """Train and score generation `g`'s candidates `xs` (`float64[P, K]`). Host-only.

    Returns the generation record (not yet written): `generation`, `x` `[P][K]`, `thetas`
    `[P][F]`, `scores` `[P][seeds_per_candidate]`, `score_mean` `[P]`, `env_steps_per_row`,
    `sps` (env steps per second over all rows while training) and `timings`.
    """
    spec, k = cfg.reward_spec(), cfg.seeds_per_candidate
    thetas = candidate_thetas(spec, xs)
    key_init, key_eval = jax.random.split(jax.random.fold_in(root_keys(cfg)[0], g))
    runner = shared_init(cfg, key_init, k, cfg.population)
    folder = generation_dir(out_dir, g)
    params, timings = train_rows(folder, cfg, f"generation {g}", np.repeat(thetas, k, axis=0),
                                 runner, progress)
    t0 = time.perf_counter()
    scores = [per_seed_scores(e) for e in evaluate_groups(params, cfg, key_eval,
                                                          cfg.population, k)]
    timings["eval"] = time.perf_counter() - t0
    steps = cfg.rows * cfg.env_steps_per_row
    return {"generation": g, "x": xs.tolist(), "thetas": thetas.tolist(), "scores": scores,
            "score_mean": [float(np.mean(s)) for s in scores],
            "env_steps_per_row": cfg.env_steps_per_row,
            "sps": steps / timings["train"] if timings.get("train") else None,
            "timings": timings}


def write_json(path: str, record: dict) -> None:
    """Write `record` as JSON atomically (a temporary file, then a rename): a kill leaves the
    old file or none, never half of one."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(to_jsonable(record), f, indent=2)
    os.replace(tmp, path)


def generation_dir(out_dir: str, g: int) -> str:
    return os.path.join(out_dir, "generations", f"g{g:03d}")


def load_generation(out_dir: str, g: int) -> dict | None:
    """Generation `g`'s saved record, or None when it has not been scored yet."""
    path = os.path.join(generation_dir(out_dir, g), "generation.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def prepare_search_dir(out_dir: str, cfg: ThetaSearchConfig) -> None:
    """Create `out_dir` with the search's `config.json`, or check the one there is `cfg`'s.

    Raises:
      UserError: `out_dir` holds a search with another config (every differing field named)
        or a config.json that does not read (`run_dir.read_config`), or cannot be written.
    """
    path, text = os.path.join(out_dir, "config.json"), config_json(cfg)
    if os.path.exists(path):
        differences = config_differences(read_config(path), json.loads(text), cfg)
        if differences:
            raise UserError(f"{out_dir} holds a theta search with another config: "
                            + "; ".join(differences),
                            "rerun with the original flags, or choose another --out")
        return
    check_writable(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def search(cfg: ThetaSearchConfig, out_dir: str, progress=None,
           on_generation: Callable[[dict], None] | None = None
           ) -> tuple[list[dict], cma.CMAEvolutionStrategy]:
    """Run (or resume) `cfg.generations` CMA-ES generations in `out_dir`. Host-only.

    Saved generations are replayed (ask, compare, tell), the rest trained; each record gets
    `cma` (`mean`: the distribution mean in theta units `[K]`, `sigma`) after its `tell` and is
    written to `generations/gNNN/generation.json`, then passed to `on_generation` (with
    `resumed` True for a replayed one).

    Returns:
      `(records, the strategy after the last tell)`.

    Raises:
      UserError: another search's config in `out_dir`, or replay asks other candidates than
        the saved ones (another cma version or a hand-edited folder).
    """
    prepare_search_dir(out_dir, cfg)
    es, records = make_strategy(cfg), []
    for g in range(cfg.generations):
        asked = es.ask()
        xs = np.asarray(asked, np.float64)
        record = load_generation(out_dir, g)
        resumed = record is not None
        if resumed and not np.array_equal(np.asarray(record["x"], np.float64), xs):
            raise UserError(f"generation {g} in {out_dir}: cma {cma.__version__} asks other "
                            "candidates than the saved ones", "resume with the cma version "
                            "that started the search, or choose another --out")
        if not resumed:
            record = run_generation(cfg, out_dir, g, xs, progress)
        es.tell(asked, [-s for s in record["score_mean"]])
        record["cma"] = {"mean": np.asarray(es.result.xfavorite).tolist(),
                         "sigma": float(es.sigma), "version": cma.__version__}
        if not resumed:
            write_json(os.path.join(generation_dir(out_dir, g), "generation.json"), record)
        records.append(record)
        if on_generation:
            on_generation({**record, "resumed": resumed})
    return records, es


def pick_theta(cfg: ThetaSearchConfig, records: list[dict],
               es: cma.CMAEvolutionStrategy) -> dict:
    """The theta to retrain: `theta` `float32[F]` as a list, and where it came from.

    `pick="best"`: the candidate with the highest `score_mean` over all generations (the first
    on ties), with its `generation`, `candidate` and `search_score`; `"mean"`: CMA's final
    distribution mean (`es.result.xfavorite`, inside the bounds), never trained in the search.
    """
    spec = cfg.reward_spec()
    if cfg.pick == "mean":
        x = np.clip(np.asarray(es.result.xfavorite, np.float64),
                    np.asarray(spec.lower)[spec.tunable_index],
                    np.asarray(spec.upper)[spec.tunable_index])
        return {"theta": candidate_thetas(spec, x[None])[0].tolist(), "pick": "mean"}
    g, c = max(((g, c) for g in range(len(records))
                for c in range(len(records[g]["score_mean"]))),
               key=lambda gc: (records[gc[0]]["score_mean"][gc[1]], -gc[0], -gc[1]))
    return {"theta": records[g]["thetas"][c], "pick": "best", "generation": g, "candidate": c,
            "search_score": records[g]["score_mean"][c]}
