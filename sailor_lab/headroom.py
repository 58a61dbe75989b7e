"""Headroom over theta0: search, retrain the picked theta and theta0 on fresh seeds, compare.

Host-only. `run_search` is the whole job of `experiments/theta_search.py`: the CMA-ES search
(`theta_search.search`), then one program of `2 x retrain_seeds` rows: the picked theta on
rows 0..N-1 and theta0 on rows N..2N-1, row s and row N+s starting from the same network,
games and PPO keys and evaluated on the same keys (paired), with keys disjoint from every
generation's. The comparison is the per-seed difference picked - theta0 with a Student-t 95%
interval over seeds (`report.mean_ci`), next to each arm's mean [95% CI].

Output under `out_dir` (besides the search's): `retrain/` (a run folder; `evaluation.json`
once evaluated), `theta_search.json` and `theta_search.md`. Running again reads back what is
finished and continues what is not.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence

import jax
import numpy as np

from sailor_jax.logging import to_jsonable
from sailor_jax.run.run_dir import config_json
from sailor_lab import report
from sailor_lab.search_config import ThetaSearchConfig
from sailor_lab.theta_search import (
    evaluate_groups,
    per_seed_scores,
    pick_theta,
    root_keys,
    search,
    shared_init,
    train_rows,
    write_json,
)

ARMS = ("picked", "theta0")
"""The retrained arms, in row order."""


def retrain(cfg: ThetaSearchConfig, out_dir: str, theta: Sequence[float],
            progress=None) -> dict:
    """Train `theta` and theta0 on `cfg.retrain_seeds` fresh paired seeds; evaluate. Host-only.

    Read back from `retrain/evaluation.json` when it is there; a killed retrain continues
    from its newest checkpoint.

    Args:
      theta: the picked weights, `F` floats within the spec's bounds.

    Returns:
      `{"picked": evaluation, "theta0": evaluation, "timings": {...}}`, each evaluation an
      `evaluate_rows` dict (pooled metrics and `per_seed`, `retrain_seeds` entries).
    """
    folder = os.path.join(out_dir, "retrain")
    path = os.path.join(folder, "evaluation.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    spec, n = cfg.reward_spec(), cfg.retrain_seeds
    key_init, key_eval = jax.random.split(root_keys(cfg)[1])
    thetas = np.stack([spec.validate(theta, "picked theta")] * n + [spec.validate(spec.start)] * n)
    params, timings = train_rows(folder, cfg, "retrain", thetas,
                                 shared_init(cfg, key_init, n, 2), progress)
    t0 = time.perf_counter()
    picked, base = evaluate_groups(params, cfg, key_eval, 2, n)
    timings["eval"] = time.perf_counter() - t0
    result = to_jsonable({"picked": picked, "theta0": base, "timings": timings})
    write_json(path, result)
    return result


def summarize(cfg: ThetaSearchConfig, records: list[dict], picked: dict, retrained: dict
              ) -> dict:
    """The `theta_search.json` record: config, search history, picked theta, comparison."""
    spec = cfg.reward_spec()
    scores = {arm: per_seed_scores(retrained[arm]) for arm in ARMS}
    arms = {}
    for arm in ARMS:
        mean, low, high = report.mean_ci(scores[arm])
        arms[arm] = {"per_seed": scores[arm], "mean": mean, "ci_low": low, "ci_high": high,
                     "evaluation": retrained[arm]}
    generations = [{k: r[k] for k in ("generation", "thetas", "scores", "score_mean", "cma",
                                      "sps", "timings")} for r in records]
    return {"config": json.loads(config_json(cfg)),
            "feature_names": list(spec.names),
            "tunable": [spec.names[k] for k in spec.tunable_index],
            "theta0": list(spec.start), "env_steps_per_row": cfg.env_steps_per_row,
            "generations": generations, "picked": picked, "retrain": arms,
            "difference": report.paired_difference(scores["picked"], scores["theta0"]),
            "retrain_timings": retrained["timings"], "machine": report.machine()}


def markdown(result: dict) -> str:
    """`theta_search.md`: the search by generation, then the retrained comparison (the
    wall-clock column is the whole retrain program's, shared by both arms)."""
    lines = ["| generation | best score | mean score | CMA sigma | env steps/s |",
             "|---:|---:|---:|---:|---:|"]
    for g in result["generations"]:
        lines.append(f"| {g['generation']} | {max(g['score_mean']):,.0f} | "
                     f"{np.mean(g['score_mean']):,.0f} | {g['cma']['sigma']:.3f} | "
                     f"{g['sps'] or float('nan'):,.0f} |")
    steps, names = result["env_steps_per_row"], result["feature_names"]
    theta = ", ".join(f"{n} {w:+.2f}" for n, w in zip(names, result["picked"]["theta"],
                                                       strict=True) if abs(w) >= 0.005)
    wall = sum(result["retrain_timings"].values())
    rows = [report.summary_row(label, result["retrain"][arm]["evaluation"], judge="-",
                               env_steps_per_seed=steps, wall_clock_s=wall)
            for arm, label in (("picked", "picked theta"), ("theta0", "theta0"))]
    d = result["difference"]
    lines += ["", f"Picked theta ({result['picked']['pick']}): {theta}", "",
              report.markdown_table(rows).rstrip("\n"), "",
              f"Paired difference picked - theta0 over {len(d['per_seed'])} seeds: "
              f"{d['mean']:+,.0f} [95% CI {d['ci_low']:+,.0f}, {d['ci_high']:+,.0f}], "
              f"picked higher in {d['wins']} of {len(d['per_seed'])}", "",
              "| seed | picked | theta0 | difference |", "|---:|---:|---:|---:|"]
    for s, diff in enumerate(d["per_seed"]):
        lines.append(f"| {s} | {result['retrain']['picked']['per_seed'][s]:,.0f} | "
                     f"{result['retrain']['theta0']['per_seed'][s]:,.0f} | {diff:+,.0f} |")
    return "\n".join(lines) + "\n"


def run_search(cfg: ThetaSearchConfig, out_dir: str, progress=None,
               on_generation: Callable[[dict], None] | None = None) -> dict:
    """Search, retrain, compare; write `theta_search.json` and `.md`; return the record.

    Host-only. Running it again on the same `out_dir` resumes (see `theta_search.search`).

    Raises:
      UserError: as `theta_search.search` and `train_rows`.
    """
    records, es = search(cfg, out_dir, progress, on_generation)
    picked = pick_theta(cfg, records, es)
    result = summarize(cfg, records, picked, retrain(cfg, out_dir, picked["theta"], progress))
    write_json(os.path.join(out_dir, "theta_search.json"), result)
    with open(os.path.join(out_dir, "theta_search.md"), "w", encoding="utf-8") as f:
        f.write(markdown(result))
    return result
