import os
import lit.formats

config.name = "partita"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".pir", ".onnxtxt", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.partita_obj_root, "test", "lit-out")
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
config.environment["PATH"] = os.pathsep.join(
    [config.partita_tools_dir, "/usr/lib/llvm-14/bin", config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%models", os.path.join(config.partita_src_root, "models")))
config.substitutions.append(("%python", "/usr/bin/python3"))

# Tests that mount a small tmpfs (a full disk) in a private mount namespace:
# root with unshare(1), as CI is.
import subprocess
if subprocess.call(["unshare", "-m", "sh", "-c", "mkdir -p /tmp/.partita-lit-probe && "
                    "mount -t tmpfs -o size=64k tmpfs /tmp/.partita-lit-probe"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("tmpfs")

# Tests across two hosts made as network namespaces (launch --hostfile): root
# with the rights to make them (CI has them), probed as tmpfs is above.
probe = "partita-lit-probe-%d" % os.getpid()
if subprocess.call(["sh", "-c", "ip netns add %s && ip netns del %s && unshare --uts true" % (probe, probe)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("netns")

# A build with the CUDA device (cuda-build), and whether this machine has a
# GPU it can run on (gpu): tests of the device's errors on a machine without
# one say REQUIRES: cuda-build, UNSUPPORTED: gpu.
if getattr(config, "partita_have_cuda", False):
    config.available_features.add("cuda-build")
    if subprocess.call(["sh", "-c", "nvidia-smi -L"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
        config.available_features.add("gpu")

# oneDNN's ISA cap (ONEDNN_MAX_CPU_ISA=AVX2 runs the suite as an AVX2-only
# machine would: CI's CPU changes between machines) reaches the tests.
for name in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
