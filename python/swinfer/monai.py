"""swinfer.monai.SlidingWindowInferer: MONAI's SlidingWindowInferer, run natively when the network is swinfer's.

A MONAI bundle names it in place of monai.inferers.SlidingWindowInferer (same arguments):

    "inferer": {"_target_": "swinfer.monai.SlidingWindowInferer", "roi_size": [96, 96, 96], "overlap": 0.5}

`inferer(inputs, network)` runs swinfer's sliding window (blending and all) when `network` is a swinfer.Network,
and MONAI's own sliding window otherwise, so one configuration serves both networks. Importing this module needs
monai.
"""

from __future__ import annotations

from monai.inferers import Inferer
from monai.inferers import SlidingWindowInferer as _MonaiSlidingWindowInferer
from monai.utils import convert_to_dst_type

from . import Network

__all__ = ["SlidingWindowInferer"]

# MONAI's other arguments (sw_device, device, buffer_steps, ...) say where MONAI keeps its buffers; they apply to
# MONAI's networks only (swinfer's window keeps its own on the backend's device).


class SlidingWindowInferer(Inferer):
    def __init__(self, roi_size, sw_batch_size=1, overlap=0.25, mode="constant", sigma_scale=0.125,
                 padding_mode="constant", cval=0.0, progress=False, **monai_options):
        super().__init__()
        self._monai = _MonaiSlidingWindowInferer(roi_size=roi_size, sw_batch_size=sw_batch_size, overlap=overlap,
                                                 mode=mode, sigma_scale=sigma_scale, padding_mode=padding_mode,
                                                 cval=cval, progress=progress, **monai_options)
        self._monai_options = monai_options
        # MONAI's BlendMode and PytorchPadMode enums or their text.
        self._window = dict(roi_size=roi_size, sw_batch_size=sw_batch_size, overlap=overlap,
                            mode=str(getattr(mode, "value", mode)), sigma_scale=sigma_scale,
                            padding_mode=str(getattr(padding_mode, "value", padding_mode)), cval=cval)
        self._progress = progress

    def __call__(self, inputs, network, *args, **kwargs):
        if not isinstance(network, Network):
            return self._monai(inputs, network, *args, **kwargs)
        if args or kwargs:
            raise ValueError("swinfer.monai.SlidingWindowInferer: a swinfer.Network takes no extra predictor "
                             "arguments")
        progress = None
        if self._progress:
            from tqdm.auto import tqdm

            bar = tqdm(unit="window", desc="swinfer")

            def progress(done, total):
                bar.total = total
                bar.n = done
                bar.refresh()

        logits = network.sliding_window(inputs, **self._window, progress=progress)
        # As MONAI's sliding window does: the result takes the input's type, device and metadata (a MetaTensor in,
        # a MetaTensor out, so Invertd can undo the transforms).
        return convert_to_dst_type(logits, inputs, device=inputs.device)[0]
