"""Whether model parameters describe a physical robot: the same file in every generated module
(a copy, _physical.py, which imports nothing from rbdgen), so rbdgen and a module's
check_params refuse the same values with the same words.

A rigid body's ten parameters (m, m c, the rotational inertia about the frame's origin:
xx xy yy xz yz zz, Pinocchio's order) are physical when m >= 0 and its rotational inertia
about the centre of mass has eigenvalues that are >= 0 and satisfy the triangle inequality
(each at most the sum of the other two: a density of mass >= 0 gives such an inertia); a
massless body must have m c = 0 and no rotational inertia. Armature and damping are >= 0.
Every value must be finite.
"""

import numpy as np

# Relative tolerance of the tests above: values written to a few digits (a URDF's) pass.
TOLERANCE = 1e-9


def problem(values, bodies, nonnegative, names, strict=True):
    """None when `values` ((np,) or (B, np)) are physical, else one line naming the state (of a
    batch), the parameter and what is wrong. bodies: [(label, [ten indices])]; nonnegative:
    indices that must be >= 0 (armature, damping); names: the parameters' names. strict=False
    leaves out the triangle inequality: what M's positive definiteness needs (spatial inertias
    positive semidefinite), which a URDF's rounded inertias may break by a little."""
    p = np.atleast_2d(np.asarray(values, dtype=float))

    def say(state, text):
        where = f"state {state} of the batch: " if np.ndim(values) == 2 else ""
        return where + text + "; robot.check_params tells which values are physical"
    bad = ~np.isfinite(p)
    if bad.any():
        state, k = np.argwhere(bad)[0]
        return say(state, f"parameter {names[k]} is {p[state, k]}, not a finite number")
    for k in nonnegative:
        if (p[:, k] < 0).any():
            state = int(np.argmax(p[:, k] < 0))
            return say(state, f"parameter {names[k]} = {p[state, k]:g} must be >= 0")
    for label, index in bodies:
        text, state = _body_problem(p[:, index], [names[k] for k in index], strict)
        if text:
            return say(state, f"{label}: {text}")
    return None


def _body_problem(p, names, strict):
    """(what is wrong, at which state) or (None, None) for the bodies (B, 10)."""
    m, h = p[:, 0], p[:, 1:4]
    xx, xy, yy, xz, yz, zz = p[:, 4:].T
    I = np.stack([np.stack([xx, xy, xz], -1), np.stack([xy, yy, yz], -1), np.stack([xz, yz, zz], -1)], -2)
    scale = np.maximum(np.abs(p).max(axis=1), 1e-300)
    if (m < 0).any():
        state = int(np.argmax(m < 0))
        return f"mass {names[0]} = {m[state]:g} is negative", state
    massless = m <= TOLERANCE * scale
    stray = massless & (np.abs(h).max(axis=1) > TOLERANCE * scale)
    if stray.any():
        return f"mass {names[0]} is 0 but m c ({', '.join(names[1:4])}) is not", int(np.argmax(stray))
    c = h / np.where(massless, 1.0, m)[:, None]
    shift = np.einsum("b,bi,bi->b", m, c, c)[:, None, None] * np.eye(3) - np.einsum("b,bi,bj->bij", m, c, c)
    eig = np.linalg.eigvalsh(I - np.where(massless[:, None, None], 0.0, shift))
    # relative to the inertias subtracted (a point mass: I about the centre is 0 up to their rounding)
    tol = TOLERANCE * np.maximum(np.maximum(np.abs(I).max(axis=(1, 2)), np.abs(shift).max(axis=(1, 2))), 1e-300)
    negative = eig[:, 0] < -tol
    if negative.any():
        state = int(np.argmax(negative))
        return (f"the rotational inertia about the centre of mass ({', '.join(names[4:])}, less m c) is not "
                f"positive semidefinite (eigenvalue {eig[state, 0]:.3g})"), state
    broken = eig[:, 0] + eig[:, 1] < eig[:, 2] - tol
    if strict and broken.any():
        state = int(np.argmax(broken))
        return (f"the rotational inertia about the centre of mass breaks the triangle inequality (principal "
                f"moments {eig[state, 0]:.3g} + {eig[state, 1]:.3g} < {eig[state, 2]:.3g})"), state
    return None, None
