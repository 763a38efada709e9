"""rbdgen build | export | info | verify | bench | symbolic.

User mistakes (missing file, bad URDF, unknown algorithm, an output folder that cannot be
written, a corrupted module) print one line and exit 2; a mismatch found by `verify` exits 1."""

import argparse
import os
import sys
import time
import unicodedata
import warnings

from .errors import ModelError, RbdgenError


def _progress(start):
    def report(message):
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=sys.stderr, flush=True)
    return report


def _algorithms(text):
    return [a.strip() for a in text.split(",") if a.strip()] if text else None


def _printable(text):
    """`text` on one line, non-printable characters escaped (\\n, \\x01, \\u2028): no name breaks a line or table."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _width(text):
    """Columns `text` takes on a terminal: wide (CJK) characters take two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _os_error(exc):
    """One line for an OSError the command did not foresee (a disk full, a folder removed meanwhile)."""
    paths = " -> ".join(f"'{f}'" for f in (exc.filename, exc.filename2) if f is not None)
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{paths}: {reason}; check the path and its permissions" if paths else f"{reason}; check the paths given"


def _check_output(folder):
    """One-line errors for an output folder (-o) that rbdgen could not create or write into,
    before any work; the build creates it."""
    path = os.path.abspath(folder)
    existing = path
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    where = f"output folder '{folder}'" if existing == path else f"cannot create output folder '{folder}': '{existing}'"
    if not os.path.isdir(existing):
        raise RbdgenError(f"{where} is a file, not a folder; give a folder with -o")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise RbdgenError(f"{where} is not writable; give another folder with -o")


def _build(args, urdf):
    from .codegen.build import build
    _check_output(args.output)
    return build(urdf, args.output, _options(args), _progress(time.perf_counter()))


def _options(args):
    """The BuildOptions the command line asks for (build, export, verify, bench)."""
    from .codegen.options import BuildOptions
    return BuildOptions(floating_base=args.floating_base, strict=args.strict, mimic=args.mimic,
                        name=getattr(args, "name", None), algorithms=_algorithms(getattr(args, "algorithms", None)),
                        frames=_algorithms(getattr(args, "frames", None)),
                        contacts=getattr(args, "contact", None) or None, parameters=_parameters(args) or None,
                        native=not getattr(args, "no_native", False), cuda=getattr(args, "cuda", False),
                        cuda_arch=_algorithms(args.cuda_arch) or [""] if getattr(args, "cuda_arch", None) is not None
                        else None, **_source_options(args))   # (--cuda-arch given empty: refused by the build)


def _parameters(args):
    """The SPECs of --parameters (repeated, or separated by commas); an empty one is an error,
    as it is from Python, rather than a build without the parameters meant."""
    from .model.parameters import SPECS_CHOICE, split_specs
    specs = []
    for item in getattr(args, "parameters", None) or ():
        try:
            specs += split_specs(item)
        except ModelError:
            raise RbdgenError(f"--parameters {item!r}: empty SPEC; give {SPECS_CHOICE}") from None
    return specs


def _load_urdf(args, urdf, floating_base, mimic):
    from .model.sources import load_model
    return load_model(urdf, floating_base=floating_base, strict=args.strict, mimic=mimic, **_source_options(args))


def _source_options(args):
    """armature, xacro_args and packages from --armature JOINT=VALUE (or @FILE of such lines),
    --xacro-arg NAME:=VALUE and --package NAME=FOLDER."""
    armature = {}
    for item in getattr(args, "armature", None) or ():
        lines = _lines_of(item[1:]) if item.startswith("@") else [item]
        for line in lines:
            joint, _, value = line.partition("=")
            try:
                armature[joint.strip()] = float(value)
            except ValueError:
                raise RbdgenError(f"--armature {line!r}: expected JOINT=VALUE with a number") from None
    xacro_args = {}
    for item in getattr(args, "xacro_arg", None) or ():
        name, separator, value = item.partition(":=")
        if not separator or not name:
            raise RbdgenError(f"--xacro-arg {item!r}: expected NAME:=VALUE")
        xacro_args[name] = value
    packages = {}
    for item in getattr(args, "package", None) or ():
        name, separator, folder = item.partition("=")
        if not separator or not name:
            raise RbdgenError(f"--package {item!r}: expected NAME=FOLDER")
        packages[name] = folder
    return {"armature": armature or None, "xacro_args": xacro_args or None, "packages": packages or None,
            "loops": getattr(args, "loop", None) or None}


def _lines_of(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]
    except OSError as exc:
        raise RbdgenError(f"--armature @{path}: cannot read it ({exc.strerror})") from None


def cmd_build(args):
    module = _build(args, args.urdf)
    path = os.path.dirname(module.__file__)
    print(f"built {path}")
    width = max(map(len, module.operation_counts), default=0)
    for name, ops in module.operation_counts.items():
        print(f"  {name:{width}s} {ops:8d} operations")
    return 0


def cmd_export(args):
    from .codegen.export import export
    _check_output(args.output)
    path = export(args.urdf, args.output, _options(args), native=args.native, module_dir=args.module_dir,
                  progress=_progress(time.perf_counter()))
    print(f"exported {path}: cmake -S {args.output} -B build && cmake --build build && cmake --install build")
    return 0


def cmd_info(args):
    from .codegen.build import apply_parameters
    from .model.parameters import parameters_of
    model = _load_urdf(args, args.urdf, args.floating_base, args.mimic)
    params = parameters_of(apply_parameters(model, _parameters(args))) if _parameters(args) else None
    print(f"robot {_printable(model.name)}: nq={model.nq} nv={model.nv} bodies={model.nbodies} "
          f"total mass={model.total_mass:.6g} kg")
    depth, rows = {}, []
    for i, joint in enumerate(model.joints):
        p = model.parent[i]
        depth[i] = 0 if p < 0 else depth[p] + 1
        parent = _printable(model.body_names[p]) if p >= 0 else "(world)"
        rows.append(("  " * depth[i] + _printable(joint.name), joint.type, parent,
                     f"{joint.idx_q:5d} {joint.nq:2d} {joint.idx_v:5d} {joint.nv:2d}"))
    header = ("joint", "type", "parent body", "idx_q nq idx_v nv")
    widths = [max([minimum] + [_width(row[k]) for row in rows]) for k, minimum in enumerate((32, 12, 24))]
    for row in [header] + rows:
        print(" ".join(cell + " " * (width - _width(cell)) for cell, width in zip(row, widths)) + " " + row[3])
    fixed = [_printable(f.name) for f in model.frames if f.name not in model.body_names]
    if fixed:
        print(f"fixed frames: {', '.join(fixed)}")
    for loop in model.loops:
        print(f"loop {_printable(loop.name)} ({loop.kind}): frames {_printable(loop.a)} and {_printable(loop.b)} held "
              "together")
    if params is not None:
        print(f"parameters ({len(params)}, the layout of params): " +
              ", ".join(f"{_printable(n)}={x:g}" for n, x in zip(params.names, params.nominal)))
    return 0


def cmd_verify(args):
    from .codegen.build import load
    from .model.sources import source_kind
    from .runtime.verify import verify_module
    if os.path.isdir(args.target):
        module = load(args.target)
        urdf, floating, mimic, options = _module_source(args.target, args.mimic)
        from .model.sources import load_model
        model = load_model(urdf, floating_base=floating, strict=args.strict, mimic=mimic, **options)
    else:
        urdf, floating, mimic = args.target, args.floating_base, args.mimic
        model = _load_urdf(args, urdf, floating, mimic)
        module = _build(args, urdf)
    from .codegen.build import apply_parameters
    model = apply_parameters(model, module._META["options"].get("parameters"))
    report = verify_module(module, model, states=args.states, seed=args.seed, rel_tol=args.tol)
    ok = all(r["ok"] for r in report.values())
    close = "100 eps" if args.tol is None else f"{args.tol:g}"
    print(f"{'function':18s} worst relative error vs reference ({args.states} states; beyond {close}, "
          "extended precision arbitrates)")
    for name, r in report.items():
        arbitrated = (f"  (own error {r['truth_error']:.1e}, reference's {r['reference_error']:.1e}, "
                      f"bound {r['bound']:.1e})") if "truth_error" in r else ""
        print(f"  {name:18s} {r['error']:.2e}  {'ok' if r['ok'] else 'MISMATCH'}{arbitrated}")
    pin_report, notes = _verify_pinocchio(module, model, urdf, floating, mimic, args)
    for note in notes:
        print(_printable(note))
    if pin_report is not None:
        print(f"function           worst relative error vs {'MuJoCo' if source_kind(urdf) == 'mjcf' else 'Pinocchio'}")
        for name, err in pin_report.items():
            good = err <= 1e-9
            ok = ok and good
            print(f"  {name:18s} {err:.2e}  {'ok' if good else 'MISMATCH'}")
    return 0 if ok else 1


def _module_source(folder, mimic):
    """(path, floating base, mimic, load_model's options) that the module in `folder` was built
    from, the file checked to be still there and unchanged."""
    import json
    meta_path = os.path.join(folder, "model.json")
    try:
        with open(meta_path, encoding="utf-8") as f:
            source = json.load(f).get("source") or {}
        urdf = source.get("urdf")
    except (ValueError, AttributeError):
        raise RbdgenError(f"{meta_path} is corrupted; rebuild the module with rbdgen build") from None
    if not isinstance(urdf, str) or not os.path.isfile(urdf):
        raise RbdgenError(f"{folder}: the URDF it was built from ({urdf}) is gone; verify the URDF instead")
    from .codegen.build import source_changed
    changed = source_changed(source)
    if changed:
        read_by = "" if changed == urdf else f" (read by {urdf})"
        raise RbdgenError(f"{folder}: {changed}{read_by} changed since the module was built; verify the URDF instead")
    options = {k: source[k] for k in ("armature", "xacro_args", "packages") if isinstance(source.get(k), dict)}
    if isinstance(source.get("loops"), list):
        options["loops"] = source["loops"]
    return urdf, bool(source.get("floating_base")), bool(source.get("mimic", mimic)), options


def _verify_pinocchio(module, model, urdf, floating, mimic, args):
    """(worst errors against Pinocchio for rnea, crba, aba (those the module has and Pinocchio
    computes for this model), lines to print); no errors (None) when Pinocchio is not
    installed or refuses the URDF."""
    import numpy as np
    from .runtime.pinocchio_bridge import PinocchioDisagrees, comparable_model, to_pinocchio_q
    from .model.states import random_state
    from .model.sources import source_kind
    if source_kind(urdf) == "mjcf":   # MuJoCo is the outside truth of an MJCF
        from .runtime.mujoco_bridge import against_mujoco, module_functions
        worst = against_mujoco(urdf, module_functions(module), states=args.states, seed=args.seed)
        return worst, ["compared with MuJoCo (contacts, limits, actuation, springs, equality constraints off)"]
    if source_kind(urdf) != "urdf":
        return None, [f"Pinocchio is compared on URDF files only (this is {source_kind(urdf)}): "
                      "compared with the reference only"]
    try:
        pm, why = comparable_model(urdf, floating, model, mimic)
    except PinocchioDisagrees as exc:   # not a reason to skip Pinocchio: the two disagree on the robot itself
        return {"model": float("inf")}, [str(exc)]
    if pm is None:
        return None, [f"{why}: compared with the reference only"]
    import pinocchio as pin
    pd = pm.createData()
    rng = np.random.default_rng(args.seed)
    worst, notes = {}, []
    names = [name for name in ("rnea", "crba", "aba") if name in module.operation_counts]
    for _ in range(args.states):
        q, v, a = random_state(model, rng)
        pq = to_pinocchio_q(model, q)
        # crba on fresh Data: Pinocchio 4.1's crba with mimic joints depends on what Data held
        pairs = {"rnea": lambda: (module.rnea(q, v, a), pin.rnea(pm, pd, pq, v, a)),
                 "crba": lambda: (module.crba(q), _symmetric(pin.crba(pm, pm.createData(), pq))),
                 "aba": lambda: (module.aba(q, v, a), pin.aba(pm, pd, pq, v, a))}
        for name in list(names):
            try:
                x, y = pairs[name]()
            except RuntimeError as exc:   # Pinocchio 4.1's aba has no mimic joints, for one
                names.remove(name)
                notes.append(f"Pinocchio cannot compute {name} for this model ({str(exc).rstrip('.')}): not compared")
                continue
            err = float(np.abs(x - y).max()) / max(1.0, float(np.abs(y).max()))
            # NaN anywhere is a failure, never lost in max()
            worst[name] = max(worst.get(name, 0.0), err if err == err else float("inf"))
    return {name: worst[name] for name in names}, notes


def cmd_bench(args):
    from .bench import BATCH, bench, check_pin_bench
    check_pin_bench(args.pin_bench)
    model = _load_urdf(args, args.urdf, args.floating_base, args.mimic)
    module = _build(args, args.urdf)
    bench(module, model, args.urdf, args.floating_base, pin_bench=args.pin_bench, mimic=args.mimic,
          calls=args.calls, batch=args.batch or BATCH)
    return 0


def cmd_symbolic(args):
    from .symbolic import SympyFunction
    model = _load_urdf(args, args.urdf, args.floating_base, args.mimic)
    parameters = _parameters(args)
    function = SympyFunction.of(model, args.function, parameters, closed_form=args.closed_form,
                                progress=_progress(time.perf_counter()))
    print(function.listing("latex" if args.latex else "python" if args.python else "text"))
    return 0


def _stdout_to_devnull():
    """Point file descriptor 1 at devnull, so that what is left in stdout's buffer is dropped."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # a stdout that is no file (one replaced in-process)
        pass


def _symmetric(M):
    import numpy as np
    return np.triu(M) + np.triu(M, 1).T


def _positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(prog="rbdgen", description="Generate fast, verified rigid-body dynamics from a URDF.")
    sub = parser.add_subparsers(dest="command", required=True)

    def model_options(p):
        p.add_argument("--floating-base", action="store_true", help="add a free-flyer root joint")
        p.add_argument("--strict", action="store_true",
                       help="a physically invalid inertia is an error (default: a warning, and the build goes on)")
        p.add_argument("--mimic", action="store_true",
                       help="<mimic> joints as Pinocchio's mimic=True model: q = multiplier * q_master + offset, no "
                            "coordinate of their own (default: independent joints, with a warning)")
        p.add_argument("--armature", action="append", metavar="JOINT=VALUE",
                       help="rotor inertia added to M's diagonal for the joint's coordinates (repeat it; @FILE reads "
                            "JOINT=VALUE lines); an MJCF's own armature is replaced for the joints named")
        p.add_argument("--xacro-arg", action="append", metavar="NAME:=VALUE", help="an argument of a xacro file")
        p.add_argument("--loop", action="append", metavar="FRAME_A[@x,y,z]:FRAME_B[@x,y,z][:3d|:6d]",
                       help="a loop closure (repeat for several): the two frames (or points in them) held together, "
                            "3d their origins, 6d the frames; adds loop_residual, loop_jacobian, loop_gamma, "
                            "constrained_dynamics and project_velocity")
        p.add_argument("--package", action="append", metavar="NAME=FOLDER",
                       help="the folder of a package a xacro file finds with $(find NAME)")
        p.add_argument("--parameters", action="append", metavar="SPEC[,SPEC...]",
                       help="model entries taken at run time (every function's `params`; symbols for symbolic): "
                            "inertia:LINK, inertia:all, payload:FRAME, gravity, armature, damping, origin:JOINT "
                            "(repeat it or separate by commas)")

    def function_options(p):
        p.add_argument("--name", help="module name (default: the robot's name, sanitized)")
        model_options(p)
        p.add_argument("--algorithms", help="comma-separated functions to generate (default: all)")
        p.add_argument("--frames", help="comma-separated frames served (default: every link and fixed frame)")
        p.add_argument("--contact", action="append", metavar="FRAME[:6d|:3d|:1d][@x,y,z][/nx,ny,nz]",
                       help="a contact declared at build time (repeat for several): 6d holds the frame, 3d a point "
                            "(offset @x,y,z in frame coordinates), 1d a point along a normal in frame axes (default "
                            "+z); adds contact_jacobian, contact_gamma, contact_dynamics, impulse_dynamics, "
                            "contact_inertia and contact_eom for them")

    p = sub.add_parser("build", help="generate and compile the module for a URDF")
    p.add_argument("urdf")
    p.add_argument("-o", "--output", default="generated", help="output folder (default: generated)")
    function_options(p)
    p.add_argument("--no-native", action="store_true", help="do not compile with -march=native")
    p.set_defaults(func=cmd_build)
    build = p

    p = sub.add_parser("export", help="write the C library of a URDF's robot: sources, header, CMake package")
    p.add_argument("urdf")
    p.add_argument("-o", "--output", required=True, help="the library's folder (new, empty or an earlier export)")
    function_options(p)
    p.add_argument("--native", action="store_true", help="CMake's RBDGEN_NATIVE (-march=native) on (default: portable)")
    p.add_argument("--module-dir", help="build or reuse the module here, as build -o does (default: a temporary one)")
    p.set_defaults(func=cmd_export)
    for p in (build, p):   # the CUDA target: export adds the kernels' CMake target, for these GPUs
        p.add_argument("--cuda", action="store_true", help="CUDA kernels too, for GPU arrays (docs/gpu.md)")
        p.add_argument("--cuda-arch", metavar="sm_XY[,...]", help="compile them for these GPUs (implies --cuda)")

    p = sub.add_parser("info", help="print the kinematic tree, joints and their q/v indices")
    p.add_argument("urdf")
    model_options(p)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("verify", help="compare a module with the reference (and Pinocchio)")
    p.add_argument("target", help="a URDF (built or reused) or a generated module folder")
    p.add_argument("-o", "--output", default="generated", help="output folder of the build (default: generated)")
    model_options(p)
    p.add_argument("--algorithms", help="comma-separated functions to build, for a URDF (default: all)")
    p.add_argument("--states", type=_positive, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tol", type=float, default=None)
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("bench", help="time every function against Pinocchio, in one run")
    p.add_argument("urdf")
    p.add_argument("-o", "--output", default="generated", help="output folder of the build (default: generated)")
    model_options(p)
    p.add_argument("--algorithms", help="comma-separated functions to build and time (default: all)")
    p.add_argument("--pin-bench", help="Pinocchio's C++ timing tool (../shared/bench/build_pin_bench.sh builds it)")
    p.add_argument("--calls", type=_positive, help="calls per timing round from Python (default: by size, 20 to 2000)")
    p.add_argument("--batch", type=_positive, help="states per batched call (default: 2000)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("symbolic", help="print a function of states as SymPy: the optimized program, or in closed form")
    p.add_argument("urdf", metavar="robot", help="a URDF, xacro or MJCF file")
    p.add_argument("function", help="a function of states (rnea, crba, aba, ...)")
    model_options(p)
    form = p.add_mutually_exclusive_group()
    form.add_argument("--latex", action="store_true", help="print LaTeX, one equation a line")
    form.add_argument("--python", action="store_true", help="print a Python function of the inputs")
    p.add_argument("--closed-form", action="store_true",
                   help="substitute the temporaries and simplify each entry (for small robots)")
    p.set_defaults(func=cmd_symbolic)

    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            try:
                code = args.func(args)
                sys.stdout.flush()   # a closed pipe is met here, not at the interpreter's exit
                return code
            finally:
                # the URDF is loaded twice by verify and bench (model, then build): say each thing once
                for message in dict.fromkeys(_printable(w.message) for w in caught):
                    print(f"rbdgen: warning: {message}", file=sys.stderr)
    except RbdgenError as exc:
        message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
        print(f"rbdgen: error: {_printable(message)}", file=sys.stderr)
        if getattr(exc, "output", ""):
            print(exc.output, file=sys.stderr)
        return 2
    except BrokenPipeError:
        # stdout's reader left (... | head): quiet, as after SIGPIPE (128 + 13); devnull for the last flush
        _stdout_to_devnull()
        return 141
    except OSError as exc:   # PermissionError, NotADirectoryError, ... met after the checks
        print(f"rbdgen: error: {_printable(_os_error(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rbdgen: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
