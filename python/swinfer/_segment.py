"""swinfer.segment: the command-line tool's `segment`, run from Python (the same code, so the same masks)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Callable, Optional

_PROGRESS = re.compile(rb"^\s*(.+?): (\d+)/(\d+) windows")


def tool_path() -> str:
    """The swinfer executable this package carries (bin/swinfer beside this file)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "swinfer")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"swinfer: the command-line tool is missing from this package ({path}); reinstall it")
    return path


def _flag(key: str, value) -> list:
    flag = "--" + key.replace("_", "-")
    if value is None or value is False:
        return []
    if value is True:
        return [flag]
    if isinstance(value, (list, tuple)):
        return [flag, ",".join(str(v) for v in value)]
    return [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]


def segment(input, output, model, progress: Optional[Callable[[int, int], None]] = None, **options) -> dict:
    """Segments `input` (a NIfTI file, a folder, or a list of them) into `output` with `model`, as
    `swinfer segment --input ... --output ... --model ...` with every other option given by its flag's name
    (roi=96, overlap=0.5, blend="gaussian", backend="cpu", keep_largest=True, ...; see `swinfer segment --help`).
    Returns the report (what `--report` writes) as a dict. `progress(done, total)` is called as windows finish;
    without it a tqdm bar is shown when tqdm is installed. A failure raises RuntimeError with the tool's message
    (FileNotFoundError for a missing input or model)."""
    inputs = [input] if isinstance(input, (str, os.PathLike)) else list(input)
    for path in [*inputs, model]:
        if not os.path.exists(path):
            raise FileNotFoundError(2, "swinfer.segment: no such file or folder", os.fspath(path))
    if "report" in options or "quiet" in options:
        raise ValueError("swinfer.segment: the report is returned and progress goes to `progress`; drop "
                         + ", ".join(k for k in ("report", "quiet") if k in options))
    bar = None
    if progress is None:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            bar = tqdm(unit="window", desc="swinfer segment")

            def progress(done, total, bar=bar):
                bar.total = total
                bar.n = done
                bar.refresh()

    with tempfile.TemporaryDirectory(prefix="swinfer-segment-") as tmp:
        report = os.path.join(tmp, "report.json")
        command = [tool_path(), "segment", "--input", *[os.fspath(p) for p in inputs], "--output", os.fspath(output),
                   "--model", os.fspath(model), "--report", report]
        for key, value in options.items():
            command += _flag(key, value)
        errors = []
        with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as tool:
            for line in tool.stderr:
                match = _PROGRESS.match(line)
                if match and progress is not None:
                    progress(int(match.group(2)), int(match.group(3)))
                elif not match:
                    errors.append(line.decode(errors="replace"))
        if bar is not None:
            bar.close()
        if tool.returncode != 0:
            message = "".join(errors).strip() or f"exit status {tool.returncode}"
            raise RuntimeError(f"swinfer segment failed: {message}")
        with open(report, encoding="utf-8") as f:
            return json.load(f)


def main() -> None:
    """`python -m swinfer ...` and the `swinfer` script: the command-line tool with these arguments."""
    path = tool_path()
    os.execv(path, [path, *sys.argv[1:]])
