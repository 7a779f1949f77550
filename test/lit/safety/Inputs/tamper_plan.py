# Copies a compiled folder and tampers with its plan.json's ranks or groups:
#   tamper_plan.py SRC DST dup0|swap-coords|swap-entries|rank-5|merge-groups
import json
import shutil
import sys

src, dst, how = sys.argv[1:4]
shutil.copytree(src, dst)
path = dst + "/plan.json"
plan = json.load(open(path))
ranks = plan["ranks"]
if how == "dup0":  # rank 0 twice, rank 1 gone
    ranks[1] = json.loads(json.dumps(ranks[0]))
elif how == "swap-coords":
    ranks[0]["coords"], ranks[1]["coords"] = ranks[1]["coords"], ranks[0]["coords"]
elif how == "swap-entries":
    ranks[0], ranks[1] = ranks[1], ranks[0]
elif how == "rank-5":
    ranks[1]["rank"] = 5
elif how == "merge-groups":  # one tp group holding rank 0 twice
    plan["groups"]["tp"] = [[0, 0]]
else:
    sys.exit("unknown tampering " + how)
json.dump(plan, open(path, "w"), indent=2)
