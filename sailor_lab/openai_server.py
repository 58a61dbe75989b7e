"""A small OpenAI-compatible server over the project's `transformers` backend. Host-only.

It serves one model (`hf_backend.load_model`) on `/v1/models`, `/v1/completions` and
`/v1/chat/completions`, greedy only, with next-token `logprobs` / `top_logprobs` and `usage`
token counts, enough for the endpoint judge (`judges.endpoint`): the tests run the judge
against it over real HTTP, and a user can try `--sailor.ranker.llm.endpoint` on a laptop:

    python -m sailor_lab.openai_server --port 8000 &     # the embedded SmolLM2
    python experiments/sailor.py --preset smoke --sailor.ranker.kind llm \\
        --sailor.ranker.llm.endpoint http://127.0.0.1:8000/v1

For real use serve with vLLM, SGLang or llama.cpp (they batch, cache prefixes and run on a GPU);
this server runs one request at a time (`ThreadingHTTPServer`, the model behind a lock).
`--no-logprobs` answers without log-probabilities, as many hosted chat APIs do. `--routes`
adds the routes beside `/v1` that render and count prompts (`judges.served_prompts`):
llama.cpp's `llama-server` (`/apply-template`, `/tokenize`, `/detokenize`, a `meta` per
model in `/v1/models`, and log-probabilities on `/v1/completions` in the chat API's form, as
`llama-server` answers) or vLLM's (`/tokenize` of a prompt or of chat messages,
`/detokenize`); `--bits` is the precision the llama.cpp routes report (`meta` `size` over
`n_params`, and `ftype`). `hook`, when set on the server, sees every request first and may
answer it itself (the tests' faults).
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from sailor_jax.judges import hf_backend


@dataclasses.dataclass
class Served:
    """The model a server answers with, and how."""

    backend: hf_backend.LLMBackend
    name: str
    logprobs: bool = True
    routes: str = "openai"
    """"openai" (the `/v1` API only), "llama.cpp" or "vllm": which server's routes it adds."""
    bits: float = 16.0
    """Bits per weight the llama.cpp routes report."""
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def top_logprobs(self, prompt: str, k: int) -> tuple[str, float, list[tuple[str, float]]]:
        """The greedy next token, its log-probability and the `k` most likely `(token, lp)`."""
        vocab = int(self.backend.model.config.vocab_size)
        logp, _ = self.backend.next_token_logprobs([prompt], range(vocab), 1)
        order = np.argsort(-logp[0], kind="stable")[: max(1, k)]
        top = [(self.backend.tokenizer.decode([int(i)]), float(logp[0, i])) for i in order]
        return top[0][0], top[0][1], top

    def complete(self, prompt: str, max_tokens: int, k: int | None) -> dict[str, Any]:
        """One completion: text, first-token log-probabilities (k given) and token counts."""
        with self.lock:
            first = self.top_logprobs(prompt, k or 1) if k is not None or max_tokens == 1 else None
            if max_tokens == 1:
                text = first[0]
            else:
                text = self.backend.generate([prompt], max_tokens, 1)[0][0]
            prompt_tokens = self.backend.count_tokens(prompt)
            completion_tokens = min(max_tokens, max(1, self.backend.count_tokens(text)))
        return {"text": text, "first": first if k is not None and self.logprobs else None,
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}}


def _entry(token: str, logprob: float) -> dict:
    """One token's log-probability in the chat API's form."""
    return {"token": token, "logprob": logprob, "bytes": list(token.encode())}


def _completion(served: Served, body: dict) -> dict:
    prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
    k = body.get("logprobs")
    choices, usage = [], {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for i, prompt in enumerate(prompts):
        out = served.complete(prompt, int(body.get("max_tokens") or 16), k)
        lp = None
        if out["first"] is not None:
            token, logprob, top = out["first"]
            lp = ({"content": [_entry(token, logprob)  # llama-server's form: the chat API's
                               | {"top_logprobs": [_entry(t, x) for t, x in top]}]}
                  if served.routes == "llama.cpp" else
                  {"tokens": [token], "token_logprobs": [logprob], "text_offset": [0],
                   "top_logprobs": [dict(reversed(top))]})  # most likely wins a repeated text
        choices.append({"index": i, "text": out["text"], "logprobs": lp,
                        "finish_reason": "length"})
        usage = {key: usage[key] + out["usage"][key] for key in usage}
    return {"id": f"cmpl-{time.time_ns()}", "object": "text_completion",
            "created": int(time.time()), "model": served.name, "choices": choices,
            "usage": usage}


def _chat(served: Served, body: dict) -> dict:
    tokenizer = served.backend.tokenizer
    messages = body["messages"]
    if getattr(tokenizer, "chat_template", None):
        prompt = tokenizer.apply_chat_template(messages, tokenize=False,
                                               add_generation_prompt=True)
    else:
        prompt = "\n\n".join(m["content"] for m in messages) + "\n\n"
    k = body.get("top_logprobs", 0) if body.get("logprobs") else None
    out = served.complete(prompt, int(body.get("max_completion_tokens")
                                      or body.get("max_tokens") or 16), k)
    lp = None
    if out["first"] is not None:
        token, logprob, top = out["first"]
        lp = {"content": [_entry(token, logprob)
                          | {"top_logprobs": [_entry(t, x) for t, x in top]}]}
    choice = {"index": 0, "message": {"role": "assistant", "content": out["text"]},
              "logprobs": lp, "finish_reason": "length"}
    return {"id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion",
            "created": int(time.time()), "model": served.name, "choices": [choice],
            "usage": out["usage"]}


FTYPES = {16.0: "F16", 8.5: "Q8_0", 5.0: "Q4_1", 4.5: "Q4_0"}
"""llama.cpp's names of the file types whose bits per weight `--bits` may give."""


def _messages_prompt(served: Served, body: dict) -> str:
    return served.backend.tokenizer.apply_chat_template(
        body["messages"], tokenize=False, add_generation_prompt=body.get(
            "add_generation_prompt", True))


def _apply_template(served: Served, body: dict) -> dict:
    return {"prompt": _messages_prompt(served, body)}


def _tokenize(served: Served, body: dict) -> dict:
    """llama.cpp's `{"content"}` -> `{"tokens"}`, or vLLM's `{"prompt"}` or `{"messages"}` ->
    `{"tokens", "count", "max_model_len"}`."""
    tokenizer = served.backend.tokenizer
    if served.routes == "llama.cpp":
        add = bool(body.get("add_special", False))
        return {"tokens": tokenizer(body["content"], add_special_tokens=add)["input_ids"]}
    if "messages" in body:
        text, add = _messages_prompt(served, body), bool(body.get("add_special_tokens", False))
    else:
        text, add = body["prompt"], bool(body.get("add_special_tokens", True))
    ids = tokenizer(text, add_special_tokens=add)["input_ids"]
    return {"tokens": ids, "count": len(ids), "max_model_len": served.backend.context_length}


def _detokenize(served: Served, body: dict) -> dict:
    text = served.backend.tokenizer.decode(body["tokens"])
    return {"content": text} if served.routes == "llama.cpp" else {"prompt": text}


def _meta(served: Served) -> dict:
    params = int(served.backend.model.num_parameters())
    return {"n_params": params, "size": int(params * served.bits / 8),
            "ftype": FTYPES.get(served.bits, f"{served.bits:g} bits"),
            "n_ctx_train": served.backend.context_length}


class Handler(http.server.BaseHTTPRequestHandler):
    """Routes the three endpoints; errors are OpenAI-style JSON bodies."""

    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.server.hook is not None and self.server.hook(self):
            return
        served = self.server.served
        if self.path.rstrip("/") != "/v1/models":
            return self.send_json(404, {"error": {"message": f"no route {self.path}"}})
        entry = {"id": served.name, "object": "model", "created": 0, "owned_by": "sailor-jax",
                 "max_model_len": served.backend.context_length}
        if served.routes == "llama.cpp":
            entry["meta"] = _meta(served)
        self.send_json(200, {"object": "list", "data": [entry]})

    def do_POST(self) -> None:
        if self.server.hook is not None and self.server.hook(self):
            return
        served = self.server.served
        routes = {"/v1/completions": _completion, "/v1/chat/completions": _chat}
        if served.routes != "openai":
            routes |= {"/tokenize": _tokenize, "/detokenize": _detokenize}
        if served.routes == "llama.cpp":
            routes["/apply-template"] = _apply_template
        route = routes.get(self.path.rstrip("/"))
        if route is None:
            return self.send_json(404, {"error": {"message": f"no route {self.path}"}})
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            self.send_json(200, route(served, body))
        except (KeyError, TypeError, ValueError) as err:
            self.send_json(400, {"error": {"message": f"bad request: {err}"}})


class Server(http.server.ThreadingHTTPServer):
    """`ThreadingHTTPServer` holding the served model and an optional request `hook`."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], served: Served) -> None:
        super().__init__(address, Handler)
        self.served = served
        self.hook: Callable[[Handler], bool] | None = None


def start(served: Served, host: str = "127.0.0.1", port: int = 0) -> Server:
    """Serve in a background thread (port 0: a free one, see `server.server_address`)."""
    server = Server((host, port), served)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def main(model: str | None = None, gguf_file: str | None = None, name: str | None = None,
         host: str = "127.0.0.1", port: int = 8000, logprobs: bool = True,
         routes: str = "openai", bits: float = 16.0, device: str = "auto",
         dtype: str = "auto") -> None:
    """Serve `model` (None: the embedded SmolLM2-135M-Instruct) until Ctrl-C.

    Args:
      model: HF model id or local folder (None: the embedded SmolLM2-135M-Instruct).
      gguf_file: GGUF file inside `model`.
      name: the model's name in the API (None: `model`, or "smollm2-135m-instruct").
      host: address to listen on.
      port: port to listen on.
      logprobs: return log-probabilities (`--no-logprobs`: never, as many hosted APIs).
      routes: "openai", "llama.cpp" or "vllm": the routes beside `/v1` it adds (`Served`).
      bits: bits per weight the llama.cpp routes report.
      device: torch device, as `--sailor.ranker.llm.device`.
      dtype: torch dtype, as `--sailor.ranker.llm.dtype`.
    """
    backend = hf_backend.load_model(model, gguf_file, dtype, device)
    served = Served(backend, name or model or "smollm2-135m-instruct", logprobs, routes, bits)
    server = Server((host, port), served)
    print(f"serving {served.name} on http://{host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.server_close()


if __name__ == "__main__":
    import tyro

    tyro.cli(main)
