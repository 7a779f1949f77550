# Every Partita command that writes, run against a full disk: a small tmpfs
# mounted in a private mount namespace (run this under `unshare -m`; the mount
# goes with the namespace). For each command prints one line:
#   <case>: exit <code>; enospc <yes|no>; names <file>; llvm-error <yes|no>; leftovers <list|none>; earlier <intact|changed|->
# exit: the command's exit code (a crash is 128 + signal or negative);
# enospc: its stderr gives the system's reason; names: the path under the
# disk its error names ("?" if none); leftovers: staging or partial entries
# left on the disk; earlier: whether an earlier output survived unchanged.
#   full_disk.py --model M.onnx --ids IDS.npy --work DIR
import argparse
import hashlib
import os
import re
import shutil
import subprocess

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--ids", required=True)
ap.add_argument("--work", required=True)
a = ap.parse_args()

work = os.path.abspath(a.work)
disk = os.path.join(work, "disk")
os.makedirs(disk, exist_ok=True)
subprocess.check_call(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", disk])


def tree(path):
    """Every file below `path` with its SHA-256."""
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, path)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def fill():
    """Fills the disk to the last byte."""
    try:
        with open(os.path.join(disk, "filler"), "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass
    try:  # the last partial block
        with open(os.path.join(disk, "filler2"), "wb") as f:
            while True:
                f.write(b"\0")
                f.flush()
    except OSError:
        pass


def unfill():
    for f in ("filler", "filler2"):
        if os.path.exists(os.path.join(disk, f)):
            os.remove(os.path.join(disk, f))


def leftovers(expected):
    return sorted(e for e in os.listdir(disk) if e not in expected and not e.startswith("filler"))


def report(case, cmd, expected, earlier=None, earlier_path=None):
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    err = p.stdout + p.stderr
    named = re.search(re.escape(disk) + r"/[^\s:'\"]*", err)
    line = "%s: exit %d; enospc %s; names %s; llvm-error %s; leftovers %s; earlier %s" % (
        case, p.returncode, "yes" if "No space left on device" in err else "no",
        os.path.relpath(named.group(0), disk) if named else "?",
        "yes" if "LLVM ERROR" in err else "no", ",".join(leftovers(expected)) or "none",
        "-" if earlier is None else ("intact" if tree(earlier_path) == earlier else "changed"))
    print(line, flush=True)
    if p.returncode != 1:
        print(err)


# Inputs off the small disk.
subprocess.check_call(["partita", "compile", a.model, "--train", "-o", "train"], cwd=work, stdout=subprocess.DEVNULL)
subprocess.check_call(["partita", "compile", a.model, "-o", "infer"], cwd=work, stdout=subprocess.DEVNULL)
subprocess.check_call(["/usr/bin/python3", "-c", "import numpy as np; np.save('tokens.npy', np.arange(300) % 64)"],
                      cwd=work)
train = ["partita", "launch", "-n", "1", "train", "--steps", "2", "--data", "tokens.npy", "--batch", "2", "--seq", "16"]
subprocess.check_call(train + ["--output-dir", "trained"], cwd=work, stdout=subprocess.DEVNULL)

# compile over an earlier output of its own.
c = os.path.join(disk, "c")
subprocess.check_call(["partita", "compile", a.model, "-o", c], cwd=work, stdout=subprocess.DEVNULL)
before = tree(c)
fill()
report("compile", ["partita", "compile", a.model, "--tp", "2", "-o", c], {"c"}, before, c)
unfill()

# run, launch (inference outputs; training's loss.csv and parameters), --trace, merge.
fill()
report("run", ["partita", "run", a.model, "--input", "ids=" + a.ids, "--output-dir", os.path.join(disk, "r")], {"c"})
report("launch-infer", ["partita", "launch", "-n", "1", "infer", "--input", "ids=" + a.ids, "--output-dir",
                        os.path.join(disk, "li")], {"c"})
report("launch-train", train + ["--output-dir", os.path.join(disk, "lt")], {"c"})
report("trace", train + ["--output-dir", "traced", "--trace", os.path.join(disk, "t.json")], {"c"})
report("merge", ["partita", "merge", a.model, "train", "trained", "-o", os.path.join(disk, "m.onnx")], {"c"})
unfill()
print("trace output folder kept: %s" % ("no" if not os.path.exists(os.path.join(work, "traced")) else "yes"))
subprocess.call(["umount", disk])
