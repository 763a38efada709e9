// Pinocchio's C++ constraint dynamics of a closed chain, timed as pin_bench times Pinocchio (64
// random states, 7 repetitions, median ns per call): constraintDynamics, then constraintDynamics
// followed by computeConstraintDynamicsDerivatives, with exact ProximalSettings (mu = 0); and the
// loop-constrained ABA (lcaba, proximal: mu = 1e-9, up to 10 iterations to 1e-12), with the
// largest difference of its q-ddot from constraintDynamics' over the states (its digits).
// The model comes as text, written by benchmarks/bench_loops.py from rbdgen's Pinocchio bridge
// (Pinocchio's PyPI wheel reads no SDFormat):
//   njoints, then per joint: parent kind(R|P|S|F) [axis x y z] placement(R row-major, t) mass c(3) I(9)
//   nconstraints, then per constraint: kind(3|6) joint1 placement1 joint2 placement2
// usage: pin_loops MODEL.txt calls kp kd     (the constraints in LOCAL_WORLD_ALIGNED)
// Built by build.sh beside pin_bench; benchmarks/bench_loops.py runs it.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // the constraint API is marked unstable
#include <pinocchio/multibody.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/algorithm/constrained-dynamics-derivatives.hpp>
#include <pinocchio/algorithm/loop-constrained-aba.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>
#include "timing.hpp"
using namespace pinocchio;

static SE3 read_placement(std::istream &in)
{
  Eigen::Matrix3d R;
  Eigen::Vector3d p;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) in >> R(i, k);
  in >> p(0) >> p(1) >> p(2);
  return SE3(R, p);
}

int main(int argc, char **argv)
{
  if (argc < 5) {
    fprintf(stderr, "usage: pin_loops MODEL.txt calls kp kd\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) { fprintf(stderr, "pin_loops: cannot read %s\n", argv[1]); return 2; }
  Model m;
  int joints = 0;
  in >> joints;
  for (int j = 1; j <= joints; ++j) {
    int parent;
    std::string kind;
    Eigen::Vector3d axis = Eigen::Vector3d::UnitZ(), c;
    in >> parent >> kind;
    if (kind == "R" || kind == "P") in >> axis(0) >> axis(1) >> axis(2);
    const SE3 placement = read_placement(in);
    double mass;
    Eigen::Matrix3d I;
    in >> mass >> c(0) >> c(1) >> c(2);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) in >> I(i, k);
    const std::string name = "joint" + std::to_string(j);
    JointIndex id;
    if (kind == "R") id = m.addJoint(parent, JointModelRevoluteUnaligned(axis), placement, name);
    else if (kind == "P") id = m.addJoint(parent, JointModelPrismaticUnaligned(axis), placement, name);
    else if (kind == "S") id = m.addJoint(parent, JointModelSpherical(), placement, name);
    else if (kind == "F") id = m.addJoint(parent, JointModelFreeFlyer(), placement, name);
    else { fprintf(stderr, "pin_loops: joint kind %s is unknown\n", kind.c_str()); return 2; }
    m.appendBodyToJoint(id, Inertia(mass, c, I), SE3::Identity());
  }
  const double kp = atof(argv[3]), kd = atof(argv[4]);
  PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(RigidConstraintModel) constraints;
  int count = 0;
  in >> count;
  for (int k = 0; k < count; ++k) {
    int kind, j1, j2;
    in >> kind >> j1;
    const SE3 p1 = read_placement(in);
    in >> j2;
    const SE3 p2 = read_placement(in);
    constraints.emplace_back(kind == 6 ? CONTACT_6D : CONTACT_3D, m, j1, p1, j2, p2, LOCAL_WORLD_ALIGNED);
    constraints.back().baumgarte_corrector_parameters() = RigidConstraintModel::BaumgarteCorrectorParameters(kp, kd);
  }
  if (!in) { fprintf(stderr, "pin_loops: %s ends early\n", argv[1]); return 2; }
  Data d(m);
  const int calls = atoi(argv[2]), K = RandomStates::K;
  const RandomStates states(m);
  const auto &Q = states.Q, &V = states.V, &T = states.T;
  PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(RigidConstraintData) datas;
  for (auto &c : constraints) datas.emplace_back(c);
  initConstraintDynamics(m, d, constraints, datas);
  ProximalSettings exact(1e-12, 0.0, 1);
  printf("constrained_dynamics_ns %.1f\n", median_ns([&](int i) {
    constraintDynamics(m, d, Q[i % K], V[i % K], T[i % K], constraints, datas, exact);
  }, calls));
  printf("constrained_dynamics_derivatives_ns %.1f\n", median_ns([&](int i) {
    constraintDynamics(m, d, Q[i % K], V[i % K], T[i % K], constraints, datas, exact);
    computeConstraintDynamicsDerivatives(m, d, constraints, datas, exact);
  }, calls));
  Data dl(m);
  PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(RigidConstraintData) ldatas;
  for (auto &c : constraints) ldatas.emplace_back(c);
  computeJointMinimalOrdering(m, dl, constraints);
  ProximalSettings proximal(1e-12, 1e-9, 10);
  double worst = 0.0;
  for (int k = 0; k < K; ++k) {
    constraintDynamics(m, d, Q[k], V[k], T[k], constraints, datas, exact);
    lcaba(m, dl, Q[k], V[k], T[k], constraints, ldatas, proximal);
    worst = std::max(worst, (dl.ddq - d.ddq).cwiseAbs().maxCoeff() / std::max(1.0, d.ddq.cwiseAbs().maxCoeff()));
  }
  printf("lcaba_ns %.1f\n", median_ns([&](int i) {
    lcaba(m, dl, Q[i % K], V[i % K], T[i % K], constraints, ldatas, proximal);
  }, calls));
  printf("lcaba_difference %.3g\n", worst);
  return 0;
}
