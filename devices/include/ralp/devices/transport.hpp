// Transports: how a framework moves a strategy's messages, on top of what the wire takes. A
// transport is at most three numbers, the same for every scenario that names it:
//   message_s   CPU time of one payload message at each end (a gRPC call, an MPI message),
//   s_per_byte  CPU time per byte at each end (serialising, copying, reducing on the host),
//   link_share  the share of a link's bandwidth one connection between two nodes reaches.
// An end that computes on a CPU (a parameter server on the host) spends its CPU time on that CPU,
// shared with its updates and its other connections; an end on a GPU has a host core of its own
// per connection, so its CPU time only bounds how fast that connection moves bytes. "ideal" is all
// zeros and a share of 1: wire speed under the network model. Named transports are JSON files in
// calibrate/transports/ (RALP_TRANSPORT_PATH overrides), written by `ralp published fit` from the
// rows named in each file; docs/transports.md explains them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"

namespace ralp {

struct Transport {
  std::string name = "ideal";
  std::string summary;  // one line: the framework and what its parameters stand for
  std::string source;   // where the numbers come from (the rows fitted)
  double message_s = 0.0;
  double s_per_byte = 0.0;
  double link_share = 1.0;
  std::vector<std::string> fitted;  // the parameters fitted ("message_us", ...); others are fixed
  [[nodiscard]] bool is_ideal() const {
    return message_s == 0.0 && s_per_byte == 0.0 && link_share == 1.0;
  }
  friend bool operator==(const Transport&, const Transport&) = default;
};

// The transport that adds nothing to the wire.
Transport ideal_transport();

// "ideal" and every transport file's name, sorted.
std::vector<std::string> available_transports();
// The named transport (ideal, or a file of the search path); nullopt when there is none.
// Throws InputError when its file is malformed.
std::optional<Transport> find_transport(const std::string& name);

// Reads a transport file; throws InputError naming the file, the JSON path and the expectation.
Transport load_transport(const std::filesystem::path& file);
// A transport as its file holds it (message_us, cpu_ns_per_byte, link_share).
Json transport_to_json(const Transport& transport);

}  // namespace ralp
