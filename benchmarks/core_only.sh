#!/usr/bin/env bash
# Every URDF of example-robot-data that Pinocchio loads, through a core install of rbdgen
# (`pip install .`, no extras): rbdgen info, build (verified against the reference), verify
# and export, each from the command line. The list of URDFs and their folder come from this
# Python (which has example-robot-data and Pinocchio); the core install lives in a virtual
# environment of its own, in which the script first checks that no optional package imports.
#
#   bash benchmarks/core_only.sh [FUNCTIONS]    # default: rnea,crba,gravity,frame_placement
#
# A URDF without joints (hector's quadrotor) is built again with --floating-base, as rbdgen's
# one-line error says. Prints one line per robot and the count of failures; exits 1 on any.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
functions=${1:-rnea,crba,gravity,frame_placement}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - > "$work/urdfs" <<'EOF'
import os, warnings
import pinocchio as pin
from rbdgen.examples import robots_dir
warnings.simplefilter("ignore")
for folder, _, files in sorted(os.walk(robots_dir())):
    for name in sorted(files):
        if name.endswith(".urdf"):
            try:
                pin.buildModelFromUrdf(os.path.join(folder, name))
            except Exception:
                continue
            print(os.path.join(folder, name))
EOF
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$root"
# shellcheck disable=SC1091
source "$work/venv/bin/activate"
python -c "
import importlib.util as u
extra = [m for m in ('xacro', 'mujoco', 'casadi', 'jax', 'pinocchio', 'example_robot_data', 'dask') if u.find_spec(m)]
assert not extra, f'not a core install: {extra} import'"
out="$work/out"; count=0; failures=0
while read -r urdf; do
    count=$((count + 1)); name="m$count"; base=()
    fail() { echo "FAIL $1 $urdf: $(tail -1 "$work/err")"; failures=$((failures + 1)); }
    rbdgen info "$urdf" > /dev/null 2> "$work/err" || { fail info; continue; }
    if ! rbdgen build "$urdf" -o "$out" --name "$name" --algorithms "$functions" > /dev/null 2> "$work/err"; then
        grep -q -- "--floating-base" "$work/err" || { fail build; continue; }
        base=(--floating-base)
        rbdgen build "$urdf" -o "$out" --name "$name" "${base[@]}" --algorithms "$functions" > /dev/null \
            2> "$work/err" || { fail build; continue; }
    fi
    rbdgen verify "$out/$name" --states 3 > "$work/err" 2>&1 || { fail verify; continue; }
    rbdgen export "$urdf" -o "$work/lib$count" --module-dir "$out" --name "$name" "${base[@]}" \
        --algorithms "$functions" > /dev/null 2> "$work/err" || { fail export; continue; }
    echo "ok   $(basename "$urdf") ${base[*]}"
done < "$work/urdfs"
echo "$count URDFs through a core install: $failures failures"
[ "$failures" -eq 0 ]
