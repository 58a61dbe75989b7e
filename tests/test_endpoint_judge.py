"""The LLM judge behind an OpenAI-compatible endpoint, over real HTTP on localhost.

The server is `sailor_lab.openai_server` over the tiny test model, started in this process on a free
port; the judge talks to it through the `openai` client. Faults (429, a hang, a body that is not
JSON, a server that answers no log-probabilities) are the server's `hook` answering a request
itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from llm_fixtures import random_games, write_gguf_tokenizer
from support import PAPER_UPDATE, ROOT, TINY_PPO, files_under, load_script

from sailor_jax.config import LLMRankerConfig
from sailor_jax.errors import UserError
from sailor_jax.judges import endpoint, hf_backend
from sailor_jax.judges.endpoint import EndpointError, TokenBudgetError, TokenUsage
from sailor_jax.judges.llm import LLMRanker
from sailor_jax.judges.parsing import parse_label
from sailor_lab import openai_server

VOCAB = 512
"""The tiny model's vocabulary: asking for this many top log-probabilities reads every label."""


@pytest.fixture(autouse=True)
def every_label(monkeypatch):
    """The endpoint asks for every token's log-probability (`endpoint.TOP_LOGPROBS`: the tiny
    random model's labels need not be among its 20 most likely tokens)."""
    monkeypatch.setattr(endpoint, "TOP_LOGPROBS", VOCAB)


def _transport(monkeypatch, retries: int, timeout_s: float | None = None) -> None:
    """Fewer retries (and a shorter timeout) than `endpoint`'s, for the fault tests."""
    monkeypatch.setattr(endpoint, "MAX_RETRIES", retries)
    if timeout_s is not None:
        monkeypatch.setattr(endpoint, "TIMEOUT_S", timeout_s)


@pytest.fixture(scope="module")
def tiny_backend(tiny_llm_dir):
    return hf_backend.load_model(tiny_llm_dir, None, "float32", "cpu")


@pytest.fixture
def serve(tiny_backend, tiny_llm_dir):
    """`serve(name=..., logprobs=...) -> (server, url)`; every server is shut down after."""
    servers = []

    def start(name: str | None = None, logprobs: bool = True, routes: str = "openai",
              bits: float = 16.0):
        served = openai_server.Served(tiny_backend, name or tiny_llm_dir, logprobs, routes,
                                      bits)
        server = openai_server.start(served)
        servers.append(server)
        return server, f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


GROUPS = [random_games(4, 30, seed=s) for s in range(2)]


def _ranker(url: str, **kw) -> LLMRanker:
    return LLMRanker(LLMRankerConfig(endpoint=url, max_new_tokens=12, **kw))


def _events(ranker: LLMRanker, event: str) -> list[dict]:
    return [r for r in ranker.records if r["event"] == event]


@pytest.mark.parametrize("mode", ["pairwise", "pointwise"])
def test_endpoint_scores_equal_in_process_scores(serve, tiny_backend, tiny_llm_dir, mode):
    local = LLMRanker(LLMRankerConfig(model=tiny_llm_dir, mode=mode, device="cpu"),
                      backend=tiny_backend).rank_groups(GROUPS)
    _, url = serve()  # served under its folder's name: the tokenizer loads, completions API
    ranker = _ranker(url, mode=mode)
    remote = ranker.rank_groups(GROUPS)
    for a, b in zip(local, remote, strict=True):
        np.testing.assert_allclose(a.scores, b.scores, atol=1e-4)
        np.testing.assert_allclose(a.pairwise_prob, b.pairwise_prob, atol=1e-4)
        # the same order, up to strengths within the tolerance (near-ties may swap)
        np.testing.assert_allclose(a.scores[b.order], np.sort(a.scores)[::-1], atol=1e-4)
    assert _events(ranker, "endpoint") == [{"event": "endpoint", "endpoint": url,
                                            "model": tiny_llm_dir, "api": "completions",
                                            "rendered_by": "here", "logprobs": True}]
    usage = ranker.token_usage
    sent = {r["prompt"]: r["prompt_tokens"] for r in ranker.records
            if r["event"].endswith("_prompt")}  # a repeated prompt is sent once
    assert usage.prompt == sum(sent.values())  # the server's counts
    assert usage.completion == len(sent)  # one token each


@pytest.mark.parametrize("via", ["model", "tokenizer", "absent"])
def test_a_gguf_file_gives_the_in_process_prompts(serve, tiny_backend, tiny_llm_dir, tmp_path,
                                                  via):
    """llama.cpp serves a model under its GGUF file's path: the judge reads the tokenizer and
    chat template from that file and sends the in-process prompts to the completions API (the
    same scores); `tokenizer` names the file when the server uses another name (Ollama, whose
    files are named `sha256-...`). A path to no file leaves the chat API."""
    name = "tiny.gguf" if via == "model" else "sha256-0123abcd"
    gguf_path = write_gguf_tokenizer(tiny_llm_dir, str(tmp_path / name))
    served = {"model": gguf_path, "tokenizer": "tiny:latest",
              "absent": str(tmp_path / "absent.gguf")}[via]
    _, url = serve(name=served)
    ranker = _ranker(url, mode="pointwise",
                     **({"tokenizer": gguf_path} if via == "tokenizer" else {}))
    remote = ranker.rank_groups(GROUPS)
    assert _events(ranker, "endpoint")[0]["api"] == ("chat" if via == "absent" else
                                                     "completions")
    if via != "absent":
        local = LLMRanker(LLMRankerConfig(model=tiny_llm_dir, mode="pointwise", device="cpu"),
                          backend=tiny_backend).rank_groups(GROUPS)
        for a, b in zip(local, remote, strict=True):
            np.testing.assert_allclose(a.scores, b.scores, atol=1e-4)


@pytest.mark.parametrize("routes, mode", [("llama.cpp", "pointwise"), ("llama.cpp", "pairwise"),
                                          ("vllm", "pointwise")])
def test_a_server_that_renders_the_prompts_gives_the_in_process_scores(
        serve, tiny_backend, tiny_llm_dir, routes, mode, caplog):
    """Served under an alias (no tokenizer here), the judge asks llama.cpp's or vLLM's routes
    to render, count and find the label tokens, and sends the in-process prompts to the
    completions API: the in-process scores, and no notice."""
    local = LLMRanker(LLMRankerConfig(model=tiny_llm_dir, mode=mode, device="cpu"),
                      backend=tiny_backend).rank_groups(GROUPS)
    _, url = serve(name="tiny-alias", routes=routes)
    ranker = _ranker(url, mode=mode)
    remote = ranker.rank_groups(GROUPS)
    event = _events(ranker, "endpoint")[0]
    assert (event["api"], event["rendered_by"], event["model"], event["logprobs"]) == (
        "completions", routes, "tiny-alias", True)  # llama.cpp's log-probabilities: chat form
    for a, b in zip(local, remote, strict=True):
        np.testing.assert_allclose(a.scores, b.scores, atol=1e-4)
    sent = [r for r in ranker.records if r["event"].endswith("_prompt")]
    assert sent and all(r["prompt_tokens"] == tiny_backend.count_tokens(r["prompt"])
                        for r in sent)  # counted by the server's tokenizer, exactly
    assert not [r for r in caplog.records if r.name == endpoint.__name__]


@pytest.mark.parametrize("bits, warned", [(5.0, True), (8.5, False), (16.0, False)])
def test_a_model_served_below_8_bits_is_said_once(serve, bits, warned, caplog):
    """llama.cpp reports the served file's size over its weights (and its type's name): below
    8 bits per weight the judge warns once, with the measured cost and the fix."""
    _, url = serve(name="tiny-alias", routes="llama.cpp", bits=bits)
    ranker = _ranker(url, mode="pointwise")
    ranker.rank_groups(GROUPS)
    said = [r.getMessage() for r in caplog.records if r.name == endpoint.__name__]
    if warned:
        assert len(said) == 1 and "at 5.0 bits per weight (Q4_1)" in said[0]
        assert "-0.05 to -0.08" in said[0] and said[0].endswith("serve an F16 or Q8_0 copy")
    else:
        assert said == []


def test_a_server_without_templates_leaves_the_chat_api_with_a_notice(serve, caplog):
    """No tokenizer here and no rendering routes there (llama-cpp-python, a hosted API): the
    chat API, and one line naming what gives the completions API."""
    _, url = serve(name="tiny-alias")
    ranker = _ranker(url, mode="pointwise")
    ranker.rank_groups(GROUPS[:1])
    assert _events(ranker, "endpoint")[0]["api"] == "chat"
    said = [r.getMessage() for r in caplog.records if r.name == endpoint.__name__]
    assert len(said) == 1 and "uses the chat API" in said[0] and "'tiny-alias'" in said[0]
    assert "--sailor.ranker.llm.tokenizer FILE" in said[0]


def test_served_prompts_helpers():
    from sailor_jax.judges import served_prompts

    assert served_prompts.server_root("http://h:8000/v1/") == "http://h:8000"
    assert served_prompts.server_root("http://h:8000") == "http://h:8000"
    assert served_prompts.bits_per_weight({"size": 75_000_000, "n_params": 150_000_000}) == 4.0
    assert served_prompts.bits_per_weight({"n_params": 10}) is None
    assert served_prompts.bits_per_weight(None) is None


def test_listwise_generates_the_same_answer(serve, tiny_backend, tiny_llm_dir):
    cfg = LLMRankerConfig(model=tiny_llm_dir, mode="listwise", device="cpu", max_new_tokens=12)
    local = LLMRanker(cfg, backend=tiny_backend)
    local.rank_groups(GROUPS)
    _, url = serve()
    ranker = _ranker(url, mode="listwise")
    ranker.rank_groups(GROUPS)
    answers = lambda r: [x["output"] for x in _events(r, "listwise")]
    assert answers(ranker) == answers(local) and len(answers(local)) == 2


def test_chat_api_without_tokenizer(serve):
    _, url = serve(name="served-name")  # no tokenizer by that name: the chat API
    ranker = _ranker(url, mode="pairwise", model="served-name")
    rankings = ranker.rank_groups(GROUPS)
    assert all(r is not None and sorted(r.order) == [0, 1, 2, 3] for r in rankings)
    assert _events(ranker, "endpoint")[0]["api"] == "chat"
    assert np.mean([r["label_mass"] for r in _events(ranker, "pairwise_prompt")]) > 0
    assert ranker.token_usage.total > 0


def test_no_logprobs_falls_back_to_generated_labels(serve):
    server, url = serve(name="hosted", logprobs=False)
    ranker = _ranker(url, mode="pairwise")
    ranker.rank_groups(GROUPS[:1])  # the random model names no label: no ranking, no error
    assert _events(ranker, "endpoint")[0]["logprobs"] is False

    def answer_b(handler):  # a model that always answers "Trajectory B"
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        assert "logprobs" not in body  # the fallback asks for text only
        handler.send_json(200, {"id": "x", "object": "chat.completion", "created": 0,
                                "model": "hosted", "choices": [{
                                    "index": 0, "finish_reason": "stop", "logprobs": None,
                                    "message": {"role": "assistant", "content": "Trajectory B"}}],
                                "usage": {"prompt_tokens": 5, "completion_tokens": 2,
                                          "total_tokens": 7}})
        return True

    server.hook = answer_b
    ranker.rank_groups(GROUPS[:1])
    prompts = _events(ranker, "pairwise_prompt")[-12:]
    assert all(r["p_first"] == 0.0 and r["label_mass"] == 1.0 for r in prompts)  # B each time


def test_429_then_200_is_retried(serve, monkeypatch):
    server, url = serve()
    seen = []

    def rate_limit_twice(handler):
        seen.append(handler.path)
        if len(seen) > 2:
            return False
        handler.send_response(429)
        handler.send_header("retry-after-ms", "10")
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return True

    server.hook = rate_limit_twice
    _transport(monkeypatch, retries=2)
    monkeypatch.setattr(endpoint, "CONCURRENCY", 1)
    ranker = _ranker(url, mode="pointwise")
    assert all(r is not None for r in ranker.rank_groups(GROUPS[:1]))
    assert len(seen) > 2


def test_token_budget_stops_before_it_is_passed(serve):
    _, url = serve()
    ranker = _ranker(url, mode="pointwise", max_tokens_per_run=10_000)
    ranker.rank_groups(GROUPS[:1])
    spent = ranker.token_usage.total
    assert 0 < spent < 10_000
    ranker.token_usage.start(spent_before=10_001 - spent)  # one token short of the same again
    with pytest.raises(TokenBudgetError, match="max-tokens-per-run 10000"):
        ranker.rank_groups(GROUPS[:1])
    assert ranker.token_usage.total == 0  # nothing was sent


def test_key_is_sent_but_never_shown(serve, monkeypatch):
    server, url = serve()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-6f1d")
    headers = []

    def reject(handler):
        headers.append(handler.headers["Authorization"])
        handler.send_json(401, {"error": {"message": "bad key sk-test-6f1d"}})
        return True

    server.hook = reject
    with pytest.raises(EndpointError) as err:
        _transport(monkeypatch, retries=0)
        _ranker(url, mode="pointwise")
    assert headers == ["Bearer sk-test-6f1d"]
    assert "sk-test-6f1d" not in str(err.value) and "***" in str(err.value)


def test_model_must_be_served(serve):
    from sailor_jax.judges.endpoint import check_endpoint

    _, url = serve(name="served-name")
    check_endpoint(LLMRankerConfig(endpoint=url, model="served-name"))
    with pytest.raises(EndpointError, match="serves served-name"):
        check_endpoint(LLMRankerConfig(endpoint=url, model="other"))


def test_unreachable_endpoint(monkeypatch):
    _transport(monkeypatch, retries=0, timeout_s=1.0)
    with pytest.raises(EndpointError, match="http://127.0.0.1:9/v1 cannot be reached"):
        _ranker("http://127.0.0.1:9/v1")


@pytest.mark.parametrize("bad", [dict(endpoint="127.0.0.1:8000"), dict(batch_size=0),
                                 dict(max_tokens_per_run=0)])
def test_config_rejects(bad):
    with pytest.raises(ValueError):
        LLMRankerConfig(**bad)


def test_token_usage_check():
    usage = TokenUsage(limit=100)
    usage.add(30, 10)
    usage.check(60, 3)  # 100: at the limit is allowed
    with pytest.raises(UserError, match="spent 40"):
        usage.check(61, 3)
    usage.start(spent_before=90)
    assert usage.total == 0
    with pytest.raises(TokenBudgetError):
        usage.check(11, 1)
    TokenUsage().check(10**12, 1)  # no limit


def test_parse_label():
    assert parse_label(" B", ["A", "B"]) == 1
    assert parse_label("Answer: A, not B", ["A", "B"]) == 0  # "Answer" is no label
    assert parse_label("I rate it **7**/9", [str(r) for r in range(1, 10)]) == 6
    assert parse_label("17", ["1", "7"]) is None
    assert parse_label(None, ["A"]) is None and parse_label("A", []) is None



SAILOR = os.path.join(ROOT, "experiments", "sailor.py")
KEY = "sk-e2e-3c9b71f0"


TRANSPORT = {"TOP_LOGPROBS": VOCAB, "TIMEOUT_S": 5.0, "MAX_RETRIES": 1}
"""`endpoint`'s constants for the SAILOR runs here: every label's log-probability asked for, a
short timeout and one retry."""
WITH_TRANSPORT = (
    "import runpy, sys; from sailor_jax.judges import endpoint; "
    + "".join(f"endpoint.{name} = {value!r}; " for name, value in TRANSPORT.items())
    + "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
"""`python -c WITH_TRANSPORT SCRIPT ARGS...`: the script with `TRANSPORT`'s constants."""


def _sailor_args(out: str, url: str, *extra: str) -> list[str]:
    """The README's smoke command's arguments against `url`, shrunk to 2 iterations with the
    sizes and update of `test_run_failures` (their compiled programs come from the shared
    cache)."""
    return ["--preset", "smoke", "--out", out, "--sailor.ranker.kind", "llm",
            "--sailor.ranker.llm.endpoint", url, "--sailor.iterations", "2",
            "--sailor.num-seeds", "1",
            "--sailor.trajectories", "4", *PAPER_UPDATE, "--sailor.ranker.llm.mode",
            "pairwise", "--sailor.max-len", "20", "--sailor.eval.episodes", "2",
            "--sailor.eval.max-len", "50", *TINY_PPO,
            "--sailor.ranker.llm.max-pairs-per-group", "6", "--sailor.alignment.bo-calls",
            "6", "--sailor.alignment.bo-initial-points", "3", *extra]


def _sailor(out: str, url: str, *extra: str) -> subprocess.CompletedProcess:
    """`_sailor_args` run by the script in its own process (`WITH_TRANSPORT`)."""
    command = [sys.executable, "-c", WITH_TRANSPORT, SAILOR, *_sailor_args(out, url, *extra)]
    env = {k: v for k, v in os.environ.items() if k != "SAILOR_DEBUG"} | {"OPENAI_API_KEY": KEY}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def _iterations_logged(out: str) -> list[int]:
    with open(os.path.join(out, "llm.jsonl"), encoding="utf-8") as f:
        return [r["iteration"] for r in map(json.loads, f) if r["event"] == "group"]


@pytest.mark.slow
def test_sailor_run_survives_a_dead_server(serve, tmp_path, monkeypatch):
    """A run whose server dies in iteration 1 stops with one error line naming the endpoint
    (the script in its own process: its exit status and stderr) and resumes against a new
    server on another port (the URL may change on --resume; the script's `main` in this
    process, with `TRANSPORT`'s constants); the tokens are counted per iteration and per
    run, and the key is in no file of the run."""
    out = str(tmp_path / "run")
    server, url = serve()

    def die_after_iteration_0(handler):  # the first request after iteration 0 was logged
        if not os.path.exists(os.path.join(out, "llm.jsonl")) or not _iterations_logged(out):
            return False
        handler.close_connection = True  # no answer; then the port closes
        server.hook = None
        threading.Thread(target=lambda: (server.shutdown(), server.server_close())).start()
        return True

    server.hook = die_after_iteration_0
    died = _sailor(out, url)
    assert died.returncode == 2, died.stderr
    assert f"error: judge endpoint {url} cannot be reached" in \
        died.stderr.strip().splitlines()[-1]
    assert _iterations_logged(out) == [0] and not os.path.exists(os.path.join(out, "results.json"))
    with open(os.path.join(out, "llm.jsonl"), encoding="utf-8") as f:
        spent = sum(r["prompt_tokens"] + 1 for r in map(json.loads, f)
                    if r["event"].endswith("_prompt"))  # one completion token each

    _, url = serve()
    for name, value in TRANSPORT.items():
        monkeypatch.setattr(endpoint, name, value)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    load_script("experiments/sailor.py").main(_sailor_args(out, url, "--resume"))
    assert _iterations_logged(out) == [0, 1]
    with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
        results = json.load(f)
    per_iteration = [r["judge_tokens"] for r in results["iterations"]]
    assert per_iteration[0]["prompt"] + per_iteration[0]["completion"] == spent
    assert results["judge_tokens"]["total"] == sum(t["prompt"] + t["completion"]
                                                   for t in per_iteration)
    assert results["ranker"]["endpoint"] == url
    assert all(KEY.encode() not in data for data in files_under(out).values())


def test_judge_quality_measures_the_served_model(serve, tiny_llm_dir, capsys):
    """`benchmarks/judge_quality.py --judge llm --llm.endpoint URL` measures the served model
    as the in-process judge measures the same model."""
    from support import TINY_POOL

    bench = load_script("benchmarks/judge_quality.py")
    _, url = serve()
    llm = dict(max_prompt_tokens=1024)
    local = bench.run(bench.Args(judge="llm", llm=LLMRankerConfig(
        model=tiny_llm_dir, device="cpu", **llm), **TINY_POOL))
    remote = bench.run(bench.Args(judge="llm", llm=LLMRankerConfig(endpoint=url, **llm),
                                  **TINY_POOL))
    assert remote["endpoint"] == url and remote["served_model"] == tiny_llm_dir
    assert remote["tokens"] > 0 and remote["logprobs"] is True
    for key in ("skill_order_accuracy", "kendall_tau", "prompts", "failed_groups"):
        assert remote[key] == pytest.approx(local[key], abs=1e-6), key


def _status(code: int, **headers: str):
    """A hook answering every request with HTTP `code` (an OpenAI-style error body)."""
    def answer(handler):
        data = json.dumps({"error": {"message": f"status {code}"}}).encode()
        handler.send_response(code)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
        return True
    return answer


def _not_json(handler):
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "17")
    handler.end_headers()
    handler.wfile.write(b"{this is not json")
    return True


def _no_choices(handler):
    handler.send_json(200, {"id": "x", "object": "text_completion", "created": 0,
                            "model": "m", "choices": []})
    return True


FAULTS = {"wrong path (404)": _status(404), "bad key (401)": _status(401),
          "rate limit (429)": _status(429, **{"retry-after-ms": "10"}),
          "server error (500)": _status(500), "not JSON": _not_json,
          "no choices": _no_choices, "timeout": lambda handler: time.sleep(1.5) or True,
          "model not served": None}
"""A fault of the server -> the hook that makes it (None: the server answers, serving
another model than the one named)."""

START_FAULTS = {
    "wrong path (404)": r"answered 404 \(no such path or model\): NotFoundError"
                        r".*\(give the URL of its OpenAI API .*, then rerun\)$",
    "bad key (401)": r"refused the API key \(401\).*\(set OPENAI_API_KEY to a key it accepts, "
                     r"then rerun\)$",
    "rate limit (429)": r"kept rate-limiting \(429\) after 1 retries.*\(wait for the rate "
                        r"limit to reset or raise it, then rerun\)$",
    "server error (500)": r"answered server errors \(500\) after 1 retries.*\(read the "
                          r"server's log, then rerun\)$",
    "not JSON": r"answered a body that is not the OpenAI API's JSON.*\(check that the URL is "
                r"an OpenAI-compatible server, then rerun\)$",
    "timeout": r"timed out \(0.5 s a request\) after 1 retries.*\(check that the server is "
               r"not stuck or overloaded, then rerun\)$",
    "model not served": r"--sailor.ranker.llm.model other: .* serves .*\(name one of them\)$",
}
"""A fault of the server at start-up (`FAULTS`) -> the error line's pattern."""


@pytest.mark.parametrize("fault", list(START_FAULTS))
def test_every_fault_at_start_up_is_one_error_line(fault, serve, tmp_path, monkeypatch, capsys):
    """`experiments/sailor.py` against a misbehaving server: one `error:` line saying what and
    how to fix it, exit 2, nothing written (the start-up check, before any compile)."""
    from sailor_jax import errors

    server, url = serve()
    server.hook, match = FAULTS[fault], START_FAULTS[fault]
    _transport(monkeypatch, retries=1, timeout_s=0.5)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(errors.DEBUG_ENV, raising=False)
    model = ["--sailor.ranker.llm.model", "other"] if fault == "model not served" else []
    with pytest.raises(SystemExit) as exit_:
        errors.report_user_errors(load_script("experiments/sailor.py").main, [
            "--sailor.ranker.kind", "llm", "--sailor.ranker.llm.endpoint", url, *model,
            "--out", "run"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert re.search(match, err), err
    assert not (tmp_path / "run").exists()


MID_RUN_FAULTS = {
    "wrong path (404)": "answered 404",
    "bad key (401)": r"refused the API key \(401\)",
    "rate limit (429)": "kept rate-limiting",
    "server error (500)": r"answered server errors \(500\)",
    "not JSON": "answered a body that is not",
    "no choices": "answered without choices",
    "timeout": "timed out",
}
"""A fault of the server while judging (`FAULTS`) -> what the error says."""


@pytest.mark.parametrize("fault", list(MID_RUN_FAULTS))
def test_every_fault_while_judging_is_one_error_line(serve, fault, monkeypatch):
    """Judging against a server that misbehaves: one line naming the endpoint, what it did
    and `--resume` (the main job prints it as its `error:` line, exit 2, after the last
    checkpoint; `test_sailor_run_survives_a_dead_server` resumes one)."""
    server, url = serve()
    _transport(monkeypatch, retries=1, timeout_s=0.5 if fault == "timeout" else 30.0)
    monkeypatch.setattr(endpoint, "CONCURRENCY", 2)
    ranker = _ranker(url, mode="pointwise")
    hook, said = FAULTS[fault], MID_RUN_FAULTS[fault]
    server.hook = lambda handler: handler.command == "POST" and hook(handler)
    with pytest.raises(EndpointError) as err:
        ranker.rank_groups(GROUPS[:1])
    message = str(err.value)
    assert re.search(f"judge endpoint {url} {said}", message), message
    assert "\n" not in message and message.endswith("; then continue with --resume)")
