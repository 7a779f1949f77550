"""`partita inspect` prints a rank that runs another's programs once, after
it: "the same for ranks 8, 16, ..., 56 (rank 0's programs)". expand() gives
each such rank the line of the rank it follows."""
import re

SAME = re.compile(r"^\s+the same for ranks? ([0-9., ]+) \(rank (\d+)'s programs\)", re.M)


def ranks(listed):
    out, items = [], [x.strip() for x in listed.split(",")]
    for k, x in enumerate(items):
        if x == "...":
            step = out[-1] - out[-2]
            out += range(out[-1] + step, int(items[k + 1]), step)
        else:
            out.append(int(x))
    return out


def expand(text, per_rank):
    """per_rank: rank -> parsed line; adds the ranks printed as the same."""
    for m in SAME.finditer(text):
        for r in ranks(m.group(1)):
            per_rank.setdefault(r, per_rank[int(m.group(2))])
    return per_rank
