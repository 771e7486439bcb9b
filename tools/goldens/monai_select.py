"""Import one chosen MONAI release into this process (one MONAI per process).

Layout on the machine that makes the goldens (see tests/data/goldens/README.md):

    /usr/bin/python3 -m pip install --break-system-packages --no-deps monai==1.5.0 einops   (site-packages)
    /usr/bin/python3 -m pip install --no-deps --target /opt/monai-1.4.0 monai==1.4.0
    /usr/bin/python3 -m pip install --no-deps --target /opt/monai-1.6.1 monai==1.6.1

Any version other than the site-packages one is taken from $SWINFER_MONAI_ROOT/monai-<version> (default /opt).

MONAI 1.6.x declares torch>=2.8. On torch 1.13 its `import monai` fails in monai/networks/nets/dints.py, whose
`@torch.jit.interface` classes annotate `torch.Tensor | None` (PEP 604), which the TorchScript frontend of
torch 1.13 cannot compile. SwinUNETR does not use those interfaces, so for 1.6.x this module makes
torch.jit.interface a no-op during the import only (MONAI's files stay untouched).
"""

from __future__ import annotations

import os
import sys

SITE_VERSION = "1.5.0"


def import_monai(version: str):
    if "monai" in sys.modules:
        have = sys.modules["monai"].__version__
        if have != version:
            raise RuntimeError(f"MONAI {have} already imported in this process; {version} needs its own process")
        return sys.modules["monai"]
    if version != SITE_VERSION:
        root = os.environ.get("SWINFER_MONAI_ROOT", "/opt")
        path = os.path.join(root, f"monai-{version}")
        if not os.path.isdir(os.path.join(path, "monai")):
            raise RuntimeError(
                f"MONAI {version} not found under {path}; install it with "
                f"`python3 -m pip install --no-deps --target {path} monai=={version}`"
            )
        sys.path.insert(0, path)
    import torch

    shim = tuple(int(p) for p in version.split(".")[:2]) >= (1, 6) and torch.__version__.startswith("1.")
    saved = torch.jit.interface
    if shim:
        torch.jit.interface = lambda obj: obj
    try:
        import monai
    finally:
        torch.jit.interface = saved
    if monai.__version__ != version:
        raise RuntimeError(f"wanted MONAI {version}, imported {monai.__version__} from {monai.__file__}")
    return monai
