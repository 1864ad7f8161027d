#include "rank_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/socket.h"

namespace colltest {
namespace {

// A port nobody listens on now, for rank 0's store (the kernel's choice, released at once).
int freePort() { return coll::localAddressOf(coll::listenOn("127.0.0.1", 0).get()).port(); }

void putEnv(const std::vector<std::string>& env) {
  for (const std::string& item : env) {
    const size_t eq = item.find('=');
    setenv(item.substr(0, eq).c_str(), item.substr(eq + 1).c_str(), 1);
  }
}

}  // namespace

std::string failure(int rank, const std::string& what) { return "rank " + std::to_string(rank) + ": " + what; }

std::vector<std::string> runJob(int nranks, const JobBody& body, int timeoutMs, const std::set<int>& mayDie,
                                const ExtraBody& extra) {
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs;
  RankJob job(nranks, body, {}, &config);
  if (extra) job.spawn(extra);
  return job.wait(120, mayDie);
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool lastErrorMentions(collComm_t comm, const char* text) { return strstr(collGetLastError(comm), text) != nullptr; }

RankJob::RankJob(int nranks, const JobBody& body, const std::vector<std::string>& env, const collConfig_t* config,
                 bool bodyInits)
    : nranks_(nranks) {
  char pattern[] = "/tmp/collft.XXXXXX";
  dir_ = mkdtemp(pattern);
  void* page = mmap(nullptr, sizeof(SharedBoard), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  board_ = new (page) SharedBoard();
  for (auto& s : board_->slot) s.store(0);
  const std::string port = std::to_string(freePort());
  collConfig_t configCopy = COLL_CONFIG_INITIALIZER;
  const bool haveConfig = config != nullptr;
  if (haveConfig) configCopy = *config;
  for (int r = 0; r < nranks; ++r) {
    std::vector<std::string> rankEnv = {"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(nranks),
                                        "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port};
    rankEnv.insert(rankEnv.end(), env.begin(), env.end());
    Child child;
    child.name = "rank " + std::to_string(r);
    child.pid = startChild("rank" + std::to_string(r) + ".log", rankEnv,
                           [&, r]() -> std::vector<std::string> {
                             collConfig_t mine = configCopy;
                             collComm_t comm = nullptr;
                             if (bodyInits) return body(nullptr, r, nranks, *board_);
                             if (collCommInitFromEnv(&comm, haveConfig ? &mine : nullptr) != collSuccess)
                               return {failure(r, std::string("init: ") + collGetLastError(nullptr))};
                             return body(comm, r, nranks, *board_);
                           },
                           &child.reportFd);
    pids_.push_back(child.pid);
    children_.push_back(child);
  }
}

RankJob::~RankJob() {
  for (Child& c : children_) {
    if (c.pid > 0 && waitpid(c.pid, nullptr, WNOHANG) == 0) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, nullptr, 0);
    }
    if (c.reportFd >= 0) close(c.reportFd);
  }
  munmap(board_, sizeof(SharedBoard));
  const std::string command = "rm -rf '" + dir_ + "'";
  if (system(command.c_str()) != 0) fprintf(stderr, "could not remove %s\n", dir_.c_str());
}

pid_t RankJob::startChild(const std::string& logName, const std::vector<std::string>& env,
                          const std::function<std::vector<std::string>()>& run, int* reportFd) {
  int fds[2];
  if (pipe(fds) != 0) abort();
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const int log = open((dir_ + "/" + logName).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(log, 2);
    close(log);
    putEnv(env);
    std::vector<std::string> failures = run();
    std::string report;
    for (const auto& f : failures) report += f + "\n";
    ssize_t ignored = write(fds[1], report.data(), report.size());
    (void)ignored;
    fflush(nullptr);
    _exit(failures.empty() ? 0 : 1);
  }
  close(fds[1]);
  *reportFd = fds[0];
  return pid;
}

int RankJob::spawn(const ExtraBody& body, const std::vector<std::string>& env) {
  const int index = static_cast<int>(children_.size()) - nranks_;
  Child child;
  child.name = "extra process " + std::to_string(index);
  child.pid = startChild("extra" + std::to_string(index) + ".log", env, [&] { return body(*board_); },
                         &child.reportFd);
  children_.push_back(child);
  return index;
}

std::vector<std::string> RankJob::wait(int seconds, const std::set<int>& mayDie) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::vector<std::string> failures;
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(c.pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
      char buffer[4096];
      pollfd p{c.reportFd, POLLIN, 0};
      if (poll(&p, 1, 20) > 0) {
        ssize_t got = read(c.reportFd, buffer, sizeof(buffer));
        if (got > 0) c.report.append(buffer, static_cast<size_t>(got));
      }
    }
    if (done == 0) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &status, 0);
      failures.push_back(c.name + " did not finish within " + std::to_string(seconds) + " s");
    }
    c.pid = -1;
    char buffer[4096];
    ssize_t got;
    while ((got = read(c.reportFd, buffer, sizeof(buffer))) > 0) c.report.append(buffer, static_cast<size_t>(got));
    std::istringstream lines(c.report);
    for (std::string line; std::getline(lines, line);) failures.push_back(line);
    const bool isRank = i < static_cast<size_t>(nranks_);
    const bool allowedToDie = isRank && mayDie.count(static_cast<int>(i)) > 0;
    if (WIFSIGNALED(status) && !allowedToDie)
      failures.push_back(c.name + " was killed by signal " + std::to_string(WTERMSIG(status)));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && c.report.empty())
      failures.push_back(c.name + " exited with status " + std::to_string(WEXITSTATUS(status)));
  }
  return failures;
}

std::string RankJob::output(int rank) const {
  std::ifstream in(dir_ + "/rank" + std::to_string(rank) + ".log");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace colltest
