// Results as JSON (the --json output, and the form child processes return them in), CSV, and
// Chrome trace events (the --trace output; opens in Perfetto and chrome://tracing).
#pragma once

#include <string>

#include "ralp/core/json_input.hpp"
#include "ralp/sim/result.hpp"

namespace ralp::sim {

// Every field of a StrategyResult; the timeline only when asked.
Json to_json(const StrategyResult& result, bool with_timeline);
// The inverse of to_json; throws std::runtime_error on a malformed document.
StrategyResult strategy_result_from_json(const Json& json);

// {"scenario": {...}, "results": [...]}: the document `ralp simulate --json` writes.
Json to_json(const ScenarioResult& result);

// One row per strategy with the table's columns; numbers in SI units (seconds, bytes).
std::string to_csv(const ScenarioResult& result);

// Chrome trace event format: one process per (strategy, host), one thread per activity kind and
// peer, times in microseconds, the last simulated step of each strategy.
Json to_chrome_trace(const ScenarioResult& result);

}  // namespace ralp::sim
