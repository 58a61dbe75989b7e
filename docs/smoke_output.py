"""Write the smoke preset's real output into docs/running.md ("The smoke preset's real output").

    python docs/smoke_output.py

Runs `python experiments/sailor.py --preset smoke --out /tmp/readme_smoke` (a fresh folder; the
output to a pipe, 160 columns wide, as a user's log file gets it), then replaces the fenced
block under that command in docs/running.md with what it printed, and the line above the block
that names the machine and the date. tests/test_readme.py checks that the page's block has the
format today's code prints.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "running.md")
OUT = "/tmp/readme_smoke"
COMMAND = f"python experiments/sailor.py --preset smoke --out {OUT}"


def cpu() -> str:
    """The CPU's model name and family/model, as `lscpu` gives them."""
    info = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    field = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    get = lambda k: field.get(k, "?").strip()  # noqa: E731
    return f"{get('CPU(s)')}-core {get('Model name')} (family {get('CPU family')}, model " \
           f"{get('Model')})"


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    done = subprocess.run([sys.executable, *COMMAND.split()[1:]], cwd=ROOT, text=True,
                          capture_output=True, env={**os.environ, "COLUMNS": "160"})
    if done.returncode != 0:
        sys.exit(f"error: the smoke failed ({done.returncode}): {done.stderr[-500:]}")
    with open(PAGE, encoding="utf-8") as f:
        page = f.read()
    block = re.compile(r"(```\n\$ " + re.escape(COMMAND) + r"\n)(.*?)(```)", re.S)
    if not block.search(page):
        sys.exit(f"error: {PAGE} has no block starting with '$ {COMMAND}'")
    page = block.sub(lambda m: m.group(1) + done.stdout.rstrip("\n") + "\n" + m.group(3), page)
    machine = (f"Real output of the smoke preset on the {cpu()}, "
               f"{datetime.date.today().isoformat()}, Python {platform.python_version()}")
    page = re.sub(r"Real output of the smoke preset on the .*?, Python \S+", machine, page,
                  count=1, flags=re.S)
    with open(PAGE, "w", encoding="utf-8") as f:
        f.write(page)
    print(f"{PAGE}: the smoke's output, {len(done.stdout.splitlines())} lines")


if __name__ == "__main__":
    main()
