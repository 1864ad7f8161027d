#include "rank_launcher.h"

#include "bootstrap/memory_store.h"
#include "bootstrap/unique_id.h"
#include "src/api_internal.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>

namespace colltest {

std::string joinFailures(const std::vector<std::string>& failures) {
  std::string text;
  for (const auto& f : failures) text += f + "\n";
  return text;
}

namespace {

using InitFn = std::function<collResult_t(collComm_t*, int rank)>;

std::vector<std::string> runThreads(int nranks, const RankBody& body, const InitFn& init) {
  std::vector<std::string> failures;
  std::mutex mutex;
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      collComm_t comm = nullptr;
      collResult_t rc = init(&comm, r);
      std::vector<std::string> mine;
      if (rc != collSuccess) {
        mine.push_back("rank " + std::to_string(r) + ": init: " + collGetLastError(nullptr));
      } else {
        mine = body(comm, r, nranks);
        collCommDestroy(comm);
      }
      std::lock_guard<std::mutex> lock(mutex);
      failures.insert(failures.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

}  // namespace

std::vector<std::string> runAsThreads(int nranks, const RankBody& body, collConfig_t* config) {
  collUniqueId id;
  if (collGetUniqueId(&id) != collSuccess) return {std::string("collGetUniqueId: ") + collGetLastError(nullptr)};
  return runThreads(nranks, body,
                    [&](collComm_t* comm, int rank) { return collCommInitRankConfig(comm, nranks, id, rank, config); });
}

std::vector<std::string> runAsThreadsWithMemoryStore(int nranks, const RankBody& body) {
  auto store = std::make_shared<coll::bootstrap::MemoryStore>();
  return runThreads(nranks, body, [&](collComm_t* comm, int rank) {
    return coll::commInitWithStore(comm, store, nranks, rank, nullptr);
  });
}

InitFailureBody initMustSucceed() {
  return [](int rank, collResult_t, const std::string& message) {
    return std::vector<std::string>{"rank " + std::to_string(rank) + ": init failed: " + message};
  };
}

std::vector<std::string> runAsProcesses(int nranks, const RankBody& body, int timeoutSeconds) {
  return runAsProcessesWithSetup(
      nranks, [](int) {}, body, initMustSucceed(), timeoutSeconds);
}

std::vector<std::string> runAsProcessesWithSetup(int nranks, const std::function<void(int rank)>& setup,
                                                 const RankBody& body, const InitFailureBody& onInitFailure,
                                                 int timeoutSeconds, collConfig_t* config) {
  // Fork first, then start the rendezvous server: a child forked while the server's thread runs
  // may inherit a lock that thread held (the allocator's, say) and hang on it. Each child waits
  // for the id on a pipe of its own.
  std::vector<pid_t> pids;
  std::vector<int> pipes;    // child -> parent: the report
  std::vector<int> idPipes;  // parent -> child: the unique id
  for (int r = 0; r < nranks; ++r) {
    int fds[2], idFds[2];
    if (pipe(fds) != 0 || pipe(idFds) != 0) return {"pipe failed"};
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      close(idFds[1]);
      for (int fd : idPipes) close(fd);  // the earlier ranks' write ends: their EOF must not wait for us
      collUniqueId id;
      size_t got = 0;
      while (got < sizeof(id)) {
        ssize_t n = read(idFds[0], reinterpret_cast<char*>(&id) + got, sizeof(id) - got);
        if (n <= 0) _exit(2);  // the parent could not make an id, and says so itself
        got += static_cast<size_t>(n);
      }
      close(idFds[0]);
      setup(r);
      collComm_t comm = nullptr;
      std::vector<std::string> mine;
      collResult_t rc = collCommInitRankConfig(&comm, nranks, id, r, config);
      if (rc != collSuccess) {
        mine = onInitFailure(r, rc, collGetLastError(nullptr));
      } else {
        mine = body(comm, r, nranks);
        collCommDestroy(comm);
      }
      std::string report;
      for (const auto& m : mine) report += m + "\n";
      ssize_t ignored = write(fds[1], report.data(), report.size());
      (void)ignored;
      _exit(mine.empty() ? 0 : 1);
    }
    close(fds[1]);
    close(idFds[0]);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
    idPipes.push_back(idFds[1]);
  }
  collUniqueId id;
  const bool haveId = collGetUniqueId(&id) == collSuccess;
  const std::string idError = haveId ? "" : std::string("collGetUniqueId: ") + collGetLastError(nullptr);
  for (int fd : idPipes) {
    if (haveId) {
      ssize_t written = write(fd, &id, sizeof(id));  // 128 bytes: one atomic pipe write
      (void)written;
    }
    close(fd);
  }
  std::vector<std::string> failures;
  std::vector<std::string> reports(nranks);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  int open = nranks;
  while (open > 0 && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> fds;
    for (int fd : pipes)
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    poll(fds.data(), fds.size(), 200);
    for (int r = 0; r < nranks; ++r) {
      if (pipes[r] < 0) continue;
      pollfd p{pipes[r], POLLIN, 0};
      if (poll(&p, 1, 0) <= 0) continue;
      char buffer[4096];
      ssize_t got = read(pipes[r], buffer, sizeof(buffer));
      if (got > 0) {
        reports[r].append(buffer, got);
      } else {
        close(pipes[r]);
        pipes[r] = -1;
        --open;
      }
    }
  }
  for (int r = 0; r < nranks; ++r) {
    if (pipes[r] >= 0) {
      kill(pids[r], SIGKILL);
      close(pipes[r]);
      failures.push_back("rank " + std::to_string(r) + " did not finish within " + std::to_string(timeoutSeconds) +
                         " s");
    }
    int status = 0;
    waitpid(pids[r], &status, 0);
    size_t start = 0;
    while (start < reports[r].size()) {
      size_t end = reports[r].find('\n', start);
      failures.push_back(reports[r].substr(start, end - start));
      start = end == std::string::npos ? reports[r].size() : end + 1;
    }
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) && reports[r].empty())
      failures.push_back("rank " + std::to_string(r) + " exited abnormally (status " + std::to_string(status) + ")");
  }
  if (!haveId) return {idError};
  // No communicator of this process used the id: end its server now, and wait for its thread, so
  // that the next fork finds no server thread running (one still ending may hold the allocator's
  // lock: a child forked then hung in malloc, all ranks timed out, once in a CI run under ASan).
  coll::bootstrap::releaseUniqueIdServer(id);
  if (!coll::bootstrap::joinReleasedUniqueIdServer(id, coll::deadlineAfter(std::chrono::seconds(10))))
    failures.push_back("the rendezvous server of this test still had clients 10 s after every rank ended");
  return failures;
}

}  // namespace colltest
