// The one vocabulary of speed comparisons.
#include "ralp/results/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ralp {
namespace {

// Two decimals: ratios within half a hundredth of 1 print as 1.00x.
constexpr double kEqualRatio = 1.005;

}  // namespace

bool equal_speed(double a_s, double b_s) {
  const double longer = std::max(a_s, b_s);
  const double shorter = std::min(a_s, b_s);
  return shorter > 0.0 && longer / shorter < kEqualRatio;
}

std::string times_faster(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx faster", ratio);
  return text;
}

std::string percent_less_time(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", 100.0 * fraction);
  std::string number = text;
  if (number.size() > 2 && number.ends_with(".0")) number.resize(number.size() - 2);
  return number + "% less time";
}

std::string compare_steps(const std::string& a, double a_s, const std::string& b, double b_s) {
  if (equal_speed(a_s, b_s)) return a + " and " + b + " are equal";
  const bool a_faster = a_s < b_s;
  const std::string& fast = a_faster ? a : b;
  const std::string& slow = a_faster ? b : a;
  const double fast_s = std::min(a_s, b_s);
  const double slow_s = std::max(a_s, b_s);
  return fast + " is " + times_faster(slow_s / fast_s) + " than " + slow + " (" +
         percent_less_time((slow_s - fast_s) / slow_s) + ")";
}

}  // namespace ralp
