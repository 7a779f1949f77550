"""Compares the ops (by count, Constants aside: localize adds shape constants)
of each part partita-opt's split passes printed with the program compile
wrote for that stage's first rank. Usage: same_ops.py SPLIT.pir COMPILE_DIR"""
import collections, json, re, sys

split, out = sys.argv[1], sys.argv[2]
plan = json.load(open(out + "/plan.json"))

def ops(text):
    c = collections.Counter(re.findall(r"= ([\w.]+)\(", text))
    c.pop("Constant", None)
    return c

for part in open(split).read().split("// -----\n"):
    name = re.match(r"graph @[\w.]*?\.(stage(\d+)\.(\w+))\(", part)
    stage, program = int(name.group(2)), name.group(3)
    rank = next(r for r in plan["ranks"] if r["coords"]["pp"] == stage)
    rel = "rank%d/%s.pir" % (rank["rank"], program)
    same = ops(part) == ops(open(out + "/" + rel).read())
    print(name.group(1), rel, "same ops" if same else "differ: %s" % (ops(part) - ops(open(out + "/" + rel).read())))
