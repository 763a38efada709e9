"""The derivative with respect to q of the generalized force G^T lambda of constraint forces
held fixed (the closed chain's and the declared contacts' multipliers), in world coordinates,
for the constrained dynamics' derivatives (rbdgen.algorithms.loops).

Each force is a spatial force f = [p x F + M; F] at the world origin, F and M its force and
moment, p the point it acts at; its generalized force on velocity coordinate k is s_k . f for
the forces below k's joint, s_k = (w_k, v_k) that coordinate's world axis. A change of q_j
moves the bodies below j's joint rigidly about s_j: a force fixed in its body (a contact's,
given in its frame's axes) turns with them, f' = s_j x* f; a force fixed in the world (a
loop's, in world axes) only has its point moved, which is that rigid change less the turn of
its direction, rot_j(f) = [p x (w_j x F) + w_j x M; w_j x F]. Where j's joint is k's or one of
its ancestors, s_k turns too, and the rigid parts cancel (s_j x s_k . f + s_k . s_j x* f = 0),
so

    d (s_k . f) / dq_j = -s_k . rot_j(f)                  (j at or above k)
    d (s_k . f) / dq_j = s_k . (s_j x* f) - s_k . rot_j(f)   (j strictly below k),

each summed over the forces below the lower of the two joints. Summed, rot_j needs of those
forces only sum F, sum M and P = sum p F^T (sum p x (w x F) = w tr(P) - P^T w), so every pair
of coordinates costs a few dot products, where forward mode would differentiate every force's
path to the root (docs/performance.md, closed chains).
"""

from ..spatial import cross3, dot3, sum_terms


class Applied:
    """The forces acting below one body, summed: the spatial force (moment about the world
    origin, force), and of the world-fixed ones sum F, sum M and P = sum p F^T."""

    def __init__(self):
        self.moment, self.force = [0, 0, 0], [0, 0, 0]
        self.fixed_force, self.fixed_moment = [0, 0, 0], [0, 0, 0]
        self.P = [[0, 0, 0] for _ in range(3)]
        self.empty = True

    def add(self, point, force, moment, world_fixed):
        about_origin = cross3(point, force)
        self.moment = [a + b + c for a, b, c in zip(self.moment, about_origin, moment)]
        self.force = [a + b for a, b in zip(self.force, force)]
        if world_fixed:
            self.fixed_force = [a + b for a, b in zip(self.fixed_force, force)]
            self.fixed_moment = [a + b for a, b in zip(self.fixed_moment, moment)]
            self.P = [[self.P[r][c] + point[r] * force[c] for c in range(3)] for r in range(3)]
        self.empty = False

    def merge(self, other):
        if other.empty:
            return
        self.moment = [a + b for a, b in zip(self.moment, other.moment)]
        self.force = [a + b for a, b in zip(self.force, other.force)]
        self.fixed_force = [a + b for a, b in zip(self.fixed_force, other.fixed_force)]
        self.fixed_moment = [a + b for a, b in zip(self.fixed_moment, other.fixed_moment)]
        self.P = [[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(self.P, other.P)]
        self.empty = False

    def turned(self, w):
        """sum over the world-fixed forces of rot_w(f): [w tr(P) - P^T w + w x sum M; w x sum F]."""
        trace = sum_terms(self.P[i][i] for i in range(3))
        PTw = [sum_terms(self.P[r][c] * w[r] for r in range(3)) for c in range(3)]
        spin = cross3(w, self.fixed_moment)
        return [w[i] * trace - PTw[i] + spin[i] for i in range(3)], cross3(w, self.fixed_force)

    def moved(self, w, v):
        """s x* f of the sum, s = (w, v): [w x n + v x F; w x F]."""
        return [a + b for a, b in zip(cross3(w, self.moment), cross3(v, self.force))], cross3(w, self.force)


def force_derivatives(model, ops, axes, applied):
    """d (G^T lambda) / dq (nv x nv, q in the tangent space) for the tree `model` (no mimic
    joints), `axes` its world joint axes (6 x nv, rows [linear; angular]: jacobians.
    joint_jacobians) and `applied`, one Applied per body holding the forces on that body."""
    parent = model.parent
    below = [Applied() for _ in parent]
    for i in reversed(range(len(parent))):
        below[i].merge(applied[i])
        if parent[i] >= 0:
            below[parent[i]].merge(below[i])
    body = [i for i, joint in enumerate(model.joints) for _ in range(joint.nv)]
    ancestors = []
    for i in range(len(parent)):
        chain, p = {i}, parent[i]
        while p >= 0:
            chain.add(p)
            p = parent[p]
        ancestors.append(chain)
    w = [[axes[3 + r][k] for r in range(3)] for k in range(model.nv)]
    lin = [[axes[r][k] for r in range(3)] for k in range(model.nv)]
    pair = lambda k, x: dot3(w[k], x[0]) + dot3(lin[k], x[1])     # s_k . f
    D = [[0] * model.nv for _ in range(model.nv)]
    for k in range(model.nv):
        for j in range(model.nv):
            bk, bj = body[k], body[j]
            if bj in ancestors[bk]:
                lower = below[bk]
                if not lower.empty:
                    D[k][j] = -pair(k, lower.turned(w[j]))
            elif bk in ancestors[bj]:
                lower = below[bj]
                if not lower.empty:
                    D[k][j] = pair(k, lower.moved(w[j], lin[j])) - pair(k, lower.turned(w[j]))
    return D
