// What pin_extra.cpp and pin_loops.cpp share with pin_bench's way of timing: 64 random states
// (configurations in [-1, 1], velocities and torques in [-1, 1]), and 7 repetitions of `calls`
// calls of f(i), the median ns per call. Included after Pinocchio's headers.
#pragma once
#include <algorithm>
#include <chrono>
#include <vector>

template <class F> static double median_ns(F f, int calls)
{
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    auto a = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f(i);
    auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::nano>(b - a).count() / calls);
  }
  std::sort(t.begin(), t.end());
  return t[3];
}

struct RandomStates {
  static const int K = 64;
  std::vector<Eigen::VectorXd> Q, V, T;

  template <class Model> explicit RandomStates(const Model &m)
  {
    for (int k = 0; k < K; ++k) {
      Q.push_back(pinocchio::randomConfiguration(m, -Eigen::VectorXd::Ones(m.nq), Eigen::VectorXd::Ones(m.nq)));
      V.push_back(Eigen::VectorXd::Random(m.nv));
      T.push_back(Eigen::VectorXd::Random(m.nv));
    }
  }
};
