// The timing of pin_bench, shared by pin_extra.cpp and pin_loops.cpp: 7 repetitions of `calls`
// calls of f(i), the median ns per call.
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
