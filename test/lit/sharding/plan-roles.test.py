"""plan-roles.test's checks: per compiled folder, the ranks, roles, distinct
program files and the keys of a rank entry, then the plan's growth per rank
from the first folder to the last; or, with --to-plan-2 PLAN, rewrites PLAN
with each rank's programs and hashes in its own entry (format partita-plan-2)."""
import json
import os
import sys

if sys.argv[1] == "--to-plan-2":
    plan = json.load(open(sys.argv[2]))
    for r in plan["ranks"]:
        role = plan["roles"][r.pop("role")]
        r["programs"], r["sha256"] = role["programs"], role["sha256"]
    del plan["roles"]
    plan["format"] = "partita-plan-2"
    json.dump(plan, open(sys.argv[2], "w"), indent=2)
    sys.exit(0)
sizes = []
for d in sys.argv[1:]:
    plan = json.load(open(os.path.join(d, "plan.json")))
    files = {f for role in plan["roles"] for f in role["programs"].values()}
    keys = sorted({k for r in plan["ranks"] for k in r})
    n = len(plan["ranks"])
    print(f"{os.path.basename(d)}: {n} ranks, {len(plan['roles'])} role{'s' * (len(plan['roles']) != 1)}, "
          f"{len(files)} program files, rank entries: {', '.join(keys)}")
    sizes.append((n, os.path.getsize(os.path.join(d, "plan.json"))))
(n0, s0), (n1, s1) = sizes[0], sizes[-1]
per = (s1 - s0) / (n1 - n0)
print(f"growth per rank beyond {os.path.basename(sys.argv[1])}: {'below 200 bytes' if per < 200 else f'{per:.0f} bytes'}")
