"""swinfer.segment (the tool's segment from Python) on the bundled demo against the tool run directly, and
`python -m swinfer`."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pytest

from conftest import REPO

DEMO = os.path.join(REPO, "data", "demo")
ARGS = dict(config=os.path.join(DEMO, "model_config.json"), pipeline=os.path.join(DEMO, "pipeline.json"),
            roi=64, overlap=0.25, sw_batch=1, truth=os.path.join(DEMO, "phantom_truth.nii.gz"))


def voxels(path):
    """The NIfTI-1 file's voxel bytes (after vox_offset), so headers may differ in nothing that matters."""
    data = gzip.open(path).read()
    vox_offset = int(__import__("struct").unpack_from("<f", data, 108)[0])
    return data[vox_offset:]


def test_segment_gives_the_tools_mask(swinfer, tmp_path):
    calls = []
    report = swinfer.segment(os.path.join(DEMO, "phantom.nii.gz"), tmp_path / "python.nii.gz",
                             model=os.path.join(DEMO, "model.pt"), progress=lambda d, t: calls.append((d, t)),
                             **ARGS)
    tool = [swinfer.tool_path(), "segment", "-q", "--input", os.path.join(DEMO, "phantom.nii.gz"),
            "--output", str(tmp_path / "tool.nii.gz"), "--model", os.path.join(DEMO, "model.pt")]
    for key, value in ARGS.items():
        tool += ["--" + key.replace("_", "-"), str(value)]
    subprocess.run(tool, check=True)
    assert voxels(tmp_path / "python.nii.gz") == voxels(tmp_path / "tool.nii.gz")
    assert abs(report["dice"]["1"] - 0.8903) < 5e-4, report["dice"]
    assert calls and calls[-1][0] == calls[-1][1]


def test_segment_errors(swinfer, tmp_path):
    with pytest.raises(FileNotFoundError):
        swinfer.segment(tmp_path / "none.nii.gz", tmp_path / "out.nii.gz", model=os.path.join(DEMO, "model.pt"))
    with pytest.raises(RuntimeError, match=r"--overlap: 'overlap' is 1.5; allowed range \[0, 0.99\]"):
        swinfer.segment(os.path.join(DEMO, "phantom.nii.gz"), tmp_path / "out.nii.gz",
                        model=os.path.join(DEMO, "model.pt"), overlap=1.5)
    assert not (tmp_path / "out.nii.gz").exists()


def test_python_dash_m_runs_the_tool(swinfer):
    out = subprocess.run([sys.executable, "-m", "swinfer", "--version"], capture_output=True, text=True, check=True)
    assert swinfer.__version__ in out.stdout
