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
# Inertias beyond this are too large to test: the determinant of the inertia about the centre of
# mass, and its tolerance, would overflow double precision.
LARGEST = 1e100


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
    """(what is wrong, at which row) or (None, None) for the bodies (rows of ten); names: the ten
    parameters' names. Column by column, in closed form: eigenvalues of thousands of states one
    by one cost more than the call they guard."""
    m, hx, hy, hz, xx, xy, yy, xz, yz, zz = p.T
    scale = np.maximum(np.abs(p).max(axis=1), 1e-300)
    if (m < 0).any():
        state = int(np.argmax(m < 0))
        return f"mass {names[0]} = {m[state]:g} is negative", state
    # massless against m and the rotational inertia only: a huge m c is a centre of mass far
    # away (whose inertia the test below refuses), not a sign that m is a rounding of 0
    massless = m <= TOLERANCE * np.maximum(np.abs(p[:, [0, 4, 5, 6, 7, 8, 9]]).max(axis=1), 1e-300)
    stray = massless & (np.maximum(np.maximum(abs(hx), abs(hy)), abs(hz)) > TOLERANCE * scale)
    if stray.any():
        return f"mass {names[0]} is 0 but m c ({', '.join(names[1:4])}) is not", int(np.argmax(stray))
    # the rotational inertia about the centre of mass: Ic = I - (h.h 1 - h h^T) / m
    w = np.where(massless, 0.0, 1.0 / np.where(massless, 1.0, m))
    with np.errstate(over="ignore", invalid="ignore"):   # finite values may overflow: tested below
        Ic = (xx - (hy * hy + hz * hz) * w, yy - (hx * hx + hz * hz) * w, zz - (hx * hx + hy * hy) * w,
              xy + hx * hy * w, xz + hx * hz * w, yz + hy * hz * w)
        # relative to the inertias subtracted (a point mass: Ic is 0 up to their rounding)
        size = np.maximum(scale, (hx * hx + hy * hy + hz * hz) * w)
        # (as rbdgen_physical.c tests it; the minors below are products of three entries)
        overflow = ~np.isfinite(sum(Ic) + size) | (size > LARGEST)
    if overflow.any():
        return (f"the values {names[0]} .. {names[-1]} are too large to test: the inertia about the centre "
                "of mass overflows double precision (give them in kg, m)"), int(np.argmax(overflow))
    negative = ~_semidefinite(Ic, size)
    if negative.any():
        state = int(np.argmax(negative))
        return (f"the rotational inertia about the centre of mass ({', '.join(names[4:])}, less m c) is not "
                f"positive semidefinite (eigenvalue {_moments(Ic, state)[0]:.3g})"), state
    # principal moments within the triangle inequality: trace / 2 - Ic positive semidefinite
    a, b, c, d, e, f = Ic
    half = (a + b + c) / 2
    broken = ~_semidefinite((half - a, half - b, half - c, -d, -e, -f), size)
    if strict and broken.any():
        state = int(np.argmax(broken))
        moments = _moments(Ic, state)
        return (f"the rotational inertia about the centre of mass breaks the triangle inequality (principal "
                f"moments {moments[0]:.3g} + {moments[1]:.3g} < {moments[2]:.3g})"), state
    return None, None


def _moments(Ic, state):
    """The principal moments (ascending) of the inertia Ic (xx, yy, zz, xy, xz, yz columns) at a row."""
    a, b, c, d, e, f = (x[state] for x in Ic)
    return np.linalg.eigvalsh(np.array([[a, d, e], [d, b, f], [e, f, c]]))


def _semidefinite(entries, size):
    """Per row, whether the symmetric matrices [[a, d, e], [d, b, f], [e, f, c]] of `entries`
    (a, b, c, d, e, f) are positive semidefinite within TOLERANCE * size: every principal
    minor >= 0."""
    a, b, c, d, e, f = entries
    tol = TOLERANCE * size
    with np.errstate(over="ignore", invalid="ignore"):   # minors of huge finite values: -inf fails as it should
        diagonal = np.minimum(np.minimum(a, b), c) >= -tol
        pairs = np.minimum(np.minimum(a * b - d * d, a * c - e * e), b * c - f * f) >= -tol * size
        det = a * (b * c - f * f) - d * (d * c - f * e) + e * (d * f - b * e)
        return diagonal & pairs & (det >= -tol * size * size)
