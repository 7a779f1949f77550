"""Which PyTorch parameter each ONNX initializer of a fixture is.

torch.onnx.export keeps some parameter names and exports others transposed
under generated names (onnx::MatMul_N), so initializers are matched by value
against the parameters the model started from.
"""
import numpy as np
import onnx
from onnx import numpy_helper


def match_initializers(onnx_path, initial):
    """Yields (initializer name, torch parameter name, transposed) for every
    float initializer equal to a parameter in `initial` (name -> array) or to
    its transpose."""
    for init in onnx.load(onnx_path).graph.initializer:
        value = numpy_helper.to_array(init)
        if value.dtype != np.float32 or value.size < 2:
            continue
        for name, p in initial.items():
            if p.shape == value.shape and np.array_equal(p, value):
                yield init.name, name, False
                break
            if p.ndim == 2 and p.T.shape == value.shape and np.array_equal(p.T, value):
                yield init.name, name, True
                break
