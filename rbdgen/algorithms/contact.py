"""Points, frames, contacts and impacts (seed 000 §2.2, §2.3, §6; seed 001 §6.3).

Frames and contact points are chosen at call time, so this part runs on numbers only: it
combines per-body quantities that the generated code (or the reference) computes — body
placements, the world joint axes (Jacobian columns), body velocities and accelerations —
with NumPy. It imports nothing from rbdgen: the build copies this very file into every
generated package, so the reference and the generated module share one implementation.

`Kinematics` is what both sides hand over, at one state:
  R[b], p[b]        body b's rotation (body -> world) and origin;
  J_world           6 x nv, rows [linear; angular]: joint axes at the world origin;
  support[b]        boolean mask of the coordinates that move body b;
  motion[b]         body b's [w, v_O, w-dot, a_O] in body coordinates (no gravity);
  frames[name]      (body, R_bf, p_bf): the frame's placement on its body;
  velocity_map      None, or for a model with mimic joints the matrix P (v_full = P v): J_world
                    and support are then the tree's, and Jacobians are returned as J P.
"""

import numpy as np


class Kinematics:
    def __init__(self, frames, support, R, p, J_world=None, motion=None, velocity_map=None):
        self.frames, self.support, self.R, self.p = frames, support, R, p
        self.J_world, self.motion, self.velocity_map = J_world, motion, velocity_map

    def _mapped(self, J):
        return J if self.velocity_map is None else J @ self.velocity_map

    def frame(self, name):
        try:
            return self.frames[name]
        except KeyError:
            known = ", ".join(list(self.frames)[:8])
            raise ValueError(f"unknown frame {name!r}; known frames include {known}") from None

    def frame_placement(self, name):
        """(R, p) of the frame in the world."""
        body, R_bf, p_bf = self.frame(name)
        if body < 0:
            return R_bf.copy(), p_bf.copy()
        return self.R[body] @ R_bf, self.p[body] + self.R[body] @ p_bf

    def frame_jacobian(self, name, reference="local_world_aligned"):
        """6 x nv, rows [linear; angular]: "world" (at the world origin), "local" (frame
        origin, frame axes) or "local_world_aligned" (frame origin, world axes)."""
        if reference not in ("local", "world", "local_world_aligned"):
            raise ValueError(f"reference {reference!r} is unknown; use local, world or local_world_aligned")
        body = self.frame(name)[0]
        J = np.zeros_like(self.J_world)
        if body < 0:
            return self._mapped(J)
        mask = self.support[body]
        J[:, mask] = self.J_world[:, mask]
        if reference == "world":
            return self._mapped(J)
        R, p = self.frame_placement(name)
        J[:3] += np.cross(J[3:].T, p).T        # velocity of the point at p: v_O + w x p
        if reference == "local":
            J[:3], J[3:] = R.T @ J[:3], R.T @ J[3:]
        return self._mapped(J)

    def point_in_body(self, name, point):
        body, R_bf, p_bf = self.frame(name)
        return body, p_bf + R_bf @ _vector3(point, "point")

    def point_jacobian(self, name, point):
        """3 x nv: the world-frame velocity of a point fixed in the frame (given in frame
        coordinates) is point_jacobian @ v."""
        body, p_b = self.point_in_body(name, point)
        J = np.zeros((3, self.J_world.shape[1]))
        if body < 0:
            return self._mapped(J)
        p_w = self.p[body] + self.R[body] @ p_b
        mask = self.support[body]
        J[:, mask] = self.J_world[:3, mask] + np.cross(self.J_world[3:, mask].T, p_w).T
        return self._mapped(J)

    def point_velocity(self, name, point):
        """World velocity of the point: R (v_O + w x p) from the body's own velocity."""
        body, p_b = self.point_in_body(name, point)
        if body < 0:
            return np.zeros(3)
        w, v = self.motion[body][0:3], self.motion[body][3:6]
        return self.R[body] @ (v + np.cross(w, p_b))

    def point_acceleration(self, name, point):
        """World (classical) acceleration of the point: R (a_O + w' x p + w x (v_O + w x p))."""
        body, p_b = self.point_in_body(name, point)
        if body < 0:
            return np.zeros(3)
        w, v, dw, a = (self.motion[body][k:k + 3] for k in (0, 3, 6, 9))
        return self.R[body] @ (a + np.cross(dw, p_b) + np.cross(w, v + np.cross(w, p_b)))


def _vector3(x, what):
    x = real_array(x, what)
    if x.shape != (3,):
        raise ValueError(f"{what}: expected (3,), got {x.shape}")
    return x


def real_array(x, what):
    """x as a float64 array; TypeError for complex, boolean, text or other non-real values,
    which numpy would convert with at most a warning (complex: dropping the imaginary part)."""
    a = np.asarray(x)
    if a.dtype.kind not in "fiu" and not (a.dtype.kind == "O" and all(
            isinstance(e, (int, float)) and not isinstance(e, bool) for e in a.flat)):
        raise TypeError(f"{what}: expected real numbers, got {a.dtype} values")
    return a.astype(float, copy=False)


def parse_contacts(contacts):
    """[(frame, point, normal or None)] -> list of (frame, point (3,), unit normal or None)."""
    parsed = []
    for k, contact in enumerate(contacts):
        if len(contact) == 2:
            frame, point, normal = contact[0], contact[1], None
        elif len(contact) == 3:
            frame, point, normal = contact
        else:
            raise ValueError(f"contact {k}: expected (frame, point) or (frame, point, normal), got {contact!r}")
        point = _vector3(point, f"contact {k} point")
        if normal is not None:
            normal = _vector3(normal, f"contact {k} normal")
            length = np.linalg.norm(normal)
            if not length > 1e-12:
                raise ValueError(f"contact {k}: normal {normal} has zero length; give a non-zero normal")
            normal = normal / length
        parsed.append((frame, point, normal))
    if not parsed:
        raise ValueError("contacts: expected at least one (frame, point[, normal])")
    return parsed


def constraint_jacobian(kin, contacts):
    """G: one row per constrained direction (3 for a point, 1 along a world normal)."""
    rows = []
    for frame, point, normal in contacts:
        J = kin.point_jacobian(frame, point)
        rows.append(J if normal is None else normal[None, :] @ J)
    return np.vstack(rows)


def constraint_bias(kin_at_rest, contacts):
    """gamma = -G-dot v: minus the points' accelerations at zero joint acceleration."""
    rows = []
    for frame, point, normal in contacts:
        acc = kin_at_rest.point_acceleration(frame, point)
        rows.append(-acc if normal is None else np.array([-normal @ acc]))
    return np.concatenate(rows)


def _number(value, what, high):
    """value as a float in [0, high]: TypeError for what is not a real number, ValueError for
    NaN, infinity and values outside."""
    x = np.asarray(value)
    if x.shape != () or x.dtype.kind not in "fiu":
        shape = f" of shape {x.shape}" if x.shape else ""
        raise TypeError(f"{what}: expected a real number, got {type(value).__name__}{shape}")
    x = float(x)
    if not (np.isfinite(x) and 0.0 <= x <= high):
        allowed = "a finite number >= 0" if high == np.inf else f"a number from 0 to {high:g}"
        raise ValueError(f"{what}: expected {allowed}, got {x!r}")
    return x


def check_damping(damping):
    """damping >= 0 and finite (0: no damping; redundant contacts then raise ValueError)."""
    return _number(damping, "damping", np.inf)


def check_restitution(restitution):
    """The coefficient of restitution, from 0 (plastic impact) to 1 (elastic)."""
    return _number(restitution, "restitution", 1.0)


def _contact_space_inverse(G, Minv, damping):
    """(G M^-1 G^T + damping 1)^-1, refusing redundant constraints unless damped."""
    Lambda_inv = G @ Minv @ G.T
    m = G.shape[0]
    if damping > 0:
        return np.linalg.inv(Lambda_inv + damping * np.eye(m))
    rank = np.linalg.matrix_rank(G, tol=1e-9 * max(1.0, np.abs(G).max()))
    if rank < m:
        raise ValueError(f"contacts are redundant: the constraint Jacobian has rank {rank} < {m} rows; "
                         "remove a constraint or pass damping > 0 for a damped least-squares solve")
    return np.linalg.inv(Lambda_inv)


def contact_dynamics(Minv, bias, tau, G, gamma, damping=0.0):
    """Seed 000 eq. (7): M a = tau - bias + G^T lambda with G a = gamma. Returns (a, lambda)."""
    damping = check_damping(damping)
    a_free = Minv @ (tau - bias)
    lam = _contact_space_inverse(G, Minv, damping) @ (gamma - G @ a_free)
    return a_free + Minv @ (G.T @ lam), lam


def impulse_dynamics(Minv, v_minus, G, restitution=0.0, damping=0.0):
    """Seed 000 eq. (10): v+ = v- + M^-1 G^T Lambda with G v+ = -e G v-. Returns (v+, Lambda)."""
    restitution, damping = check_restitution(restitution), check_damping(damping)
    Lambda = -(1.0 + restitution) * (_contact_space_inverse(G, Minv, damping) @ (G @ v_minus))
    return v_minus + Minv @ (G.T @ Lambda), Lambda
