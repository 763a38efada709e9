"""Forward kinematics (RBDL paper §4, seed 000): joint transforms, body placements, velocities.

Every algorithm starts here: `joint_kinematics` runs jcalc for each joint and composes the
transform from the parent body, X_up[i] = X_J(q_i) X_T[i].
"""

from dataclasses import dataclass

from ..spatial import Motion, Transform, combine, neg3


@dataclass
class JointKinematics:
    X_up: Transform   # parent body -> body i
    S: list           # motion subspace, one Motion per velocity coordinate
    S_dot: list       # its rate of change in body coordinates (None: S is constant)
    c_J: Motion       # joint bias S_dot v


def joint_slices(model, x, which):
    """Split a q-sized (which='q') or v-sized ('v') sequence into per-joint lists."""
    if which == "q":
        return [x[j.idx_q:j.idx_q + j.nq] for j in model.joints]
    return [x[j.idx_v:j.idx_v + j.nv] for j in model.joints]


def joint_kinematics(model, ops, q, v=None):
    """jcalc for every joint; with v, the joint bias c_J (else v is taken as zero)."""
    qs = joint_slices(model, q, "q")
    vs = joint_slices(model, v, "v") if v is not None else [None] * len(model.joints)
    return [joint_kinematics_of(model, ops, i, qs[i], vs[i]) for i in range(len(model.joints))]


def joint_kinematics_of(model, ops, i, q_i, v_i=None):
    """jcalc for joint i from its own coordinates (v_i None: zero velocity)."""
    joint = model.joints[i]
    v_i = v_i if v_i is not None else [0] * joint.nv
    X_J, S, S_dot = joint.model.calc(ops, q_i, v_i)
    X_up = ops.let("X", i, X_J.compose(model.X_T[i]))
    if S_dot is not None:
        S_dot = ops.let("Sd", i, S_dot)
    c_J = ops.let("cJ", i, combine(S_dot, v_i)) if S_dot is not None else Motion()
    return JointKinematics(X_up, ops.let("S", i, S), S_dot, c_J)


def body_placements(model, ops, kin):
    """X_0i: world -> body i, for every body."""
    X_0 = []
    for i, k in enumerate(kin):
        p = model.parent[i]
        X_0.append(ops.let("X0_", i, k.X_up if p < 0 else k.X_up.compose(X_0[p])))
    return X_0


def root_frame_placements(model, ops, kin):
    """X_Fi: from the root body's frame at this instant (F) to body i, for a tree whose only
    root is body 0; None for a tree with several roots.

    An algorithm whose results are dot products of motions and forces (or momenta summed
    over bodies) holds in any frame fixed at this instant, not only the world's. In the
    root's own frame its transform is the identity, so a free-flyer's quaternion rotation
    (or a first joint's) does not enter every other body's placement."""
    if [i for i in range(model.nbodies) if model.parent[i] < 0] != [0]:
        return None
    X = [Transform()]
    for i in range(1, model.nbodies):
        p = model.parent[i]
        X.append(ops.let("XF", i, kin[i].X_up if p == 0 else kin[i].X_up.compose(X[p])))
    return X


def frame_placement_transform(model, ops, X_0, frame):
    """World -> frame, for a frame fixed on a body (or on the world)."""
    if frame.body < 0:
        return frame.placement
    return ops.let("X0_f", 0, frame.placement.compose(X_0[frame.body]))


def placement_as_rotation_translation(X):
    """(R, p) as Pinocchio's SE3: R rotates frame coordinates into world, p is the origin."""
    return [[X.E[j][i] for j in range(3)] for i in range(3)], list(X.r)


def body_velocities(model, ops, kin, v):
    """Spatial velocity of every body in its own frame: v_i = X_up v_parent + S_i v_i."""
    vs = joint_slices(model, v, "v")
    velocities = []
    for i, k in enumerate(kin):
        p = model.parent[i]
        velocities.append(ops.let("v", i, velocity_step(k, None if p < 0 else velocities[p], vs[i])))
    return velocities


def body_accelerations(model, ops, kin, velocities, v, a, *, a_root):
    """a_i = X_up a_parent + S_i a_i + c_J + v_i x (S_i v_i) (RBDL paper Alg. 1's forward pass,
    seed 000)."""
    vs, as_ = joint_slices(model, v, "v"), joint_slices(model, a, "v")
    accelerations = []
    for i, k in enumerate(kin):
        p = model.parent[i]
        a_parent = a_root if p < 0 else accelerations[p]
        accelerations.append(ops.let("a", i, acceleration_step(k, a_parent, velocities[i], vs[i], as_[i])))
    return accelerations


def velocity_step(k, v_parent, v_i):
    """A body's velocity from its parent's (None at the root) and its joint's: X_up v_parent + S v_i."""
    vJ = combine(k.S, v_i)
    return vJ if v_parent is None else k.X_up.apply_motion(v_parent) + vJ


def acceleration_step(k, a_parent, velocity, v_i, a_i):
    """A body's acceleration: X_up a_parent + S a_i + c_J + v x (S v_i), with v its velocity."""
    return k.X_up.apply_motion(a_parent) + combine(k.S, a_i) + k.c_J + velocity.cross_motion(combine(k.S, v_i))


def tree_state(model, q, v, a):
    """A model's tree (mimic joints expanded) and q, v, a given in the model's own coordinates,
    expanded to the tree's."""
    from ..model import mimic
    return model.full, mimic.expand_q(model, q), mimic.expand_v(model, v), mimic.expand_v(model, a)


def tree_motion(model, ops, q, v, a):
    """For a model in its own coordinates (mimic joints expanded): its tree, the tree's joint
    kinematics, and every body's velocity and acceleration (gravity folded in, as rnea's)."""
    tree, q_full, v_full, a_full = tree_state(model, q, v, a)
    kin = joint_kinematics(tree, ops, q_full, v_full)
    velocities = body_velocities(tree, ops, kin, v_full)
    return tree, kin, velocities, body_accelerations(tree, ops, kin, velocities, v_full, a_full,
                                                     a_root=gravity_acceleration(tree))


def body_motion(model, ops, q, v, a):
    """Every body's velocity and acceleration (no gravity) in body coordinates, as rows
    [w, v_O, w-dot, a_O]: what point velocities and accelerations are made of."""
    kin = joint_kinematics(model, ops, q, v)
    velocities = body_velocities(model, ops, kin, v)
    accelerations = body_accelerations(model, ops, kin, velocities, v, a, a_root=Motion())
    return [list(vel.entries() + acc.entries()) for vel, acc in zip(velocities, accelerations)]


def gravity_acceleration(model):
    """The base acceleration -g that folds gravity into the recursion (Featherstone's trick)."""
    return Motion((0, 0, 0), neg3(model.gravity))
