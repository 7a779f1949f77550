"""Checkpoints: resume bit for bit, resume under another layout, nothing lost.

usage: check_checkpoint.py PARTITA FIXTURE WORK MODE [ARGS...]

FIXTURE: a models/fixtures name, or a path to a .onnx.

MODE resume SAVE_FLAGS RESUME_FLAGS TOL
    SAVE_FLAGS and RESUME_FLAGS are each one argument: compile flags, "|",
    launch flags (e.g. "--tp 2 --dp 2 --zero 1|--micro-batches 2"). Run A
    trains 20 steps under SAVE_FLAGS saving every 10; run B resumes A's
    step-10 under RESUME_FLAGS for steps 11-20. Losses 11-20 and the merged
    parameters must equal A's: bit for bit when TOL is 0, else within TOL
    (relative; the parameters relative to the tensor's largest magnitude,
    except those whose gradient is zero in exact arithmetic, see
    check_zero.py). Every step of the sampler is the one run A drew, or the
    losses would differ.
MODE convert SAVE_FLAGS RESUME_FLAGS
    A saves at step 10; B resumes it for one step at lr 0 (AdamW then
    leaves every weight as it was), merged: its parameters must equal the
    checkpoint's float32 weights, read from the index and the shard files
    by this script (an independent reader of the format), under any layout
    and precision (a bf16 checkpoint into fp32 training and back).
MODE crash FLAGS
    A saves every 5 steps and is killed (SIGKILL, rank 0) in the middle of
    its step-15 save, after the pieces and before the index: the launch
    fails, `latest` still names step-10 and step 15 stays unfinished. A
    resume into the same folder saves step 15 over the unfinished one and is
    killed after its rename, before `latest` moves; a resume from the folder
    then goes on from step 15 (the newest complete checkpoint) and gives the
    losses of an uninterrupted run.
MODE keep FLAGS
    --keep 2 leaves the newest two of the run's checkpoints (an earlier
    run's stay); a folder another run holds the lock of, or with a file no
    checkpoint has, is refused before any rank starts; a checkpoint whose
    shard file is corrupted, one of another model, or a folder that is no
    checkpoint is refused, naming it.
"""
import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from trained_run import Checks, token_file

partita, name, work, mode = sys.argv[1:5]
args = sys.argv[5:]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
fixture = name if name.endswith(".onnx") else os.path.join(root, "models", "fixtures", name + ".onnx")
for entry in os.listdir(work) if os.path.isdir(work) else []:  # an earlier run's; the model may live here
    if not entry.endswith(".onnx"):
        shutil.rmtree(os.path.join(work, entry), ignore_errors=True) if os.path.isdir(os.path.join(work, entry)) \
            else os.remove(os.path.join(work, entry))
tokens = token_file(work, 7)
check = Checks()
COMMON = ["--data", tokens, "--batch", "2", "--seq", "16", "--lr", "0.003", "--seed", "1", "--threads", "1",
          "--lr-schedule", "cosine", "--warmup-steps", "3", "--clip-grad-norm", "0.5"]
# Key biases (separate, or inside a fused q/k/v bias): their gradient is zero
# in exact arithmetic, so rounding noise grows to full AdamW steps.
NOISE = ("k.bias", "c_attn.bias")


def layout(spec):
    compile_flags, _, launch_flags = spec.partition("|")
    c, l = compile_flags.split(), launch_flags.split()
    ranks = 1
    for axis in ("--tp", "--pp", "--dp"):
        if axis in c:
            ranks *= int(c[c.index(axis) + 1])
    return c, l, ranks


def compile_plan(tag, flags):
    out = os.path.join(work, "plan-" + tag)
    if not os.path.exists(out):
        subprocess.run([partita, "compile", fixture, "--train", "-o", out] + flags, check=True, stdout=subprocess.DEVNULL)
    return out


def launch(tag, spec, steps, extra, ok=True):
    c, l, ranks = layout(spec)
    plan = compile_plan("_".join(c).replace("-", "") or "single", c)
    res = os.path.join(work, "res-" + tag)
    common = list(COMMON)
    for i in range(0, len(common), 2):  # a flag in `extra` overrides the common one
        if common[i] in extra:
            common[i:i + 2] = [None, None]
    common = [a for a in common if a is not None]
    device = ["--device", os.environ.get("PARTITA_TEST_DEVICE", "cpu")]  # set per test by test/CMakeLists.txt
    p = subprocess.run([partita, "launch", "-n", str(ranks), plan, "--steps", str(steps), "--output-dir", res]
                       + common + l + extra + device, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if ok and p.returncode != 0:
        print(p.stdout)
        raise SystemExit(f"launch {tag} failed")
    return p, res, plan


def losses(res):
    with open(os.path.join(res, "loss.csv")) as f:
        return {int(r["step"]): float(r["loss"]) for r in csv.DictReader(f)}


def merged(res, plan, tag):
    out = os.path.join(work, f"merged-{tag}.onnx")
    subprocess.run([partita, "merge", fixture, plan, res, "-o", out], check=True, stdout=subprocess.DEVNULL)
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(out).graph.initializer}


def saved_weights(folder):
    """The whole float32 weights of a checkpoint, assembled from its pieces:
    each piece's box in the view (dims with an outer factor as [outer, n/outer]),
    its flat range of that box, placed by numpy indexing."""
    with open(os.path.join(folder, "checkpoint.json")) as f:
        index = json.load(f)
    out = {}
    for t in index["tensors"]:
        if t["kind"] != "weight":
            continue
        shape = t["shape"]
        whole = np.full(int(np.prod(shape)), np.nan, np.float32)
        gidx = np.arange(whole.size).reshape(shape)
        for p in t["pieces"]:
            outer = p["outer"] or [1] * len(shape)
            view_shape = []
            for n, o in zip(shape, outer):
                view_shape += [o, n // o] if o > 1 else [n]
            view = gidx.reshape(view_shape)
            box = view[tuple(slice(s, s + e) for s, e in zip(p["start"], p["extent"]))].reshape(-1)
            lo, hi = p["flat"]
            with open(os.path.join(folder, p["file"]), "rb") as f:
                f.seek(p["offset"])
                data = np.frombuffer(f.read(4 * (hi - lo)), np.float32)
            whole[box[lo:hi]] = data
        name, whole = t["name"], whole.reshape(shape)
        if name.endswith(")") and " transposed(" in name:  # the initializer seen as transpose(stored, perm)
            name, perm = name[:-1].split(" transposed(")
            whole = whole.transpose(np.argsort([int(d) for d in perm.split(",")]))
        out[name] = whole
    return out


def refused_before_start(p, *words):
    """The launcher refused it (no rank's error), naming each of `words`."""
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    return p.returncode != 0 and last.startswith("partita launch: error:") and "rank " not in last.split(":")[1] \
        and all(w in last for w in words), last


def compare_params(a, b, tol, what):
    keys = [k for k in a if tol == 0 or not k.endswith(NOISE)]
    worst = max(float(np.abs(a[k] - b[k]).max() / max(np.abs(b[k]).max(), 1e-12)) for k in keys)
    same = all(np.array_equal(a[k], b[k]) for k in keys)
    check(set(a) == set(b) and (same if tol == 0 else worst <= tol),
          f"{what}: {len(keys)} parameters " + ("equal to the bit" if same else f"within {worst:.1e}")
          + (" (bound: bit for bit)" if tol == 0 else f" (bound {tol:.0e})"))


def compare_losses(a, b, steps, tol, what):
    for s in steps:
        err = abs(a[s] - b[s]) / abs(b[s])
        check(err <= tol if tol else a[s] == b[s], f"{what} step {s}: {a[s]:.8f} vs {b[s]:.8f} (relative {err:.1e})")


if mode == "resume":
    save_spec, resume_spec, tol = args[0], args[1], float(args[2])
    ckpt = os.path.join(work, "ckpt")
    _, res_a, plan_a = launch("A", save_spec, 20, ["--save", ckpt, "--save-interval", "10"])
    check(sorted(os.listdir(ckpt)) == ["latest", "lock", "step-00000010", "step-00000020"],
          f"--save wrote {sorted(os.listdir(ckpt))}")
    ckpt_b = os.path.join(work, "ckpt-b")
    _, res_b, plan_b = launch("B", resume_spec, 20, ["--resume", os.path.join(ckpt, "step-00000010"),
                                                    "--save", ckpt_b])
    la, lb = losses(res_a), losses(res_b)
    after = [s for s in sorted(la) if s > 10]  # a step that skipped its update (fp16 overflow) logs no loss
    check(sorted(lb) == after and len(after) >= 5, f"the resumed run logged steps {sorted(lb)}, the straight one {after}")
    compare_losses(lb, la, after, tol, "resumed")
    params_a = merged(res_a, plan_a, "A")
    compare_params(merged(res_b, plan_b, "B"), params_a, tol, "after step 20")
    # Both runs' step-20 checkpoints count the same progress.
    index_a, index_b = (json.load(open(os.path.join(c, "step-00000020", "checkpoint.json"))) for c in (ckpt, ckpt_b))
    for key in ("step", "updates", "skipped", "samples", "seed", "loss_scaler"):
        check(index_a.get(key) == index_b.get(key), f"step 20's {key}: straight {index_a.get(key)}, resumed {index_b.get(key)}")
    # merge reads a checkpoint under another plan of the model: A's last one is A's result.
    out = os.path.join(work, "merged-ckpt.onnx")
    subprocess.run([partita, "merge", fixture, plan_b, os.path.join(ckpt, "step-00000020"), "-o", out], check=True,
                   stdout=subprocess.DEVNULL)
    compare_params({t.name: numpy_helper.to_array(t) for t in onnx.load(out).graph.initializer}, params_a, 0,
                   "A's step-20 checkpoint merged under B's plan, against A's merged output")
elif mode == "convert":
    save_spec, resume_spec = args
    ckpt = os.path.join(work, "ckpt")
    launch("A", save_spec, 10, ["--save", ckpt])
    _, res_b, plan_b = launch("B", resume_spec, 11, ["--resume", ckpt, "--lr", "0"])
    compare_params(merged(res_b, plan_b, "B"), saved_weights(os.path.join(ckpt, "step-00000010")), 0,
                   "resumed at lr 0, against the checkpoint's weights")
elif mode == "crash":
    spec = args[0]
    ckpt = os.path.join(work, "ckpt")
    _, res_full, _ = launch("full", spec, 20, [])
    os.environ["PARTITA_TEST_KILL_SAVE"] = "15"
    p, _, _ = launch("killed", spec, 20, ["--save", ckpt, "--save-interval", "5"], ok=False)
    del os.environ["PARTITA_TEST_KILL_SAVE"]
    check(p.returncode != 0, f"the killed launch exits {p.returncode}")
    with open(os.path.join(ckpt, "latest")) as f:
        latest = f.read().strip()
    check(latest == "step-00000010", f"latest names {latest} after the save of step 15 was killed")
    check(os.path.isdir(os.path.join(ckpt, "step-00000015.partial")) and not os.path.exists(
        os.path.join(ckpt, "step-00000015")), f"the unfinished save stays unfinished: {sorted(os.listdir(ckpt))}")
    # The save of step 15 again, killed after its folder is in place and before `latest` moved.
    os.environ["PARTITA_TEST_KILL_SAVE"] = "15:renamed"
    p, _, _ = launch("killed-renamed", spec, 20, ["--resume", ckpt, "--save", ckpt, "--save-interval", "5"], ok=False)
    del os.environ["PARTITA_TEST_KILL_SAVE"]
    with open(os.path.join(ckpt, "latest")) as f:
        latest = f.read().strip()
    check(p.returncode != 0 and latest == "step-00000010" and os.path.isdir(os.path.join(ckpt, "step-00000015")),
          f"killed after the rename: exit {p.returncode}, latest {latest}, {sorted(os.listdir(ckpt))}")
    # A resume from the folder goes on from the newest complete checkpoint: step 15.
    _, res_b, _ = launch("resumed", spec, 20, ["--resume", ckpt, "--save", ckpt, "--save-interval", "5"])
    full = losses(res_full)
    check(sorted(losses(res_b)) == [s for s in sorted(full) if s > 15], f"resumed at step 15: {sorted(losses(res_b))}")
    compare_losses(losses(res_b), full, [s for s in sorted(full) if s > 15], 0, "resumed after the kills")
    check(sorted(os.listdir(ckpt)) == ["latest", "lock", "step-00000005", "step-00000010", "step-00000015",
                                       "step-00000020"], f"every step's checkpoint is whole: {sorted(os.listdir(ckpt))}")
elif mode == "keep":
    spec = args[0]
    ckpt = os.path.join(work, "ckpt")
    launch("A", spec, 10, ["--save", ckpt, "--save-interval", "2"])
    launch("B", spec, 20, ["--resume", ckpt, "--save", ckpt, "--save-interval", "2", "--keep", "2"])
    check(sorted(os.listdir(ckpt)) == ["latest", "lock", "step-00000002", "step-00000004", "step-00000006",
                                       "step-00000008", "step-00000010", "step-00000018", "step-00000020"],
          f"--keep 2 removed only this run's older checkpoints: {sorted(os.listdir(ckpt))}")
    # Two runs never save into one folder: the first holds its lock.
    import fcntl
    with open(os.path.join(ckpt, "lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        p, _, _ = launch("locked", spec, 24, ["--resume", ckpt, "--save", ckpt], ok=False)
    ok, said = refused_before_start(p, "another run is saving")
    check(ok, "a folder another run saves into is refused before any rank starts: " + said)
    c = os.path.join(work, "foreign")
    os.makedirs(c)
    with open(os.path.join(c, "data.txt"), "w") as f:
        f.write("x")
    p, _, _ = launch("foreign", spec, 4, ["--save", c], ok=False)
    check(p.returncode != 0 and "data.txt" in p.stdout and os.listdir(c) == ["data.txt"],
          "a folder with a file no checkpoint has is refused: " + p.stdout.strip().splitlines()[-1])
    p, _, _ = launch("nockpt", spec, 20, ["--resume", c], ok=False)
    check(p.returncode != 0 and "no checkpoint.json" in p.stdout,
          "a folder that is no checkpoint: " + p.stdout.strip().splitlines()[-1])
    step20 = os.path.join(ckpt, "step-00000020")
    p, _, _ = launch("done", spec, 20, ["--resume", step20], ok=False)
    check(p.returncode != 0 and "leaves nothing to train" in p.stdout, p.stdout.strip().splitlines()[-1])
    bad = os.path.join(ckpt, "step-00000018", "rank00000.bin")
    with open(bad, "r+b") as f:
        f.seek(8)
        byte = f.read(1)
        f.seek(8)
        f.write(bytes([byte[0] ^ 1]))
    ok, said = refused_before_start(
        launch("corrupt", spec, 20, ["--resume", os.path.join(ckpt, "step-00000018")], ok=False)[0], "rank00000.bin", "hash")
    check(ok, "a bit-flipped shard is refused before any rank starts: " + said)
    step10 = os.path.join(ckpt, "step-00000010")
    with open(os.path.join(step10, "rank00001.bin"), "r+b") as f:
        f.truncate(os.path.getsize(os.path.join(step10, "rank00001.bin")) - 4)
    ok, said = refused_before_start(launch("truncated", spec, 20, ["--resume", step10], ok=False)[0],
                                    "rank00001.bin", "truncated")
    check(ok, "a truncated shard is refused before any rank starts: " + said)
    step8 = os.path.join(ckpt, "step-00000008")
    os.remove(os.path.join(step8, "rank00001.bin"))
    ok, said = refused_before_start(launch("missing", spec, 20, ["--resume", step8], ok=False)[0], "rank00001.bin")
    check(ok, "a missing rank's shard is refused before any rank starts: " + said)
    other = os.path.join(work, "other.json")
    with open(os.path.join(step20, "checkpoint.json")) as f:
        index = json.load(f)
    index["tensors"][0]["shape"] = [s + 1 for s in index["tensors"][0]["shape"]]
    with open(os.path.join(step20, "checkpoint.json"), "w") as f:
        json.dump(index, f)
    ok, said = refused_before_start(launch("other", spec, 30, ["--resume", step20], ok=False)[0],
                                    index["tensors"][0]["name"], "another model")
    check(ok, "a checkpoint of another shape is refused before any rank starts: " + said)
    # Another layout whose shapes do not fit: the fixture at tp 2 against a model of other shapes.
    other_model = os.path.join(work, "other.onnx")
    subprocess.run(["/usr/bin/python3", os.path.join(root, "models", "export_gpt.py"), "--d", "48", "--heads", "4",
                    "--layers", "2", "--vocab", "64", "--seq", "16", "--batch", "2", "-o", other_model],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    other_plan = os.path.join(work, "plan-other")
    subprocess.run([partita, "compile", other_model, "--train", "--tp", "2", "-o", other_plan], check=True,
                   stdout=subprocess.DEVNULL)
    p = subprocess.run([partita, "launch", "-n", "2", other_plan, "--steps", "30", "--output-dir",
                        os.path.join(work, "res-other-model"), "--resume", os.path.join(ckpt, "step-00000018")] + COMMON,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ok, said = refused_before_start(p, "this plan's is")
    check(ok, "another model's checkpoint is refused before any rank starts: " + said)
else:
    raise SystemExit("unknown mode " + mode)
sys.exit(check.exit_code("check_checkpoint " + mode))
