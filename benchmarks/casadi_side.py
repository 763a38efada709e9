"""adam + CasADi, the other URDF -> C path, as bench_c.py's third column.

adam (adam-robotics) builds CasADi expressions of a robot's dynamics from its URDF; CasADi's
CodeGenerator turns them into C. For each of our functions that adam provides directly
(CANDIDATES), this builds the CasADi Function, checks it on a few random states against our
module, generates C for the ones that agree and compiles it with bench_c's flags. Everything
is cached in benchmarks/.cache/casadi/ under a key of the robot, adam's and CasADi's
versions, this file and the compiler, so a second run only links the objects.

Conventions: adam's velocity representation is BODY_FIXED, where the base velocity is
[linear; angular] in the base frame as our v[:6], and H is the base placement built from our
quaternion. adam has no fixed-base mode: for a fixed-base robot H = identity and the base
velocity = 0 are substituted as constants into the CasADi graph (CasADi folds them), and
the outputs keep the joint block.
"""

import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from collections import namedtuple

import numpy as np

from common import log
from rbdgen.codegen.compilation import compile_source
from rbdgen.codegen.cache import compiler_identity
from rbdgen.errors import BuildError
from rbdgen.model.states import random_state
from rbdgen.spatial import quaternion_to_rotation

INSTALL = 'pip install "adam-robotics[casadi]"'
TOLERANCE = 1e-8              # max |adam - ours| / max(1, max |ours|) for a function to be timed
CHECK_STATES = 3
HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, ".cache", "casadi")

# Our function -> adam's KinDynComputations method, its inputs, the velocity representation,
# which output axes run over the generalized velocities (their first 6 entries are the base:
# a fixed-base robot keeps the rest), and, by floating base or not, why it may not agree with
# ours (printed if it does not).
Candidate = namedtuple("Candidate", "method inputs representation block why")
FLOATING_COLUMNS = ("its base columns are for a base velocity in adam's {rep} representation, "
                    "ours for v[:6] in the base frame")
ROOT_MASS = "adam counts the links fixed to the world in the mass (ours and Pinocchio's leave them out)"
CANDIDATES = {
    "nle": Candidate("bias_force_fun", ("H", "s", "v_b", "s_dot"), "BODY_FIXED", "rows", {}),
    "gravity": Candidate("gravity_term_fun", ("H", "s"), "BODY_FIXED", "rows", {}),
    "crba": Candidate("mass_matrix_fun", ("H", "s"), "BODY_FIXED", "both", {}),
    "aba": Candidate("aba_fun", ("H", "s", "v_b", "s_dot", "tau"), "BODY_FIXED", "rows",
                     {False: "adam's aba always has a free base (no fixed-base mode): its joint block is "
                             "not the fixed-base forward dynamics"}),
    "com": Candidate("CoM_position_fun", ("H", "s"), "BODY_FIXED", "none", {False: ROOT_MASS}),
    "centroidal_map": Candidate("centroidal_momentum_matrix_fun", ("H", "s"), "MIXED", "cols",
                                {False: ROOT_MASS, True: FLOATING_COLUMNS.format(rep="MIXED")}),
    "frame_placement": Candidate("forward_kinematics_fun", ("H", "s"), "BODY_FIXED", "placement", {}),
    "frame_jacobian_local": Candidate("jacobian_fun", ("H", "s"), "BODY_FIXED", "cols", {}),
    "frame_jacobian_local_world_aligned": Candidate("jacobian_fun", ("H", "s"), "MIXED", "cols",
                                                    {True: FLOATING_COLUMNS.format(rep="MIXED")}),
    "frame_jacobian_world": Candidate("jacobian_fun", ("H", "s"), "INERTIAL_FIXED", "cols",
                                      {True: FLOATING_COLUMNS.format(rep="INERTIAL_FIXED")}),
}
NOT_PROVIDED = {"rnea": "adam has no inverse dynamics with given accelerations (its rnea is the bias force, a = 0)"}


def unavailable():
    """None when adam's CasADi backend imports, else why not (one line)."""
    try:
        import casadi  # noqa: F401
        import adam.casadi  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


def versions():
    from importlib.metadata import version
    import casadi
    return {"adam-robotics": version("adam-robotics"), "casadi": casadi.__version__}


# ------------------------------------------------------------------- states, ours, theirs ----

def base_placement(q):
    """adam's H: the 4 x 4 placement of the base from a free-flyer q = [x y z qx qy qz qw ...]."""
    H = np.eye(4)
    H[:3, :3] = quaternion_to_rotation(*q[3:7])
    H[:3, 3] = q[:3]
    return H


def adam_arguments(inputs, floating, q, v, tau):
    """Numbers for adam's inputs from our state (the driver passes the same pointers)."""
    base = 6 if floating else 0
    values = {"H": base_placement(q) if floating else None, "s": q[7:] if floating else q,
              "v_b": v[:6], "s_dot": v[base:], "tau": tau[base:]}
    return [values[name] for name in function_inputs(inputs, floating)]


def function_inputs(inputs, floating):
    """The inputs of the CasADi Function: a fixed base has H and v_b as constants."""
    return [name for name in inputs if floating or name not in ("H", "v_b")]


def ours(module, fn, frame, floating, q, v, tau):
    """Our value in adam's layout (frame placement: [R p], 3 x 4; aba: no base wrench, as adam's)."""
    if fn == "aba":
        tau = np.array(tau, dtype=float)
        tau[:6 if floating else 0] = 0.0
        return module.aba(q, v, tau)
    if fn == "frame_placement":
        R, p = module.frame_placement(q, frame)
        return np.column_stack([R, p])
    if fn.startswith("frame_jacobian_"):
        return module.frame_jacobian(q, frame, reference=fn[len("frame_jacobian_"):])
    return module.nle(q, v) if fn == "nle" else getattr(module, fn)(q)


def relative_error(theirs, mine):
    mine = np.asarray(mine, dtype=float)
    theirs = np.asarray(theirs, dtype=float).reshape(mine.shape)
    return float(np.max(np.abs(theirs - mine)) / max(1.0, float(np.max(np.abs(mine)))))


def dense(values, info):
    """A CasADi output (its nonzeros, column-major compressed) as a dense array."""
    rows, cols = info["shape"]
    out = np.zeros((rows, cols))
    colind, row = info["colind"], info["row"]
    for c in range(cols):
        for k in range(colind[c], colind[c + 1]):
            out[row[k], c] = values[k]
    return out.reshape(-1) if cols == 1 else out


# ----------------------------------------------------------------------------- adam ----

def urdf_for_adam(urdf):
    """The URDF text with `<origin/>` added to every `<inertial>` that has none (the URDF default,
    identity; adam 0.5 fails on it: talos), and how many were added."""
    tree = ET.parse(urdf)
    added = 0
    for inertial in tree.getroot().iter("inertial"):
        if inertial.find("origin") is None:
            ET.SubElement(inertial, "origin", xyz="0 0 0", rpy="0 0 0")
            added += 1
    return ET.tostring(tree.getroot(), encoding="unicode"), added


PATCHED = set()               # the prismatic joints whose motion subspace patch_prismatic fixed


def patch_prismatic():
    """adam 0.5's CasADi backend gives a prismatic joint a 12-row motion subspace (its zeros are
    3-vectors): give it [axis; 0 0 0]. Leaves a correct motion subspace as it is."""
    from adam.model.std_factories.std_joint import StdJoint
    original = StdJoint.motion_subspace
    if getattr(original, "bench_c_patch", False):
        return

    def motion_subspace(self):
        S = original(self)
        if self.type == "prismatic" and S.shape[0] != 6:
            PATCHED.add(self.name)
            z = self.math.zeros(1)
            return self.math.vertcat(self.axis[0], self.axis[1], self.axis[2], z, z, z)
        return S

    motion_subspace.bench_c_patch = True
    StdJoint.motion_subspace = motion_subspace


def kin_dyn(urdf, joints, gravity):
    """adam's KinDynComputations for the joints in our order, with our gravity (its chatter about
    unknown URDF tags is swallowed), and the workarounds it needed (printed)."""
    from adam.casadi import KinDynComputations
    text, added = urdf_for_adam(urdf)
    patch_prismatic()
    PATCHED.clear()
    with contextlib.redirect_stderr(io.StringIO()):
        kd = KinDynComputations(text, joints, gravity=np.array([*gravity, 0.0, 0.0, 0.0]))
    workarounds = []
    if added:
        workarounds.append(f"{added} <inertial> without <origin> given the URDF default (adam 0.5 fails on them)")
    if PATCHED:
        workarounds.append(f"adam 0.5's 12-row motion subspace of the prismatic joints {', '.join(sorted(PATCHED))} "
                           "replaced by [axis; 0] (its CasADi backend fails on them)")
    return kd, workarounds


def casadi_function(kd, fn, candidate, floating, frame, symbol):
    """The CasADi Function of `fn` as bench_c times it: inputs by function_inputs, a fixed base's
    H and base velocity substituted, H's last row the constant [0 0 0 1], outputs cut to our block."""
    import casadi as cs
    from adam.core.constants import Representations
    kd.set_frame_velocity_representation(getattr(Representations, candidate.representation + "_REPRESENTATION"))
    method = getattr(kd, candidate.method)
    full = method(frame) if fn.startswith("frame_") else method()
    n = kd.NDoF
    symbols = {"H": cs.SX.sym("H", 4, 4), "s": cs.SX.sym("s", n), "v_b": cs.SX.sym("v_b", 6),
               "s_dot": cs.SX.sym("s_dot", n), "tau": cs.SX.sym("tau", n)}
    H = symbols["H"]
    values = {**symbols, "H": cs.vertcat(H[:3, :], cs.DM([[0.0, 0.0, 0.0, 1.0]]))}
    if not floating:
        values.update(H=cs.DM.eye(4), v_b=cs.DM.zeros(6))
    out = full(*[values[name] for name in candidate.inputs])
    k = 0 if floating else 6
    out = {"rows": lambda x: x[k:, :], "cols": lambda x: x[:, k:], "both": lambda x: x[k:, k:],
           "placement": lambda x: x[:3, :], "none": lambda x: x}[candidate.block](out)
    inputs = function_inputs(candidate.inputs, floating)
    return cs.Function(symbol, [symbols[name] for name in inputs], [out], inputs, ["out"], {"cse": True})


def operations(f):
    """CasADi's instructions other than inputs, outputs and constants."""
    import casadi as cs
    skip = {cs.OP_INPUT, cs.OP_OUTPUT, cs.OP_CONST, cs.OP_PARAMETER}
    return sum(1 for i in range(f.n_instructions()) if f.instruction_id(i) not in skip)


# ---------------------------------------------------------------------------- the side ----

class Side:
    """adam + CasADi for one robot: the functions that agree with ours, compiled in `folder`
    (record["functions"]: symbol, inputs, output sparsity, operations, check error), and why the
    others are left out (record["left_out"]), for the functions of this run."""

    def __init__(self, folder, record, floating):
        self.folder, self.record, self.floating = folder, record, floating
        self.functions = record["functions"]
        self.left_out = record["left_out"]

    def headers(self):
        return [f"{info['symbol']}.h" for info in self.functions.values()]

    def objects(self):
        return [os.path.join(self.folder, f"{info['symbol']}.o") for info in self.functions.values()]

    def extra_inputs(self, qs):
        """Arrays the driver reads besides ours: H per state (its conversion is not timed)."""
        if not self.floating or not self.functions:
            return {}
        return {"H": np.array([base_placement(q).reshape(-1, order="F") for q in qs])}

    def declarations(self):
        """Includes and each function's work arrays."""
        lines = [f'#include "{h}"' for h in self.headers()]
        for info in self.functions.values():
            s = info["symbol"]
            lines.append(f"static casadi_int iw_{s}[{s}_SZ_IW + 1];")
            lines.append(f"static casadi_real w_{s}[{s}_SZ_W + 1];")
        return "\n".join(lines) + "\n"

    def call(self, fn, nq, nv):
        """One call of adam's `fn` on state k into `out`, as a C statement."""
        info = self.functions[fn]
        s, base = info["symbol"], 6 if self.floating else 0
        pointer = {"H": "in_H + k * 16", "s": f"in_q + k * {nq} + {7 if self.floating else 0}",
                   "v_b": f"in_v + k * {nv}", "s_dot": f"in_v + k * {nv} + {base}",
                   "tau": f"in_tau + k * {nv} + {base}"}
        args = ", ".join(pointer[name] for name in info["inputs"])
        return (f"{{ const casadi_real *arg_[{s}_SZ_ARG] = {{{args}}}; casadi_real *res_[{s}_SZ_RES] = {{out}};\n"
                f"              {s}(arg_, res_, iw_{s}, w_{s}, 0); }}")

    def check_driver(self, module, frame, text, arrays):
        """Compare the driver's `check` output (the compiled C on the first states) with our module:
        this checks the compiled code and how the driver passes its inputs. Exits on a mismatch."""
        values = {}
        for line in text.splitlines():
            parts = line.split()
            if parts and parts[0] == "check":
                values[(parts[1], int(parts[2]))] = np.array([float(x) for x in parts[3:]])
        for fn, info in self.functions.items():
            for k in range(CHECK_STATES):
                if (fn, k) not in values:
                    sys.exit(f"bench_c: the driver printed no check of adam's {fn} at state {k}")
                q, v = arrays["q"][k], arrays["v"][k]
                tau = arrays["tau"][k] if "tau" in arrays else None
                err = relative_error(dense(values[(fn, k)], info), ours(module, fn, frame, self.floating, q, v, tau))
                if not err <= TOLERANCE:
                    sys.exit(f"bench_c: adam's compiled {fn} differs from ours by {err:.1e} at driver state {k} "
                             f"(it agreed when {self.folder} was built: did our module change?)")
        log(f"   adam + CasADi: the compiled functions agree with ours on the driver's first {CHECK_STATES} states")


def prepare(name, urdf, floating, meta, model, module, frame, wanted, flags):
    """The adam + CasADi side of robot `name` for our functions `wanted`, and why there is none
    (None). Each function is built, checked, generated and compiled once (one compiler at a
    time) into the robot's cache folder, which later runs reuse function by function."""
    if meta["source"].get("mimic"):
        return None, "the module has mimic joints, which adam does not model"
    joints = [j["name"] for j in meta["joints"] if j["type"] != "free_flyer"]
    candidates = {fn: CANDIDATES[fn] for fn in wanted if fn in CANDIDATES
                  and (frame is not None or not fn.startswith("frame_"))}
    with open(urdf, "rb") as f:
        urdf_hash = hashlib.sha256(f.read()).hexdigest()
    with open(__file__, "rb") as f:
        own_hash = hashlib.sha256(f.read()).hexdigest()
    parts = [versions(), own_hash, urdf_hash, floating, joints, meta["gravity"], frame, compiler_identity(flags)]
    key = hashlib.sha256(json.dumps(parts, default=repr).encode()).hexdigest()[:16]
    folder = os.path.join(CACHE, f"{name}-{key}")
    record = cached(folder) or new_folder(folder, name, key, frame)
    missing = {fn: c for fn, c in candidates.items() if fn not in record["functions"] and fn not in record["left_out"]}
    if missing:
        build(folder, record, name, urdf, floating, meta, model, module, frame, missing, joints, flags)
    else:
        log(f"   adam + CasADi: reusing {folder}")
    chosen = {"versions": record["versions"], "workarounds": record["workarounds"],
              "functions": {fn: record["functions"][fn] for fn in candidates if fn in record["functions"]},
              "left_out": {fn: record["left_out"][fn] for fn in candidates if fn in record["left_out"]}}
    chosen["left_out"].update({fn: NOT_PROVIDED[fn] for fn in wanted if fn in NOT_PROVIDED})
    return Side(folder, chosen, floating), None


def cached(folder):
    """The record of a cache folder, without the functions whose files are missing; None if none."""
    try:
        with open(os.path.join(folder, "record.json"), encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    record["functions"] = {fn: info for fn, info in record["functions"].items()
                           if all(os.path.exists(os.path.join(folder, info["symbol"] + ext)) for ext in (".o", ".h"))}
    return record


def new_folder(folder, name, key, frame):
    """An empty cache folder for this key, replacing the robot's folders of other keys."""
    for old in os.listdir(ensure(CACHE)):
        if old.startswith(f"{name}-") and len(old) == len(name) + 17:
            shutil.rmtree(os.path.join(CACHE, old), ignore_errors=True)
    os.makedirs(folder)
    return {"robot": name, "key": key, "versions": versions(), "frame": frame, "workarounds": [],
            "functions": {}, "left_out": {}}


def build(folder, record, name, urdf, floating, meta, model, module, frame, candidates, joints, flags):
    """Build, check, generate and compile `candidates` into `folder`, recording each in `record`
    (saved after each function)."""
    import casadi as cs
    log(f"   adam + CasADi: building {len(candidates)} functions with adam {versions()['adam-robotics']}, "
        f"CasADi {cs.__version__} into {folder} ...")
    kd, workarounds = kin_dyn(urdf, joints, meta["gravity"])
    for text in workarounds:
        log(f"   adam + CasADi: {text}")
    record["workarounds"] = workarounds
    states = check_states(model)
    for fn, candidate in candidates.items():
        symbol = f"adam_{sanitize(name)}_{fn}"
        try:
            f = casadi_function(kd, fn, candidate, floating, frame, symbol)
        except Exception as exc:                    # adam refuses it (an unknown frame, a joint type)
            record["left_out"][fn] = f"adam cannot build it: {type(exc).__name__}: {exc}"
            save(folder, record)
            continue
        err = max(relative_error(np.array(f(*adam_arguments(candidate.inputs, floating, q, v, tau))).squeeze(),
                                 ours(module, fn, frame, floating, q, v, tau)) for q, v, tau in states)
        if not err <= TOLERANCE:
            why = candidate.why.get(floating)
            record["left_out"][fn] = f"differs from ours by {err:.1e} relative{': ' + why if why else ''}"
            save(folder, record)
            continue
        sparsity = f.sparsity_out(0)
        info = {"symbol": symbol, "method": candidate.method, "representation": candidate.representation,
                "inputs": function_inputs(candidate.inputs, floating),
                "shape": [sparsity.size1(), sparsity.size2()], "nnz": sparsity.nnz(),
                "colind": list(sparsity.colind()), "row": list(sparsity.row()),
                "operations": operations(f), "check_error": err}
        log(f"   adam + CasADi: generating and compiling {fn} ({info['operations']} operations) ...")
        generate(f, symbol, folder)
        try:   # the record lists a function only once its object is written
            compile_source(os.path.join(folder, f"{symbol}.c"), flags, folder)
        except BuildError as exc:
            sys.exit(f"bench_c: {exc}")
        record["functions"][fn] = info
        save(folder, record)


def save(folder, record):
    path = os.path.join(folder, "record.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    os.replace(path + ".tmp", path)


def check_states(model):
    """A few seeded states (q, v, tau) for checking adam against our module."""
    rng = np.random.default_rng(12345)
    return [(*random_state(model, rng)[:2], rng.normal(size=model.nv)) for _ in range(CHECK_STATES)]


def generate(f, symbol, folder):
    import casadi as cs
    generator = cs.CodeGenerator(f"{symbol}.c", {"with_header": True})
    generator.add(f)
    generator.generate(folder + os.sep)


def sanitize(name):
    return "".join(c if c.isalnum() else "_" for c in name)


def ensure(folder):
    os.makedirs(folder, exist_ok=True)
    return folder
