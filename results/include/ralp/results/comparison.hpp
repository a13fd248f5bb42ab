// The words every command compares two step times with: "N.NNx faster" (a ratio of step times)
// or "N% less time" (the share of the longer step the shorter one saves), and "equal" where the
// ratio prints as 1.00x.
#pragma once

#include <string>

namespace ralp {

// Whether step times `a_s` and `b_s` (seconds, > 0) print as the same speed: the ratio of the
// longer to the shorter rounds to 1.00x.
bool equal_speed(double a_s, double b_s);

// "5.98x faster": the longer step time over the shorter, at two decimals.
std::string times_faster(double ratio);

// "83.3% less time", "5% less time": `fraction` (0.833) of the longer step saved, at one decimal
// with a trailing ".0" dropped.
std::string percent_less_time(double fraction);

// Step time `a_s` of `a` against `b_s` of `b`: "a is 5.98x faster than b (83.3% less time)",
// "b is 1.20x faster than a (16.7% less time)", or "a and b are equal".
std::string compare_steps(const std::string& a, double a_s, const std::string& b, double b_s);

}  // namespace ralp
