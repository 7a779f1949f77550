#!/usr/bin/python3
"""Runs the examples of the documentation, so that no documented command rots.

An example is a fenced block whose info string is `sh example`:

    ```sh example
    partita compile models/fixtures/gpt_fused_tied_op17_static.onnx --tp 2 -o out
    ```

The examples of one Markdown file run in order, in one fresh folder (a later
block sees what an earlier one wrote), with bash -euo pipefail, the built
tools first on PATH, `models` a link to the repository's models/, and
/usr/bin/python3 as `python3`. Other blocks (```sh, ```console, ...) are shown,
not run: commands for a cluster, or ones that take minutes.

  doc_examples.py BUILD_DIR [FILE.md...]  README.md and docs/**/*.md by
                                          default; prints one line per file
                                          with examples, exits 1 when one fails
                                          (printing it and its output)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```sh example\s*$")


def examples(path):
    """The example blocks of `path`: (line number, text)."""
    found, block, start = [], None, 0
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if block is None and FENCE.match(line):
            block, start = [], n
        elif block is not None and line.startswith("```"):
            found.append((start, "".join(block)))
            block = None
        elif block is not None:
            block.append(line)
    if block is not None:
        sys.exit(f"{path}:{start}: an example block is not closed")
    return found


def main():
    build, files = os.path.abspath(sys.argv[1]), sys.argv[2:]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not files:
        files = [os.path.join(repo, "README.md")]
        for root, _, names in sorted(os.walk(os.path.join(repo, "docs"))):
            files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".md")]
    env = dict(os.environ)
    bindir = tempfile.mkdtemp(prefix="partita-doc-bin-")
    os.symlink("/usr/bin/python3", os.path.join(bindir, "python3"))
    env["PATH"] = os.pathsep.join([os.path.join(build, "tools"), bindir, env["PATH"]])
    failed = 0
    total = 0
    for f in files:
        blocks = examples(f)
        if not blocks:
            continue
        total += len(blocks)
        work = tempfile.mkdtemp(prefix="partita-doc-")
        os.symlink(os.path.join(repo, "models"), os.path.join(work, "models"))
        ok = 0
        for start, text in blocks:
            try:  # an example is seconds; a hung one must not hang the suite
                r = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=work, env=env, timeout=300,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                code, output = r.returncode, r.stdout
            except subprocess.TimeoutExpired as e:
                code, output = "timeout after 300 s", (e.stdout or b"").decode(errors="replace")
            if code != 0:
                failed += 1
                print(f"{os.path.relpath(f, repo)}:{start}: example failed (exit {code}) in {work}:\n{text}"
                      f"--- output (last 40 lines) ---\n" + "\n".join(output.splitlines()[-40:]))
                break  # the file's later examples build on this one
            ok += 1
        else:
            shutil.rmtree(work)
        print(f"{os.path.relpath(f, repo)}: {ok} of {len(blocks)} examples ran")
    shutil.rmtree(bindir)
    print(f"doc examples: {total} in {len(files)} files, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
