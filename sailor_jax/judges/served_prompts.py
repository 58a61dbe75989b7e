"""Prompts rendered and counted by the judge's server, when the served model's tokenizer is not
on this machine; and the served model's precision. Host-only.

The endpoint judge (`judges.endpoint`) sends the in-process prompts (the chat template, then
the answer prefix) to `/v1/completions` whenever it can render them: the in-process judge's
prompts, so its scores. With the tokenizer on this machine it renders them itself; without one
(a model served under an alias, vLLM's served name, a model file elsewhere) it asks the server,
where the server offers it:

* **llama.cpp's `llama-server`**: `POST /apply-template` `{"messages"}` -> `{"prompt"}`
  renders the messages with the model's chat template and the generation prompt; `POST
  /tokenize` `{"content", "add_special": false}` -> `{"tokens"}` and `POST /detokenize`
  `{"tokens"}` -> `{"content"}` count and find the label tokens.
* **vLLM**: `POST /tokenize` `{"model", "messages", "add_generation_prompt": true,
  "add_special_tokens": false}` -> `{"tokens"}`, then `POST /detokenize` `{"model",
  "tokens"}` -> `{"prompt"}` renders; `POST /tokenize` `{"model", "prompt",
  "add_special_tokens": false}` -> `{"tokens"}` counts and finds the label tokens.

The routes sit beside `/v1` (at the server's root). The answer prefix is appended to the
rendered text, as `hf_backend.LLMBackend.render_chat` does. A server that offers neither
(llama-cpp-python has `/extras/tokenize` and no template; hosted APIs) leaves the judge on the
chat API, and `CHAT_NOTICE` says what gives it the completions API.

**Precision.** llama.cpp reports the served file in `/v1/models` `meta`: `size` bytes over
`n_params` weights, and its type's name `ftype`. Below `MIN_BITS` bits per weight
the judge orders worse (docs/llm_judge.md); `precision_notice` says so, once a run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MIN_BITS = 8.0
"""Bits per weight below which `precision_notice` warns (Q8_0 is 8.5, F16 16)."""
CHAT_NOTICE = ("the judge's endpoint renders no chat template (llama.cpp's llama-server and "
               "vLLM do; this server does not) and no tokenizer of {model!r} is on this "
               "machine, so the judge uses the chat API, which orders worse (docs/llm_judge.md): "
               "serve the model under its GGUF file's path, or pass "
               "--sailor.ranker.llm.tokenizer FILE")
"""The one-line notice of a judge left on the chat API."""

Request = Callable[[str, str, dict | None], Any]
"""`request(method, url, body)`: the server's JSON answer; raises the client's errors."""


def server_root(endpoint: str) -> str:
    """The server's root URL: `endpoint` without a trailing `/v1` (`http://h:8000/v1` ->
    `http://h:8000`)."""
    root = endpoint.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


class ServedPrompts:
    """Render and count prompts on the server (`find` builds one).

    Attributes:
      server: "llama.cpp" or "vllm": which routes it uses (module docstring).
      root: the server's root URL.
    """

    def __init__(self, server: str, root: str, model: str, request: Request) -> None:
        self.server, self.root, self.model, self._request = server, root, model, request
        self._counts: dict[str, int] = {}
        self._pieces: dict[int, str] = {}

    def render(self, system: str, user: str, answer_prefix: str = "") -> str:
        """The chat template applied to the system and user messages (with the generation
        prompt), then `answer_prefix`: `render_chat`'s text, rendered by the server.

        Raises:
          The request's errors (`endpoint.EndpointBackend._call` turns them into one line).
        """
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        if self.server == "llama.cpp":
            text = self._request("POST", f"{self.root}/apply-template",
                                 {"messages": messages})["prompt"]
        else:
            tokens = self._request("POST", f"{self.root}/tokenize", {
                "model": self.model, "messages": messages, "add_generation_prompt": True,
                "add_special_tokens": False})["tokens"]
            text = self._request("POST", f"{self.root}/detokenize",
                                 {"model": self.model, "tokens": tokens})["prompt"]
        return text + answer_prefix

    def count(self, text: str) -> int:
        """Tokens of a rendered prompt, as the server tokenizes it (cached per text)."""
        if text not in self._counts:
            self._counts[text] = len(self.ids(text))
        return self._counts[text]

    def ids(self, text: str) -> list[int]:
        """The token ids of `text`, no special tokens added (they are in the text)."""
        body = ({"content": text, "add_special": False} if self.server == "llama.cpp" else
                {"model": self.model, "prompt": text, "add_special_tokens": False})
        return [int(t) for t in self._request("POST", f"{self.root}/tokenize", body)["tokens"]]

    def piece(self, token: int) -> str:
        """The text of one token id (cached per id)."""
        if token not in self._pieces:
            body = {"tokens": [int(token)]} | ({} if self.server == "llama.cpp" else
                                               {"model": self.model})
            answer = self._request("POST", f"{self.root}/detokenize", body)
            self._pieces[token] = answer["content" if self.server == "llama.cpp" else "prompt"]
        return self._pieces[token]


def _answer(request: Request, method: str, url: str, body: dict | None = None) -> Any:
    """The server's answer, or None where it offers no such route or answers unreadably."""
    try:
        answer = request(method, url, body)
    except Exception:  # noqa: BLE001 (a probe: any refusal means "not offered")
        return None
    return answer if isinstance(answer, dict) else None


def find(endpoint: str, model: str, request: Request) -> ServedPrompts | None:
    """The server's own prompt rendering, if it offers it: llama.cpp's (`/apply-template`
    answering a prompt), else vLLM's (`/tokenize` of messages); None when it offers neither.
    At most two requests; a route's refusal reads as "not offered"."""
    root = server_root(endpoint)
    probe = _answer(request, "POST", f"{root}/apply-template",
                    {"messages": [{"role": "user", "content": "2048"}]})
    if probe and isinstance(probe.get("prompt"), str):
        return ServedPrompts("llama.cpp", root, model, request)
    tokens = _answer(request, "POST", f"{root}/tokenize", {
        "model": model, "messages": [{"role": "user", "content": "2048"}],
        "add_generation_prompt": True})
    if tokens and isinstance(tokens.get("tokens"), list):
        return ServedPrompts("vllm", root, model, request)
    return None


def bits_per_weight(meta: dict | None) -> float | None:
    """`8 * size / n_params` of llama.cpp's `/v1/models` `meta` (None without both)."""
    if not meta or not meta.get("size") or not meta.get("n_params"):
        return None
    return 8.0 * float(meta["size"]) / float(meta["n_params"])


def precision_notice(meta: dict | None) -> str | None:
    """One line when the served model is stored below `MIN_BITS` bits per weight, from its
    `/v1/models` entry's `meta` (llama.cpp's: `size`, `n_params` and the type's name `ftype`);
    None when it is not, or when the server does not say."""
    bits = bits_per_weight(meta)
    if bits is None or bits >= MIN_BITS:
        return None
    kind = f" ({meta['ftype']})" if meta.get("ftype") else ""
    return (f"the judge's endpoint serves its model at {bits:.1f} bits per weight{kind}: "
            f"below {MIN_BITS:g} bits the judge orders worse (SmolLM2's Q4_1 file: -0.05 to "
            f"-0.08 skill-order accuracy against F16, docs/llm_judge.md); serve an F16 or Q8_0 "
            f"copy")
