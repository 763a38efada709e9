"""Loop closures stated by the user, for any robot file (`--loop`, `loops=`): two frames, each
optionally moved to a point in its own coordinates, held together at their origins ("3d", the
default) or as frames ("6d"):

    FRAME_A[@x,y,z]:FRAME_B[@x,y,z][:3d|:6d]

Each loop adds two frames, loop<k>_a and loop<k>_b (k from 0 in the order given, after the
file's own loops), and a Loop named by its text (rbdgen.algorithms.loops).
"""

import dataclasses
import math
import re

from ..errors import ModelError, did_you_mean
from ..spatial import Transform
from .model import Frame, Loop


def with_loops(model, specs):
    """The model with the loop closures `specs` (strings as above) added; one-line ModelError
    naming the part of a spec that is wrong."""
    frames, loops = list(model.frames), list(model.loops)
    names = {f.name for f in frames}
    for text in specs:
        ends, kind = _parse(model, text)
        pair = []
        for side, (frame, point) in zip("ab", ends):
            name = f"loop{len(loops)}_{side}"
            if name in names:
                raise ModelError(f"--loop {text!r}: the model already has a frame {name!r}; rename it")
            frames.append(Frame(name, frame.body, Transform(r=point).compose(frame.placement)))   # at the point
            names.add(name)
            pair.append(name)
        if ends[0][0].body == ends[1][0].body:
            raise ModelError(f"--loop {text!r}: both frames are on body {model.body_names[ends[0][0].body]!r} "
                             "(or both on the world), so nothing closes; join frames of two bodies")
        loops.append(Loop(text, pair[0], pair[1], kind))
    index = {f.name: k for k, f in enumerate(frames)}
    changed = dict(frames=tuple(frames), loops=tuple(loops), _frame_index=index)
    if model.has_mimic:
        changed["_full"] = dataclasses.replace(model.full, **changed)
    return dataclasses.replace(model, **changed)


def _parse(model, text):
    """(((frame, point) of each end), kind) of a spec."""
    if not isinstance(text, str) or not text:
        raise ModelError(f"--loop {text!r}: expected FRAME_A[@x,y,z]:FRAME_B[@x,y,z][:3d|:6d]")
    parts = text.split(":")
    kind = parts.pop() if len(parts) == 3 else "3d"
    if kind not in ("3d", "6d") or len(parts) != 2:
        why = f" ({kind!r} is not 3d or 6d)" if kind not in ("3d", "6d") else ""
        raise ModelError(f"--loop {text!r}: expected FRAME_A[@x,y,z]:FRAME_B[@x,y,z][:3d|:6d]{why}")
    ends = []
    for part in parts:
        name, _, point_text = part.partition("@")
        try:
            frame = model.frame(name)
        except ModelError:
            known = [f.name for f in model.frames]
            raise ModelError(f"--loop {text!r}: unknown frame {name!r}; "
                             f"{did_you_mean(name, known, 'rbdgen info lists the frames')}") from None
        point = parse_point(point_text) if point_text else (0.0, 0.0, 0.0)
        if point is None:
            raise ModelError(f"--loop {text!r}: the point {point_text!r} must be three finite numbers x,y,z")
        ends.append((frame, point))
    return ends, kind


_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")


def parse_point(text):
    """'x,y,z' (as --loop and --contact write a point or a normal) -> three finite floats, or
    None: plain decimal numbers only (no '1_0', 'nan' or 'inf')."""
    parts = text.split(",")
    if len(parts) != 3 or not all(_NUMBER.match(p.strip()) for p in parts):
        return None
    values = tuple(float(p) for p in parts)
    return values if all(math.isfinite(x) for x in values) else None
