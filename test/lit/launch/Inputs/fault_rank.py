# Runs a training launch, and once rank 0 has printed its first step sends a
# signal (STOP or KILL) to one rank, found by the pid it records in
# --rank-status-dir. Prints the launch's exit code, the seconds from the signal
# to the launch's end, the CPU share of another (waiting) rank while the
# signalled one is stopped, and the launch's stderr. The signalled process is
# continued and killed at the end, whatever happened, so nothing lingers.
#   fault_rank.py --signal STOP --rank 1 --status-dir D [--bound S] -- partita launch ... --rank-status-dir D
import argparse
import os
import signal
import subprocess
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--signal", choices=["STOP", "KILL"], required=True)
ap.add_argument("--rank", type=int, required=True)
ap.add_argument("--status-dir", required=True)
ap.add_argument("--bound", type=float, default=30, help="seconds from the signal within which the launch must end")
ap.add_argument("cmd", nargs=argparse.REMAINDER)
a = ap.parse_args()
cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd


def pid_of(rank):
    path = os.path.join(a.status_dir, "rank%d" % rank)
    for line in open(path):
        if line.startswith("pid "):
            return int(line.split()[1])
    raise RuntimeError("no pid in " + path)


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
err_lines = []
reader = threading.Thread(target=lambda: err_lines.extend(proc.stderr), daemon=True)
reader.start()
victim = None
signalled_at = None
cpu_share = None
try:
    for line in proc.stdout:
        if line.startswith("step ") and victim is None:
            victim = pid_of(a.rank)
            other = pid_of(1 - a.rank if a.rank < 2 else 0)
            os.kill(victim, getattr(signal, "SIG" + a.signal))
            signalled_at = time.monotonic()
            if a.signal == "STOP":  # the other rank waits: how much CPU does it take?
                try:
                    time.sleep(0.5)
                    c0, t0 = cpu_seconds(other), time.monotonic()
                    time.sleep(1.5)
                    cpu_share = (cpu_seconds(other) - c0) / (time.monotonic() - t0)
                except (OSError, IndexError):
                    pass
    rc = proc.wait()
    ended_at = time.monotonic()
    reader.join(5)
finally:
    if victim is not None:
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(victim, sig)
            except ProcessLookupError:
                pass
    if proc.poll() is None:
        proc.kill()

if signalled_at is None:
    print("no step line: the signal was never sent")
    sys.stdout.write("".join(err_lines))
    sys.exit(1)
took = ended_at - signalled_at
print("launch exit code: %d" % rc)
print("seconds from SIG%s to exit: %.2f" % (a.signal, took))
print("ended within %g s: %s" % (a.bound, "yes" if took <= a.bound else "no"))
if cpu_share is not None:
    print("waiting rank's CPU while the other is stopped: %.0f%% of a core" % (100 * cpu_share))
    print("waiting rank burns a core: %s" % ("yes" if cpu_share > 0.5 else "no"))
print("stderr:")
sys.stdout.write("".join(err_lines))
