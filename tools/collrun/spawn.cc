#include "spawn.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "topo/cpu_list.h"

extern char** environ;

namespace collrun {

int pickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  int saved = errno;
  close(fd);
  errno = saved;
  return port;
}

namespace {

bool isExecutableFile(const std::string& path, std::string* why) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *why = strerror(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    *why = "is a directory";
    return false;
  }
  if (access(path.c_str(), X_OK) != 0) {
    *why = strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

std::string resolveProgram(const std::string& program, std::string* why) {
  if (program.find('/') != std::string::npos) {
    return isExecutableFile(program, why) ? program : "";
  }
  const char* path = getenv("PATH");
  std::stringstream ss(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  *why = "not found in PATH";
  while (std::getline(ss, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    std::string ignored;
    if (isExecutableFile(candidate, &ignored)) return candidate;
  }
  return "";
}

int threadsPerRank(int localRanks) {
  if (localRanks <= 1) return 0;
  const int usable = static_cast<int>(coll::topo::processAffinity().size());  // 0 when unknown: 1 each
  return std::max(1, usable / localRanks);
}

std::vector<std::string> rankEnvironment(const Options& opts, int localRank, const std::string& secret) {
  std::vector<std::pair<std::string, std::string>> vars = {
      {"RANK", std::to_string(opts.nodeRank * opts.nprocs + localRank)},
      {"WORLD_SIZE", std::to_string(opts.nnodes * opts.nprocs)},
      {"LOCAL_RANK", std::to_string(localRank)},
      {"LOCAL_WORLD_SIZE", std::to_string(opts.nprocs)},
      {"NODE_RANK", std::to_string(opts.nodeRank)},
      {"GROUP_RANK", std::to_string(opts.nodeRank)},
      {"MASTER_ADDR", opts.masterAddr},
      {"MASTER_PORT", std::to_string(opts.masterPort)},
  };
  if (!secret.empty()) vars.emplace_back("COLL_STORE_SECRET", secret);
  if (int threads = threadsPerRank(opts.nprocs); threads > 0 && getenv("OMP_NUM_THREADS") == nullptr)
    vars.emplace_back("OMP_NUM_THREADS", std::to_string(threads));
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool replaced = std::any_of(vars.begin(), vars.end(), [&](const auto& v) { return v.first == name; });
    if (!replaced) env.push_back(entry);
  }
  for (const auto& v : vars) env.push_back(v.first + "=" + v.second);
  return env;
}

namespace {

// Runs in the forked child, with every signal blocked: only async-signal-safe calls from here on.
[[noreturn]] void execChild(const RankSpec& spec, pid_t parent, const char* program, char* const* argv,
                            char* const* envp) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // collrun died before the death signal was armed
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (spec.stdinDevNull) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd >= 0 && fd != 0) {
      dup2(fd, 0);
      close(fd);
    }
  }
  if (spec.stdoutFd >= 0) dup2(spec.stdoutFd, 1);
  if (spec.stderrFd >= 0) dup2(spec.stderrFd, 2);
  if (spec.hasCpuSet && sched_setaffinity(0, sizeof(spec.cpus), &spec.cpus) != 0) {
    const char msg[] = "collrun: warning: sched_setaffinity failed; running unbound\n";
    ssize_t ignored = write(2, msg, sizeof(msg) - 1);
    (void)ignored;
  }
  execve(program, argv, envp);
  int err = errno;
  const char msg[] = "collrun: cannot execute the program: ";
  ssize_t ignored = write(2, msg, sizeof(msg) - 1);
  const char* why = strerror(err);
  ignored = write(2, why, strlen(why));
  ignored = write(2, "\n", 1);
  (void)ignored;
  _exit(err == ENOENT ? 127 : 126);
}

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (const auto& s : strings) result.push_back(const_cast<char*>(s.c_str()));
  result.push_back(nullptr);
  return result;
}

}  // namespace

pid_t spawnRank(const RankSpec& spec, const std::string& program, const std::vector<std::string>& args) {
  std::vector<char*> argv = cStrings(args);
  std::vector<char*> envp = cStrings(spec.env);
  pid_t parent = getpid();
  // Block every signal across fork: until the child has reset its handlers, a signal (say our own
  // SIGTERM to its new process group) must not run collrun's handler inside the child, which
  // would write into collrun's self-pipe as if collrun had been signalled.
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid == 0) execChild(spec, parent, program.c_str(), argv.data(), envp.data());
  int saved = errno;
  // Also set the group from the parent so that a signal sent right after fork reaches it.
  if (pid > 0) setpgid(pid, pid);
  sigprocmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return pid;
}

}  // namespace collrun
