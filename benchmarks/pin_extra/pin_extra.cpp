// Pinocchio's C++ for what ../shared/bench/pin_bench does not time, timed the same way (64
// random states, 7 repetitions, median ns per call): constraintDynamics followed by
// computeConstraintDynamicsDerivatives, against rbdgen's contact_dynamics_derivatives; and
// computeJointJacobiansTimeVariation followed by getFrameJacobianTimeVariation of the first
// contact's frame in LOCAL_WORLD_ALIGNED, against rbdgen's frame_jacobian_time_variation.
// usage: pin_extra ROBOT.urdf floating_base(0|1) calls FRAME[:3d|:6d] ...   (LOCAL contacts at
// the frames' origins, exact solve, mu = 0, as pin_bench's contact_dynamics)
// Built by build.sh beside pin_bench; benchmarks/bench_c.py runs it.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // the constraint API is marked unstable
#include <pinocchio/parsers/urdf.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/algorithm/constrained-dynamics-derivatives.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <cstdio>
#include <string>
#include <vector>
#include "timing.hpp"
using namespace pinocchio;

int main(int argc, char **argv)
{
  if (argc < 5) {
    fprintf(stderr, "usage: pin_extra ROBOT.urdf floating_base(0|1) calls FRAME[:3d|:6d] ...\n");
    return 2;
  }
  Model m;
  if (atoi(argv[2])) pinocchio::urdf::buildModel(argv[1], JointModelFreeFlyer(), m); else pinocchio::urdf::buildModel(argv[1], m);
  Data d(m);
  const int calls = atoi(argv[3]), K = RandomStates::K;
  const RandomStates states(m);
  const auto &Q = states.Q, &V = states.V, &T = states.T;
  PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(RigidConstraintModel) contacts;
  FrameIndex first = 0;   // the first contact's frame
  for (int k = 4; k < argc; ++k) {
    std::string spec(argv[k]), name = spec, kind = "3d";
    const size_t colon = spec.rfind(':');
    if (colon != std::string::npos) { name = spec.substr(0, colon); kind = spec.substr(colon + 1); }
    if (!m.existFrame(name)) { fprintf(stderr, "pin_extra: no frame %s\n", name.c_str()); return 2; }
    if (k == 4) first = m.getFrameId(name);
    const Frame &f = m.frames[m.getFrameId(name)];
    contacts.emplace_back(kind == "6d" ? CONTACT_6D : CONTACT_3D, m, f.parentJoint, f.placement, LOCAL);
  }
  PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(RigidConstraintData) datas;
  for (auto &c : contacts) datas.emplace_back(c);
  initConstraintDynamics(m, d, contacts, datas);
  ProximalSettings exact(1e-12, 0.0, 1);
  printf("contact_dynamics_derivs_ns %.1f\n", median_ns([&](int i) {
    constraintDynamics(m, d, Q[i % K], V[i % K], T[i % K], contacts, datas, exact);
    computeConstraintDynamicsDerivatives(m, d, contacts, datas, exact);
  }, calls));
  Data::Matrix6x dJ = Data::Matrix6x::Zero(6, m.nv);
  printf("frame_jacobian_time_variation_ns %.1f\n", median_ns([&](int i) {
    computeJointJacobiansTimeVariation(m, d, Q[i % K], V[i % K]);
    getFrameJacobianTimeVariation(m, d, first, LOCAL_WORLD_ALIGNED, dJ);
  }, calls));
  return 0;
}
