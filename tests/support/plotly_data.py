"""Read arrays back out of a plotly figure spec as Streamlit sends it (numpy arrays arrive base64-encoded)."""

from __future__ import annotations

import base64

import numpy as np


def array(value) -> np.ndarray:
    """A trace attribute (`z`, `x`, `y`, ...) as a numpy array, whether plain lists or {dtype, bdata, shape}."""
    if isinstance(value, dict) and "bdata" in value:
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        if shape:
            dims = [int(s) for s in str(shape).split(",")] if not isinstance(shape, list) else shape
            data = data.reshape(dims)
        return data
    return np.asarray(value)
