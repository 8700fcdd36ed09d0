// Comparing embedding vectors in tests.
#pragma once

#include <cmath>
#include <vector>

namespace ggufd::test {

// cos(a, b) in double precision; 0 when the lengths differ (so a check against a bound fails).
inline double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0.0;
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

}  // namespace ggufd::test
