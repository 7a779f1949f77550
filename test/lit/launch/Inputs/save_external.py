# Saves an ONNX model with every initializer as external data in one file
# beside it (LOCATION, relative), as onnx.save_model does for large models.
# Usage: save_external.py IN.onnx OUT.onnx LOCATION
import sys
import onnx

m = onnx.load(sys.argv[1])
onnx.save_model(m, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True,
                location=sys.argv[3], size_threshold=0)
