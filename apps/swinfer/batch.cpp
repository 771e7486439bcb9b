// swinfer CLI: run_batch (batch.hpp): one process, or --jobs N worker processes dealt to over sockets.
//
// --jobs forks worker processes rather than running threads that each own a model: a worker is then what an MPI
// rank is (its own thread pools, OpenMP team, GPU context and peak-memory figure, none of it shared state to
// reason about), a worker that crashes or is killed by the kernel on a huge volume takes only itself and the volume
// it held down, and the checkpoint read before the fork is shared by the workers' copy-on-write memory. The price:
// nothing that starts threads or a GPU may run before the fork; the dealer only lists and sizes the inputs.
#include "batch.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <CLI/CLI.hpp>
#include <swinfer/core/error.hpp>
#include <swinfer/runtime/backends.hpp>

#include "batch_workers.hpp"
#include "checked_flags.hpp"

namespace swinfer_tool::batch {

void add_batch_options(CLI::App& cmd, batch_flags& flags) {
  const auto* group = "Many volumes (a folder or several inputs; docs/distributed.md)";
  cmd.add_option("--jobs", flags.jobs,
                 "worker processes on this machine, each with its own model, an equal share of the cores (--threads "
                 "each) and, with --backend hip, GPU N mod the GPUs present; volumes go largest first to whichever is "
                 "free. Under mpirun every rank is a worker instead")
      ->check(within<int>(jobs_range, "jobs"))
      ->group(group);
  cmd.add_flag("--resume", flags.resume,
               "skip the volumes an earlier run of the same command finished (killed, or out of time): their outputs "
               "and journal entries (OUTPUT/.swinfer-journal) are complete; segment the rest")
      ->group(group);
}

void use_gpu_of(const worker_placement& where) {
  if (const char* chosen = std::getenv("SWINFER_GPU_DEVICE"); chosen && *chosen) return;
  if (const int gpus = swinfer::runtime::visible_gpu_count(); gpus > 0) {
    setenv("SWINFER_GPU_DEVICE", std::to_string(where.node_index % gpus).c_str(), 1);
  }
}

namespace {

using swinfer::detail::concat;
using swinfer::detail::fail;

/// Writes all of `bytes`; false when the other end is gone (MSG_NOSIGNAL: an EPIPE, not a SIGPIPE that kills us).
bool send_all(int socket, const void* bytes, std::size_t size) {
  const auto* at = static_cast<const char*>(bytes);
  while (size > 0) {
    const ssize_t sent = ::send(socket, at, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    at += sent;
    size -= static_cast<std::size_t>(sent);
  }
  return true;
}

bool receive_all(int socket, void* bytes, std::size_t size) {
  auto* at = static_cast<char*>(bytes);
  while (size > 0) {
    const ssize_t got = ::recv(socket, at, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    at += got;
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

/// One message on a socket: its length, then its text. false when the other end is gone.
bool send_message(int socket, const std::string& text) {
  const std::uint64_t length = text.size();
  return send_all(socket, &length, sizeof length) && send_all(socket, text.data(), text.size());
}

/// The next message; nullopt when the other end closed or died before sending a whole one.
std::optional<std::string> receive_message(int socket) {
  std::uint64_t length = 0;
  if (!receive_all(socket, &length, sizeof length)) return std::nullopt;
  std::string text(length, '\0');
  if (!receive_all(socket, text.data(), text.size())) return std::nullopt;
  return text;
}

/// A --jobs worker's source: the dealer (the parent process) at the other end of a socket.
class socket_source final : public volume_source {
 public:
  explicit socket_source(int socket) : socket_(socket) {}
  std::optional<dealt_volume> next(const worker_identity& me, std::optional<finished_volume> finished) override {
    if (!send_message(socket_, request_message(me, finished))) fail("the dealer (the parent process) is gone");
    const auto reply = receive_message(socket_);
    if (!reply) fail("the dealer (the parent process) is gone");
    return read_deal(*reply);
  }
  void leave(const worker_identity& me, const std::string& why) override { send_message(socket_, leave_message(me, why)); }

 private:
  int socket_;
};

struct forked_worker {
  pid_t pid = -1;
  int socket = -1;  ///< the dealer's end
  int index = 0;
  bool finished = false;
};

std::string exit_description(int status) {
  if (WIFSIGNALED(status)) return concat("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  if (WIFEXITED(status)) return concat("exited with status ", WEXITSTATUS(status));
  return "stopped";
}

/// The forked worker's whole life; never returns.
[[noreturn]] void worker_process(int socket, const std::vector<forked_worker>& siblings, pid_t dealer,
                                 const worker_placement& where, const batch_job& job) {
  for (const auto& sibling : siblings) close(sibling.socket);
  // Dies with the dealer, so a killed job leaves no worker running on unobserved.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != dealer) _exit(1);
  int status = 0;
  try {
    socket_source source(socket);
    run_worker(source, where, job);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "swinfer: error: worker %d: %s\n", where.worker, e.what());
    status = 1;
  }
  std::fflush(nullptr);
  _exit(status);  // not exit(): the parent's atexit handlers and static objects are not this process's to run
}

/// Forks `workers` worker processes and deals to them until every one has finished or died.
void run_forked_workers(volume_queue& queue, const batch_job& job, int workers) {
  const int cpus = usable_cpus();
  const std::string host = host_name();
  const pid_t dealer = getpid();
  std::fflush(nullptr);  // or each child would write out the parent's buffered output again
  std::vector<forked_worker> children;
  for (int i = 0; i < workers; ++i) {
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) fail("--jobs: cannot create a socket: ", std::strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) {
      const int cause = errno;
      close(ends[0]);
      close(ends[1]);
      if (children.empty()) fail("--jobs: cannot start a worker process: ", std::strerror(cause));
      std::fprintf(stderr, "swinfer: warning: --jobs: started %zu of %d workers: %s\n", children.size(), workers,
                   std::strerror(cause));
      break;
    }
    if (pid == 0) {
      close(ends[0]);
      worker_process(ends[1], children, dealer,
                     {i, workers, i, workers, threads_per_worker(job.threads, cpus, cpus, workers), host}, job);
    }
    close(ends[1]);
    children.push_back({pid, ends[0], i});
  }

  std::size_t running = children.size();
  while (running > 0) {
    std::vector<pollfd> watched;
    std::vector<forked_worker*> whose;
    for (auto& child : children) {
      if (child.finished) continue;
      watched.push_back({child.socket, POLLIN, 0});
      whose.push_back(&child);
    }
    if (poll(watched.data(), watched.size(), -1) < 0) {
      if (errno == EINTR) continue;
      fail("--jobs: waiting for the workers failed: ", std::strerror(errno));
    }
    for (std::size_t k = 0; k < watched.size(); ++k) {
      if (watched[k].revents == 0) continue;
      forked_worker& child = *whose[k];
      const auto message = receive_message(child.socket);
      if (!message) {  // gone without a word: the process died
        int status = 0;
        waitpid(child.pid, &status, 0);
        const std::string why = concat("its process ", child.pid, " ", exit_description(status));
        const auto held = queue.worker_lost(child.index, why);
        std::fprintf(stderr, "swinfer: error: worker %d: %s%s\n", child.index, why.c_str(),
                     held ? concat(" while segmenting ", held->string()).c_str() : "");
        child.pid = -1;
      } else {
        const auto answer = answer_worker(queue, *message);
        // A worker that died since is seen at the next poll.
        if (answer.reply) send_message(child.socket, *answer.reply);
        if (!answer.worker_finished) continue;
      }
      close(child.socket);
      child.finished = true;
      --running;
    }
  }
  for (const auto& child : children) {
    if (child.pid > 0) waitpid(child.pid, nullptr, 0);
  }
}

}  // namespace

batch_outcome run_batch(const batch_job& job) {
  if (auto under_mpi = run_batch_under_mpi(job)) return *under_mpi;
  const auto start = std::chrono::steady_clock::now();
  const auto queue = open_queue(job);
  const int workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(job.flags.jobs), queue->waiting()));
  if (workers > 1) {
    run_forked_workers(*queue, job, workers);
  } else if (workers == 1) {
    const int cpus = usable_cpus();
    queue_source source(*queue);
    run_worker(source, {0, 1, 0, 1, threads_per_worker(job.threads, cpus, cpus, 1), host_name()}, job);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return finish_batch(*queue, job, workers > 1 ? "jobs" : "process", seconds);
}

}  // namespace swinfer_tool::batch
