# Prints each initializer of a rank program with where its bytes are: the
# external data file (relative to MODEL_DIR when under it), offset, length and
# Partita's slice and flat-part keys. Usage: show_weight_refs.py PROGRAM.onnx MODEL_DIR
import os
import sys
import onnx

model_dir = os.path.realpath(sys.argv[2])
m = onnx.load(sys.argv[1], load_external_data=False)
for t in m.graph.initializer:
    d = {e.key: e.value for e in t.external_data}
    loc = d.get("location", "<inline>")
    if os.path.isabs(loc) and os.path.realpath(loc).startswith(model_dir + os.sep):
        loc = "MODEL_DIR/" + os.path.relpath(os.path.realpath(loc), model_dir)
    keys = " ".join(f"{k}={d[k]}" for k in ("partita_stored_shape", "partita_view_start", "partita_perm", "partita_flat",
                                                 "partita_flat_block") if k in d)
    print(f"{t.name} {list(t.dims)} {loc} offset={d.get('offset')} length={d.get('length')} {keys}".rstrip())
