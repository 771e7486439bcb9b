#!/usr/bin/env bash
# Makes a Python environment for building and testing swinfer's Python package: a venv on Debian's python3 that
# sees Debian's numpy, torch and pytest (tools/install-deps.sh with SWINFER_PYTHON_DEPS=1) and adds what Debian
# lacks from PyPI, pinned: nanobind (the module's bindings), scikit-build-core (pip install .), MONAI 1.5 and einops
# (the tests' reference). MONAI is installed without its dependency check: it asks for torch >= 2.4 while
# Debian 12 has 1.13, under which MONAI 1.5's SwinUNETR and sliding window run (the goldens are made so too).
#   bash tools/python-env.sh <folder>     then <folder>/bin/python
set -euo pipefail
env=${1:?usage: tools/python-env.sh <folder>}
if [[ ! -x "$env/bin/python" ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$env"
fi
"$env/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
  nanobind==2.9.2 scikit-build-core==0.11.6 pathspec==0.12.1 packaging==24.2 monai==1.5.0 einops==0.8.1
