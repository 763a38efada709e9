"""A planar four-bar linkage against its closed-form motion: one degree of freedom, the crank
angle theta, with q-ddot from the Lagrangian on theta. The same mechanism twice: a URDF whose
loop is stated with --loop (loops=), and an SDFormat file whose ball joint closes it.

The mechanism lies in the x-z plane (joint axes along y, so gravity acts in its plane): crank
AB (length a) about A at the origin, coupler BC (b), rocker DC (c) about D = (d, 0, 0). Its links
are uniform rods. A rotation by alpha about y turns the x axis into u(alpha) = (cos alpha,
-sin alpha) in (x, z). Closed-form position: C is where the circles about B (radius b) and D
(radius c) meet, on the branch with C above the ground line; the tree's coordinates are
(theta, beta - theta, gamma) with beta and gamma the coupler's and the rocker's absolute angles.

Lagrangian on theta: T = m(theta) theta-dot^2 / 2, m = sum of m_i |dp_i/dtheta|^2 + I_i
(dalpha_i/dtheta)^2 over the links' centres p_i and angles alpha_i; V = g sum m_i z_i; the tree's
torques tau do the work tau . dq/dtheta. So m theta-ddot + m' theta-dot^2 / 2 + V' = tau .
dq/dtheta, the derivatives in theta by a five-point stencil of the closed-form positions.

The loop in the plane is a 3d loop whose row along y is redundant (the plane's normal is held
twice), so the solve is damped (1e-12): the damped multiplier of that row meets a zero row of
G, and q-ddot keeps its digits."""

import numpy as np
import pytest

import rbdgen
from rbdgen import reference
from rbdgen.model.sdf import model_from_sdf

A_, B_, C_, D_ = 0.1, 0.35, 0.3, 0.3          # crank, coupler, rocker, ground (Grashof: the crank turns)
MASSES = (0.4, 0.9, 0.7)
G = 9.81
THETA0 = 0.7                                   # the SDFormat file's pose
STENCIL = 1e-3                                 # five-point derivatives: error ~ h^4
TOL = 1e-9                                     # relative, q-ddot against the Lagrangian's
DAMPING = 1e-12


def u(alpha):
    return np.array([np.cos(alpha), -np.sin(alpha)])


def pose(theta):
    """(tree coordinates q, link centres (3 x 2, in x-z), link angles (3)) at crank angle theta."""
    B, D = A_ * u(theta), np.array([D_, 0.0])
    distance = np.linalg.norm(D - B)
    along = (B_ ** 2 - C_ ** 2 + distance ** 2) / (2 * distance)
    height = np.sqrt(B_ ** 2 - along ** 2)
    axis = (D - B) / distance
    C = B + along * axis + height * np.array([-axis[1], axis[0]])   # left of B->D: above the ground line
    beta = np.arctan2(-(C - B)[1], (C - B)[0])
    gamma = np.arctan2(-(C - D)[1], (C - D)[0])
    centres = np.array([A_ / 2 * u(theta), B + B_ / 2 * u(beta), D + C_ / 2 * u(gamma)])
    return np.array([theta, beta - theta, gamma]), centres, np.array([theta, beta, gamma])


def d_dtheta(f, theta):
    h = STENCIL
    return (f(theta - 2 * h) - 8 * f(theta - h) + 8 * f(theta + h) - f(theta + 2 * h)) / (12 * h)


def theta_ddot(theta, theta_dot, tau):
    """The crank's acceleration from the Lagrangian on theta."""
    inertias = [m * L ** 2 / 12 for m, L in zip(MASSES, (A_, B_, C_))]

    def mass(t):
        dp = d_dtheta(lambda x: pose(x)[1], t)
        dalpha = d_dtheta(lambda x: pose(x)[2], t)
        return sum(m * dp[i] @ dp[i] + I * dalpha[i] ** 2 for i, (m, I) in enumerate(zip(MASSES, inertias)))

    potential = lambda t: G * sum(m * pose(t)[1][i][1] for i, m in enumerate(MASSES))
    dq = d_dtheta(lambda x: pose(x)[0], theta)
    return (tau @ dq - d_dtheta(mass, theta) * theta_dot ** 2 / 2 - d_dtheta(potential, theta)) / mass(theta)


def rod_inertial(length, mass):
    moment = mass * length ** 2 / 12
    return (f'<inertial><origin xyz="{length / 2} 0 0"/><mass value="{mass}"/><inertia ixx="1e-6" ixy="0" '
            f'ixz="0" iyy="{moment}" iyz="0" izz="{moment}"/></inertial>')


def urdf():
    link = lambda name, length, mass: f'<link name="{name}">{rod_inertial(length, mass)}</link>'
    joint = lambda name, parent, child, x: (f'<joint name="{name}" type="continuous"><parent link="{parent}"/>'
                                            f'<child link="{child}"/><origin xyz="{x} 0 0"/><axis xyz="0 1 0"/>'
                                            '</joint>')
    return (f'<robot name="four_bar"><link name="ground"/>{link("crank", A_, MASSES[0])}'
            f'{link("coupler", B_, MASSES[1])}{link("rocker", C_, MASSES[2])}'
            f'{joint("crank_joint", "ground", "crank", 0)}{joint("coupler_joint", "crank", "coupler", A_)}'
            f'{joint("rocker_joint", "ground", "rocker", D_)}</robot>')


def sdf():
    """The mechanism assembled at theta = THETA0, each link's frame at its joint, turned by its
    absolute angle; the ball joint `close` at C, in the rocker's frame."""
    _, _, (theta, beta, gamma) = pose(THETA0)
    B = A_ * u(theta)
    inertial = lambda length, mass: (f'<inertial><pose>{length / 2} 0 0 0 0 0</pose><mass>{mass}</mass><inertia>'
                                     f'<ixx>1e-6</ixx><iyy>{mass * length ** 2 / 12}</iyy>'
                                     f'<izz>{mass * length ** 2 / 12}</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz>'
                                     '</inertia></inertial>')
    link = lambda name, x, z, angle, length, mass: (f'<link name="{name}"><pose>{x} 0 {z} 0 {angle} 0</pose>'
                                                    f'{inertial(length, mass)}</link>')
    joint = lambda name, parent, child, kind="revolute": (f'<joint name="{name}" type="{kind}"><parent>{parent}'
                                                          f'</parent><child>{child}</child><axis><xyz>0 1 0</xyz>'
                                                          '</axis></joint>')
    return f"""<sdf version="1.9"><model name="four_bar">
  <link name="ground"/><joint name="anchor" type="fixed"><parent>world</parent><child>ground</child></joint>
  {link("crank", 0, 0, theta, A_, MASSES[0])}{joint("crank_joint", "ground", "crank")}
  {link("coupler", B[0], B[1], beta, B_, MASSES[1])}{joint("coupler_joint", "crank", "coupler")}
  {link("rocker", D_, 0, gamma, C_, MASSES[2])}{joint("rocker_joint", "ground", "rocker")}
  <joint name="close" type="ball"><pose relative_to="rocker">{C_} 0 0 0 0 0</pose><parent>coupler</parent>
    <child>rocker</child></joint>
</model></sdf>"""


@pytest.fixture(scope="module", params=["urdf --loop", "sdf"])
def four_bar(request, tmp_path_factory):
    """(model, offset): the tree's q is the closed form's minus offset (the SDFormat file's pose
    is its q = 0)."""
    if request.param == "sdf":
        return model_from_sdf(sdf()), pose(THETA0)[0]
    path = tmp_path_factory.mktemp("four_bar") / "four_bar.urdf"
    path.write_text(urdf())
    return rbdgen.load_model(str(path), loops=[f"coupler@{B_},0,0:rocker@{C_},0,0"]), np.zeros(3)


@pytest.mark.parametrize("theta", [0.3, 1.9, -2.4])
def test_a_planar_four_bar_moves_as_its_lagrangian_says(four_bar, theta):
    model, offset = four_bar
    rng = np.random.default_rng(int(1000 * abs(theta)))
    q = pose(theta)[0] - offset
    assert np.abs(reference.loop_residual(model, q)).max() < 1e-12
    theta_dot = rng.normal()
    v = d_dtheta(lambda x: pose(x)[0], theta) * theta_dot
    tau = rng.normal(size=3)
    qdd, _, pivots = reference.constrained_dynamics(model, q, v, tau, damping=DAMPING)
    want = theta_ddot(theta, theta_dot, tau)
    assert abs(qdd[0] - want) <= TOL * max(1.0, abs(want))
    assert np.sort(pivots)[0] < 1e-10 < np.sort(pivots)[1]   # one row redundant: the plane's normal
