"""Each output of a shadow run against the shadow's final values of it: the values side by
side (the HTML profile's heat map) and the error (`run --shadow`'s per-output line)."""
from __future__ import annotations

import numpy as np

from nkirun.hw import dtypes as dt


def final_values(shadow, outputs: dict) -> dict:
    """label -> (the run's values, the shadow's final values of the same elements) for each
    output (label -> (tensor name, its values as the run left them, and `pick`: None, or how
    they were read from the tensor, applied to the shadow's tensor too)); outputs the shadow
    does not hold (packed MX data, a run it stopped before) left out."""
    out = {}
    held = shadow.machine.buffers if shadow.machine is not None else {}
    for label, (name, real, pick) in outputs.items():
        real, ref = np.asarray(real), held.get(name)
        if ref is not None and pick is not None:
            ref = np.asarray(pick(np.ascontiguousarray(ref)))
        if (dt.from_numpy(real.dtype) is None or ref is None or np.size(ref) != real.size
                or shadow.stopped):
            continue
        out[label] = (real, np.asarray(ref).reshape(real.shape))
    return out


def final_errors(shadow, outputs: dict) -> dict:
    """label -> (tensor name, Err, peak index) for each output of final_values()."""
    from nkirun.runner.shadow_metrics import errors
    out = {}
    for label, (real, ref) in final_values(shadow, outputs).items():
        d = dt.from_numpy(real.dtype)
        wide = np.float32 if d.is_float else np.float64
        (e,) = errors([real.reshape(-1).astype(wide)], ref.reshape(-1), d)
        peak = tuple(int(i) for i in np.unravel_index(e.at, real.shape)) if e.at >= 0 else None
        out[label] = (outputs[label][0], e, peak)
    return out
