"""Which PyTorch parameter each ONNX initializer of a fixture is.

torch.onnx.export keeps some parameter names and exports others transposed
under generated names (onnx::MatMul_N), so initializers are matched by value
against the parameters the model started from.
"""
import numpy as np
import onnx
from onnx import numpy_helper


def parameters_of_initializers(onnx_path, initial):
    """Yields (initializer name, [(torch parameter name, transposed), ...]):
    the parameters in `initial` (name -> array) that each float initializer
    stands for. A parameter belongs to the one initializer equal to it (or to
    its transpose); to the one of its name when several are; when it cannot
    be told (equal zero biases the export folded or merged differently), the
    candidate initializers are left out, as is a constant initializer (zeros)
    several parameters equal. Several parameters can belong to one
    initializer: the exporter merges equal parameters (nn.TransformerEncoder
    deep-copies its first layer), and the ONNX model then shares that weight,
    so its gradient is the sum of theirs."""
    inits = []
    for init in onnx.load(onnx_path).graph.initializer:
        value = numpy_helper.to_array(init)
        if value.dtype == np.float32 and value.size >= 2:
            inits.append((init.name, value))
    owners, ambiguous = {}, set()
    for pname, p in initial.items():
        found = [(iname, False) for iname, v in inits if v.shape == p.shape and np.array_equal(v, p)]
        found += [(iname, True) for iname, v in inits if p.ndim == 2 and v.shape == p.T.shape and np.array_equal(v, p.T)]
        named = [f for f in found if f[0] == pname]
        if len(found) == 1 or named:
            iname, transposed = (named or found)[0]
            owners.setdefault(iname, []).append((pname, transposed))
        else:
            ambiguous.update(iname for iname, _ in found)
    for iname, v in inits:
        # Several owners of a constant value (zero biases) need not share it:
        # the exporter may have folded some of them into other constants.
        constant = np.all(v == v.flat[0])
        if iname in owners and iname not in ambiguous and not (constant and len(owners[iname]) > 1):
            yield iname, owners[iname]


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
