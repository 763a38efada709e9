"""Loop closures stated by the user, for any robot file (`--loop`, `loops=`): two frames, each
optionally moved to a point in its own coordinates, held together at their origins ("3d", the
default) or as frames ("6d"):

    FRAME_A[@x,y,z]:FRAME_B[@x,y,z][:3d|:6d]

Each loop adds two frames, loop<k>_a and loop<k>_b (k from 0 in the order given, after the
file's own loops), and a Loop named by its text (rbdgen.algorithms.loops).
"""

import dataclasses
import math

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
            placement = Transform(frame.placement.E, tuple(r + sum(e * p for e, p in zip(column, point))
                                                          for r, column in zip(frame.placement.r,
                                                                               zip(*frame.placement.E))))
            frames.append(Frame(name, frame.body, placement))
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
        point = (0.0, 0.0, 0.0)
        if point_text:
            try:
                point = tuple(float(x) for x in point_text.split(","))
            except ValueError:
                point = ()
            if len(point) != 3 or not all(math.isfinite(x) for x in point):
                raise ModelError(f"--loop {text!r}: the point {point_text!r} must be three finite numbers x,y,z")
        ends.append((frame, point))
    return ends, kind
