"""swinfer: MONAI's SwinUNETR and the Swin Fusion UNETR variants run by swinfer's C++ engine.

    net = swinfer.load("model.pt")                      # backend, precision, layout as in the CLI
    logits = net(x)                                     # numpy or torch (N, C, D, H, W), float32
    probs = net.sliding_window(volume, roi_size=96)     # MONAI's sliding_window_inference, run natively

`net` is also a predictor for monai.inferers.sliding_window_inference, and swinfer.monai.SlidingWindowInferer stands in
for MONAI's SlidingWindowInferer. Errors: ValueError for shapes, dtypes and options, FileNotFoundError and OSError for
files, RuntimeError otherwise.
"""

from __future__ import annotations

import os
from typing import Callable, Optional, Sequence, Union

from . import _swinfer
from ._segment import segment, tool_path

__all__ = ["Network", "load", "segment", "named_options", "reuse_freed_memory", "backends", "tool_path",
           "__version__"]
__version__ = _swinfer.__version__
#: The backends this build has ("cpu" always; "onednn" and "hip" when built with them).
backends = tuple(_swinfer.backends)

_FLOAT_TYPES_BY_PRECISION = {"fp16": "float16", "bf16": "bfloat16"}


def named_options() -> list:
    """The backend options load() takes as keyword arguments: dicts of backend, key, values and meaning."""
    return list(_swinfer.named_options())


def reuse_freed_memory() -> None:
    """Keeps memory the process frees for its next allocations (glibc's malloc: no fresh mappings for large blocks,
    no trimming), as the swinfer tool does at start-up. Repeated forwards and windows then reuse their activations
    instead of page-faulting them in again: about 9 % of an fs48 forward on 2 cores, for a peak resident memory that
    stays with the process. Process-wide, so the package leaves it to you: call it once in a program that mostly
    runs swinfer."""
    _swinfer.reuse_freed_memory()


def _torch():
    import torch  # only reached with a torch tensor in hand

    return torch


def _is_torch(x) -> bool:
    """torch.Tensor or a subclass (MONAI's MetaTensor), without importing torch."""
    return any(c.__module__.split(".")[0] == "torch" and c.__name__ == "Tensor" for c in type(x).__mro__)


def _per_axis(value, name: str, kind):
    values = [value] if isinstance(value, (int, float)) else list(value)
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"swinfer: {name} must be a number or a sequence of numbers, got {value!r}")
    return [kind(v) for v in values]


class Network:
    """A SwinUNETR-family network on a swinfer backend. Made by swinfer.load()."""

    def __init__(self, core, precision: str):
        self._core = core
        self._precision = precision

    @property
    def info(self) -> dict:
        """Architecture, configuration, parameter count, what runs (backend/precision/layout) and on which device."""
        return self._core.info

    @property
    def in_channels(self) -> int:
        return self._core.in_channels

    @property
    def out_channels(self) -> int:
        return self._core.out_channels

    def __repr__(self) -> str:
        info = self._core.info
        return f"<swinfer.Network {info['arch']} {info['runs']} from {info['model']!r}>"

    def _torch_input(self, x):
        """A detached float32 CPU tensor, and how to give the result back (dtype and device of x)."""
        torch = _torch()
        dtype, device = x.dtype, x.device
        if dtype in (torch.float16, torch.bfloat16):
            wanted = _FLOAT_TYPES_BY_PRECISION.get(self._precision)
            if str(dtype) != f"torch.{wanted}":
                raise ValueError(f"swinfer: a {dtype} input needs a network of that precision; this one is "
                                 f"{self._precision} (give float32, or load with the matching precision)")
            x = x.float()
        elif dtype != torch.float32:
            raise ValueError(f"swinfer: input must be float32 (or float16/bfloat16 for such a network), got {dtype}")
        # No GPU array exchange yet: device tensors come to the host and the result goes back.
        return x.detach().cpu().as_subclass(torch.Tensor), (lambda out: out.to(device=device, dtype=dtype) if out.is_floating_point()
                                  else out.to(device=device))

    def __call__(self, x):
        """Logits of one forward pass: x is (N, in_channels, D, H, W) float32, numpy or torch, any strides; the
        result is of the same kind, in x's layout (channels-last in, channels-last out). Contiguous float32 input
        is read in place; the GIL is released while the network runs."""
        if _is_torch(x):
            host, back = self._torch_input(x)
            return back(self._core.forward_torch(host))
        if type(x).__module__ == "numpy":
            return self._core.forward_numpy(x)
        raise TypeError(f"swinfer: input must be a numpy.ndarray or torch.Tensor, got {type(x).__name__}")

    forward = __call__

    def sliding_window(self, x, roi_size: Union[int, Sequence[int]], sw_batch_size: int = 1,
                       overlap: Union[float, Sequence[float]] = 0.25, mode: str = "constant",
                       sigma_scale: Union[float, Sequence[float]] = 0.125, padding_mode: str = "constant",
                       cval: float = 0.0, argmax: bool = False, threads: int = 0,
                       progress: Optional[Callable[[int, int], None]] = None):
        """monai.inferers.sliding_window_inference(x, roi_size, sw_batch_size, self, overlap, mode, sigma_scale,
        padding_mode, cval), run natively: blended logits (N, out_channels, D, H, W) float32, or with argmax=True
        the softmax-argmax labels as uint8 (N, 1, D, H, W). numpy in, numpy out; torch in, torch out.
        `progress(done, total)` is called after each window batch."""
        options = _swinfer.window_options(_per_axis(roi_size, "roi_size", int), int(sw_batch_size),
                                          _per_axis(overlap, "overlap", float), str(mode),
                                          _per_axis(sigma_scale, "sigma_scale", float), str(padding_mode),
                                          float(cval), int(threads))
        if _is_torch(x):
            host, back = self._torch_input(x)
            return back(self._core.sliding_window(host, options, bool(argmax), True, progress))
        if type(x).__module__ == "numpy":
            return self._core.sliding_window(x, options, bool(argmax), False, progress)
        raise TypeError(f"swinfer: input must be a numpy.ndarray or torch.Tensor, got {type(x).__name__}")


def load(model: Union[str, os.PathLike], config: Optional[Union[str, os.PathLike]] = None, backend: str = "cpu",
         precision: str = "fp32", layout: str = "ndhwc", threads: Optional[int] = None,
         calibration: Optional[Union[str, os.PathLike]] = None, int8_dynamic: bool = False,
         **backend_options) -> Network:
    """Loads a SwinUNETR or Swin Fusion UNETR checkpoint (.pt/.pth from torch.save, .safetensors, or an int8 model
    file from `swinfer quantize`) onto a backend. The configuration is inferred from the weights unless `config`
    (MONAI's SwinUNETR arguments or a bundle's network_def, JSON) is given. `threads`: None or 0 uses every
    hardware thread. `backend_options` are the backend's own settings by name (swinfer.named_options()), e.g.
    conv3d="direct" or bf16_weights="rounded" for cpu, device=1 for hip."""
    model, config = os.fspath(model), (os.fspath(config) if config is not None else None)
    for path, what in ((model, "model"), (config, "config")):
        if path is not None and not os.path.exists(path):
            raise FileNotFoundError(2, f"swinfer.load: no {what} file", path)
    if calibration is not None and not os.path.exists(os.fspath(calibration)):
        raise FileNotFoundError(2, "swinfer.load: no calibration file", os.fspath(calibration))
    options = {}
    for key, value in backend_options.items():
        options[key] = ("1" if value else "0") if isinstance(value, bool) else os.fspath(value) if isinstance(
            value, os.PathLike) else str(value)
    core = _swinfer.load(model, config, str(backend), str(precision), str(layout), int(threads or 0),
                         os.fspath(calibration) if calibration is not None else None, bool(int8_dynamic), options)
    return Network(core, str(precision))
