#!/bin/bash
# README's MCA parameter table against what the component registers (ompi_info --parsable):
# every registered osc_gpuic_* parameter has a row with the same level and default, and every
# row names a registered parameter.  Prints each mismatch; exits non-zero on any.
top=$(cd "$(dirname "$0")/../.." && pwd)
readme="$top/README.md"
# ompi_info is not a sanitizer build and cannot load a sanitizer-built component; the table is
# the same in every build, and the plain pass checks it.
if ldd "$GPUIC_TEST_BUILD/stage/lib/openmpi/mca_osc_gpuic.so" 2>/dev/null | grep -qE 'lib(a|t|ub)san'; then
    echo "sanitizer build: checked in the plain pass"; exit 77
fi
# The runner points OMPI_MCA_mca_base_component_path at the staged build.  Settings of the
# component's own parameters would change the values ompi_info reports, so they are dropped.
unset $(env | sed -n 's/^\(OMPI_MCA_osc_gpuic_[A-Za-z0-9_]*\)=.*/\1/p')
info=$(ompi_info --param osc gpuic --level 9 --parsable 2>&1) || {
    echo "$info"; echo "FAIL: ompi_info failed"; exit 1; }
python3 - "$readme" <<'PY' "$info"
import re, sys

readme, info = sys.argv[1], sys.argv[2]
registered = {}   # name -> {field: value}
for line in info.splitlines():
    m = re.match(r"mca:osc:gpuic:param:(osc_gpuic_\w+):(value|level|source):(.*)$", line)
    if m:
        registered.setdefault(m.group(1), {})[m.group(2)] = m.group(3)

rows = {}   # name -> (level, default), from the table under the "| MCA parameter |" header
in_table = False
for line in open(readme):
    if line.startswith("| MCA parameter |"):
        in_table = True
        continue
    if in_table and not line.startswith("|"):
        break
    if in_table and not line.startswith("|---"):
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = (cells[1], cells[2])

def same_default(doc, value):
    doc = "" if doc in ('""', "(empty)") else doc
    if doc == value:
        return True
    try:
        return float(doc) == float(value)
    except ValueError:
        return False

errors = []
if not registered:
    errors.append("ompi_info lists no osc_gpuic parameter (component not found?)")
if not rows:
    errors.append("README has no MCA parameter table")
for name, f in sorted(registered.items()):
    if f.get("source") != "default":
        errors.append(f"{name}: set from {f.get('source')}, cannot compare its default")
    if name not in rows:
        errors.append(f"{name}: registered (level {f.get('level')}, default {f.get('value')}) "
                      "but not in README")
        continue
    level, default = rows[name]
    if level != f.get("level"):
        errors.append(f"{name}: README level {level}, registered level {f.get('level')}")
    if not same_default(default, f.get("value", "")):
        errors.append(f"{name}: README default {default!r}, registered default {f.get('value')!r}")
for name in sorted(set(rows) - set(registered)):
    errors.append(f"{name}: in README but not registered")
for e in errors:
    print("MISMATCH " + e)
print(f"mca_params: {len(registered)} registered, {len(rows)} documented: "
      + ("FAIL" if errors else "PASS"))
sys.exit(1 if errors else 0)
PY
