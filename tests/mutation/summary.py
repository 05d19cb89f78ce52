"""Per-file figures of a mutmut 3 run (scripts/mutation.sh runs this in build/mutation with mutmut's venv).

    summary.py EQUIVALENT_LIST SOURCE_PATH...

For each file: mutants in all, killed (a test failed or timed out), survived, and the score
killed / (killed + counted survivors). A survivor is not counted when it
- only changes the text of a message: the mutant differs from the original in string literals only, and
  every changed literal is prose (it holds a space; keys, field names and values such as "labels",
  "NoSchedule" or "%s:%s" hold none, so a mutant of those counts), or
- is listed in EQUIVALENT_LIST (``mutant-name  reason`` per line, # comments): the program behaves the
  same (e.g. ``x or ""`` -> ``x or "XXXX"`` where x is never empty there). A listed mutant that is killed
  is reported, so the list does not outlive the code.
MUTATION_SHOW=1 prints the diff of each counted survivor.
"""
import io
import os
import sys
import tokenize
from collections import Counter

from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code


def changed_lines(diff):
    minus = [line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    plus = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return minus, plus


def tokens(lines):
    """The tokens of changed lines (a line may open a bracket it does not close: the tokens up to there)."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                tokenize.COMMENT, tokenize.ENDMARKER):
                out.append((tok.type, tok.string))
    except tokenize.TokenError:
        pass
    except (IndentationError, SyntaxError):
        return None
    return out


def message_only(diff):
    """Whether the mutant changes prose string literals only."""
    minus, plus = changed_lines(diff)
    if not minus or not plus:
        return False
    before, after = tokens([m.strip() for m in minus]), tokens([p.strip() for p in plus])
    if before is None or after is None or len(before) != len(after):
        return False
    differ = [(b, a) for b, a in zip(before, after) if b != a]
    return bool(differ) and all(b[0] == a[0] == tokenize.STRING and " " in b[1] for b, a in differ)


def main():
    equivalent_file, paths = sys.argv[1], sys.argv[2:]
    equivalent = {}
    if os.path.exists(equivalent_file):
        for line in open(equivalent_file):
            line = line.split("#", 1)[0].strip()
            if line:
                name, _, reason = line.partition(" ")
                equivalent[name] = reason.strip()
    show = os.environ.get("MUTATION_SHOW") == "1"
    total = Counter()
    print("%-18s %7s %7s %9s %8s %10s %7s" % ("file", "mutants", "killed", "survived", "message", "equivalent",
                                             "score"))
    for path in paths:
        data = SourceFileMutationData(path=path)
        data.load()
        count = Counter()
        counted = []
        for name, code in sorted(data.exit_code_by_key.items()):
            status = status_by_exit_code[code]
            count["mutants"] += 1
            if status in ("killed", "timeout", "caught by type check"):
                count["killed"] += 1
                if name in equivalent:
                    print("  listed as equivalent but killed (remove it from %s): %s" % (equivalent_file, name))
                continue
            count["survived"] += 1
            if status != "survived":
                print("  %s: %s" % (name, status))
            diff = get_diff_for_mutant(name, path=path)
            if name in equivalent:
                count["equivalent"] += 1
            elif message_only(diff):
                count["message"] += 1
            else:
                counted.append((name, diff))
        denominator = count["killed"] + len(counted)
        score = 100.0 * count["killed"] / denominator if denominator else 100.0
        short = os.path.basename(path)[:-3]
        print("%-18s %7d %7d %9d %8d %10d %6.1f%%" % (short, count["mutants"], count["killed"], count["survived"],
                                                    count["message"], count["equivalent"], score))
        print("  raw score (every mutant counted): %.1f%%" % (100.0 * count["killed"] / max(count["mutants"], 1)))
        for name, diff in counted:
            print("  survived: %s" % name)
            if show:
                print("    " + "\n    ".join(diff.splitlines()[2:]))
        total.update(count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
