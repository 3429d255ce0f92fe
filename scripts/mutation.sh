#!/usr/bin/env bash
# Mutation testing of the decision core with mutmut (not part of CI: hours for the whole core on 2 cores).
#
#   scripts/mutation.sh [MODULE...]     e.g. scripts/mutation.sh pdb victims tree plugins/node_ports
#
# MODULE is a file of src/gangsched/scheduler without .py, `plugins/NAME` one plugin file, `plugins` the whole
# plugins/ package (about 1,800 mutants: an hour or more on a loaded 2-core machine); default: the whole
# decision core. Runs in a fresh copy of the tree (.mutation/, kept afterwards so that
# `cd .mutation && ../.venv/bin/mutmut show NAME` shows a survivor), one test process at a time under nice -n 19,
# the tests being those of [tool.mutmut] in pyproject.toml. Prints each module's score: mutants killed (a
# timeout counts as killed) over mutants judged; a mutant no test reaches counts as a survivor.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
.venv/bin/python -m pip install -q -e '.[test,mutation]'

modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=(cycle queue snapshot topology tree preemption victims pdb evaluator plugins)
work=.mutation
mkdir -p "$work"
# a fresh copy: mutmut's record of which tests reach which function is only valid for the files it mutated
rm -rf "$work/src" "$work/tests" "$work/examples" "$work/mutants"
cp -r src tests examples "$work/"
find "$work" -name '*.egg-info' -prune -exec rm -rf {} +
# the same configuration, with the chosen files as mutmut's only_mutate
python3 - "$work/pyproject.toml" "${modules[@]}" <<'PY'
import sys
path, modules = sys.argv[1], sys.argv[2:]
files = [
    "src/gangsched/scheduler/plugins/*.py" if m == "plugins" else f"src/gangsched/scheduler/{m}.py"
    for m in modules
]
lines = open("pyproject.toml").read().splitlines()
lines.insert(lines.index("[tool.mutmut]") + 1, f"only_mutate = {files!r}".replace("'", '"'))
open(path, "w").write("\n".join(lines) + "\n")
PY

cd "$work"
export HYPOTHESIS_PROFILE=broken
nice -n 19 ../.venv/bin/mutmut run --max-children 1 >mutmut.log 2>&1 || true
if grep -q "failed to collect stats\|Traceback" mutmut.log; then tr '\r' '\n' <mutmut.log | tail -30; exit 1; fi
nice -n 19 ../.venv/bin/mutmut results --all true >results.txt
# every survivor's diff in one file, kept with the copy (the next run starts afresh)
grep -E ": (survived|no tests)$" results.txt | sed 's/: .*//' | while read -r name; do
  echo "=== $name"
  ../.venv/bin/mutmut show "$name" 2>/dev/null | grep '^[-+][^-+]' || true
done >survivors.txt
python3 - "${modules[@]}" <<'PY'
import collections, re, sys
# a plugin file's figure is kept apart (plugins/NAME); `plugins` adds them all up
counts = collections.defaultdict(collections.Counter)
for line in open("results.txt"):
    m = re.match(r"\s*gangsched\.scheduler\.(plugins\.)?(\w+)\.\S+: (.+)", line)
    if m:
        module = f"plugins/{m.group(2)}" if m.group(1) else m.group(2)
        counts[module][m.group(3).strip()] += 1
print(f"{'module':<32} {'killed':>7} {'survived':>9} {'no tests':>9} {'timeout':>8} {'other':>6} {'score':>6}")


def row(module: str, c: collections.Counter[str]) -> None:
    killed, survived, untested, timeout = c["killed"], c["survived"], c["no tests"], c["timeout"]
    other = sum(c.values()) - killed - survived - untested - timeout
    # a mutant no test reaches is as alive as one that survives its tests
    judged = killed + survived + untested + timeout
    score = f"{100 * (killed + timeout) / judged:.0f}%" if judged else "-"
    print(f"{module:<32} {killed:>7} {survived:>9} {untested:>9} {timeout:>8} {other:>6} {score:>6}")


for module in sys.argv[1:]:
    if module == "plugins":
        files = sorted(k for k in counts if k.startswith("plugins/"))
        for name in files:
            row(name, counts[name])
        row("plugins (all)", sum((counts[k] for k in files), collections.Counter()))
    else:
        row(module, counts[module])
print("survivors and their diffs: .mutation/survivors.txt (or cd .mutation && ../.venv/bin/mutmut show NAME)")
PY
