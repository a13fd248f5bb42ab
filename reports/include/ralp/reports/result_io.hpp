// The documents the modes write: a simulated scenario as JSON (`ralp simulate --json`), CSV
// (`--csv`) and Chrome trace events (`--trace`; opens in Perfetto and chrome://tracing), and a
// measured run as JSON (`ralp cluster --json`). A strategy's own JSON form sits with its type
// (results/simulation_result.hpp), since simulation processes return results in it.
#pragma once

#include <string>

#include "ralp/core/json_input.hpp"
#include "ralp/results/measured_result.hpp"
#include "ralp/results/simulation_result.hpp"

namespace ralp::reports {

// {"scenario": {...}, "results": [...], "verdict": {...}}: the document `ralp simulate --json`
// writes.
Json to_json(const ScenarioResult& result);

// One row per strategy with the table's columns; numbers in SI units (seconds, bytes).
std::string to_csv(const ScenarioResult& result);

// Chrome trace event format: one process per (strategy, host), one thread per activity kind and
// peer, times in microseconds, the last simulated step of each strategy.
Json to_chrome_trace(const ScenarioResult& result);
// The same for a real run's last step (ralp cluster --trace): the same threads and labels, so
// that a measured and a predicted trace of one scenario can be set side by side.
Json to_chrome_trace(const MeasuredRun& run);

// {"scenario": {..., "mode": "measured"}, "results": [...]}: the document `ralp cluster --json`
// writes, whose shared fields match `ralp simulate --json`'s.
Json to_json(const MeasuredRun& run);

}  // namespace ralp::reports
