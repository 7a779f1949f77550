"""What check_zero.py and check_pipeline.py share: a PASS/FAIL tally, a token
file, and one compiled, trained and merged run (its losses, its merged
parameters, its plan)."""
import csv
import json
import os
import subprocess

import numpy as np
import onnx
from onnx import numpy_helper


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, ok, msg, quiet=False):
        """Tallies `ok`; prints `msg` (quiet: only a failure)."""
        self.passed, self.failed = self.passed + bool(ok), self.failed + (not ok)
        if not ok or not quiet:
            print(("PASS " if ok else "FAIL ") + msg)

    def exit_code(self, name):
        print(f"{name}: {self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def token_file(work, seed):
    """4096 token ids below 64, drawn from `seed`, saved in WORK/tokens.npy."""
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "tokens.npy")
    np.save(path, np.random.default_rng(seed).integers(0, 64, size=4096).astype(np.uint16))
    return path


def train_and_merge(partita, fixture, work, tag, ranks, tokens, compile_flags, launch_flags):
    """Compiles FIXTURE --train with COMPILE_FLAGS into WORK/TAG, trains 10 steps
    on RANKS ranks (batch 2, seq 16, lr 0.003, seed 1, one thread each, plus
    LAUNCH_FLAGS), merges; returns (losses, parameters by name, plan, plan folder)."""
    out, res = os.path.join(work, tag), os.path.join(work, "res-" + tag)
    subprocess.run([partita, "compile", fixture, "--train", "-o", out] + compile_flags, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([partita, "launch", "-n", str(ranks), out, "--steps", "10", "--data", tokens, "--batch", "2",
                    "--seq", "16", "--lr", "0.003", "--seed", "1", "--threads", "1", "--output-dir", res,
                    "--device", os.environ.get("PARTITA_TEST_DEVICE", "cpu")]  # set per test by test/CMakeLists.txt
                   + launch_flags, check=True, stdout=subprocess.DEVNULL)
    merged = os.path.join(work, f"merged-{tag}.onnx")
    subprocess.run([partita, "merge", fixture, out, res, "-o", merged], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(res, "loss.csv")) as f:
        losses = [float(r["loss"]) for r in csv.DictReader(f)]
    params = {t.name: numpy_helper.to_array(t) for t in onnx.load(merged).graph.initializer}
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    return losses, params, plan, out
