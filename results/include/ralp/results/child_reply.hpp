// What a child process sends its parent when it evaluates something on the parent's behalf (a
// simulation, a sweep point): the outcome as JSON, or the error that stopped it, so that the
// parent raises the same InputError or failure as if it had done the work itself.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "ralp/core/json_input.hpp"

namespace ralp {

// Runs `work` and encodes {"outcome": ...}, or the InputError or other exception it threw.
std::string child_reply(const std::function<Json()>& work);

// Decodes a reply read from a child that ended with wait status `status`. Returns the outcome;
// rethrows an InputError as one; throws std::runtime_error("<what> failed: ...") for a failure,
// a child killed by a signal, or one that ended without a reply.
Json parse_child_reply(const std::string& text, int status, const std::string& what);

// Writes all of `text` to `fd`, retrying on interruption (a child's side of its pipe).
void write_all(int fd, const std::string& text);

// A child process started by fork() whose reply comes on `fd`, the read end of its pipe.
struct ForkedChild {
  int pid = -1;
  int fd = -1;
};
// Flushes the standard streams, forks, and in the child writes `reply()` to the pipe and ends
// with _exit(0), skipping destructors and atexit handlers (MPI's among them): the parent owns
// every shared resource. Throws std::runtime_error when pipe() or fork() fails.
ForkedChild fork_child(const std::function<std::string()>& reply);

// Reads `child`'s reply to its end, closes the pipe and waits for the child; returns the reply
// and the wait status, for parse_child_reply. Blocks: for a child whose reply the parent waits for
// anyway (several at once are read as their pipes fill instead).
std::pair<std::string, int> collect_child(const ForkedChild& child);

// Child processes to run at once by default: one per hardware thread.
int default_jobs();

}  // namespace ralp
