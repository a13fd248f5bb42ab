// Child processes' replies: encoding in the child, decoding (and rethrowing) in the parent.
#include "ralp/results/child_reply.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "ralp/core/json_input.hpp"

namespace ralp {

std::string child_reply(const std::function<Json()>& work) {
  try {
    return Json{{"outcome", work()}}.dump();
  } catch (const InputError& e) {
    return Json{{"input_error", {{"file", e.file()}, {"path", e.path()}, {"problem", e.problem()}}}}
        .dump();
  } catch (const std::exception& e) {
    return Json{{"failure", e.what()}}.dump();
  }
}

Json parse_child_reply(const std::string& text, int status, const std::string& what) {
  if (WIFSIGNALED(status)) {
    throw std::runtime_error(what + " failed: its process died with signal " +
                             std::to_string(WTERMSIG(status)) + " (" +
                             strsignal(WTERMSIG(status)) + ")");
  }
  Json reply;
  try {
    reply = Json::parse(text);
  } catch (const Json::exception&) {
    throw std::runtime_error(what + " failed: its process exited with status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                             " without a result");
  }
  if (reply.contains("input_error")) {
    const Json& e = reply["input_error"];
    throw InputError(e["file"].get<std::string>(), e["path"].get<std::string>(),
                     e["problem"].get<std::string>());
  }
  if (reply.contains("failure")) {
    throw std::runtime_error(what + " failed: " + reply["failure"].get<std::string>());
  }
  return std::move(reply.at("outcome"));
}

ForkedChild fork_child(const std::function<std::string()>& reply) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    write_all(fds[1], reply());
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

std::pair<std::string, int> collect_child(const ForkedChild& child) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(child.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(child.fd);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {std::move(text), status};
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

int default_jobs() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace ralp
