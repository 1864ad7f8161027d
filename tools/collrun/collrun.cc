// collrun: starts N ranks of a program on this node with the torchrun environment variables and
// supervises them: forwards signals, stops everyone when one rank fails (after a grace period in
// which the others may print their own reasons and exit), enforces --timeout, and optionally tags
// their output. It deliberately does not link libcollective, so it works (and is
// useful for launching other libraries' programs) whatever state the library is in.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "job_secret.h"
#include "options.h"
#include "rank_binding.h"
#include "spawn.h"
#include "tagged_output.h"

namespace collrun {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kGracePeriod = std::chrono::seconds(5);  // SIGTERM -> SIGKILL
constexpr auto kDrainPeriod = std::chrono::seconds(1);  // output still open after all exited
constexpr int kReapIntervalMs = 200;                    // waitpid even if a SIGCHLD got lost
const int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

int gSignalPipe[2] = {-1, -1};

void onSignal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  ssize_t ignored = write(gSignalPipe[1], &b, 1);
  (void)ignored;
  errno = saved;
}

bool installSignalHandlers() {
  if (pipe2(gSignalPipe, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = onSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGCHLD, &sa, nullptr) != 0) return false;
  for (int sig : kForwardedSignals) {
    if (sigaction(sig, &sa, nullptr) != 0) return false;
  }
  signal(SIGPIPE, SIG_IGN);
  return true;
}

struct Child {
  int rank;
  pid_t pid;
  bool running;
};

std::string describeStatus(int status, int* exitCode) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    *exitCode = 128 + sig;
    return std::to_string(*exitCode) + " (killed by signal " + std::to_string(sig) + ": " + strsignal(sig) + ")";
  }
  *exitCode = WEXITSTATUS(status);
  return std::to_string(*exitCode);
}

class Supervisor {
 public:
  Supervisor(std::vector<Child> children, TaggedOutput* output, double timeoutSec, double graceSec, bool keepGoing)
      : children_(std::move(children)),
        output_(output),
        gracePeriod_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(graceSec))),
        keepGoing_(keepGoing) {
    if (timeoutSec > 0) {
      timeoutAt_ =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeoutSec));
      hasTimeout_ = true;
    }
    timeoutSec_ = timeoutSec;
  }

  int run() {
    for (;;) {
      std::vector<pollfd> fds = {{gSignalPipe[0], POLLIN, 0}};
      if (output_ != nullptr) output_->appendPollFds(&fds);
      int n = poll(fds.data(), fds.size(), pollTimeoutMs());
      if (n < 0 && errno != EINTR) {
        perror("collrun: poll");
        break;
      }
      if (n > 0 && (fds[0].revents & POLLIN)) drainSignals();
      if (n > 0 && output_ != nullptr) output_->handle(fds, 1);
      reap();
      checkDeadlines();
      if (runningCount() == 0) {
        if (output_ == nullptr || !output_->anyOpen()) break;
        if (!draining_) {
          draining_ = true;
          drainUntil_ = Clock::now() + kDrainPeriod;
        } else if (Clock::now() >= drainUntil_) {
          break;
        }
      }
    }
    if (output_ != nullptr) output_->flushAndCloseAll();
    if (timedOut_) return 124;
    if (laterFailures_ > 0) {
      fprintf(stderr, "collrun: rank %d failed first, with status %s; %d other rank%s ended with an error after it\n",
              firstFailedRank_, firstFailure_.c_str(), laterFailures_, laterFailures_ == 1 ? "" : "s");
    }
    return exitCode_;
  }

 private:
  int runningCount() const {
    int count = 0;
    for (const auto& c : children_) count += c.running ? 1 : 0;
    return count;
  }

  int pollTimeoutMs() const {
    auto now = Clock::now();
    auto wait = std::chrono::milliseconds(kReapIntervalMs);
    auto until = [&](Clock::time_point t) {
      auto d = std::chrono::duration_cast<std::chrono::milliseconds>(t - now) + std::chrono::milliseconds(1);
      if (d < wait) wait = d < std::chrono::milliseconds(0) ? std::chrono::milliseconds(0) : d;
    };
    if (killPending_) until(killAt_);
    if (gracePending_) until(graceUntil_);
    if (hasTimeout_ && !timedOut_) until(timeoutAt_);
    if (draining_) until(drainUntil_);
    return static_cast<int>(wait.count());
  }

  // Terminating signals go to each rank's whole process group, as a terminal's Ctrl-C would;
  // SIGUSR1/SIGUSR2 only to the rank itself, which may handle them while its helpers would die.
  void signalRunning(int sig) {
    bool wholeGroup = sig != SIGUSR1 && sig != SIGUSR2;
    for (const auto& c : children_) {
      if (!c.running) continue;
      if (!wholeGroup || kill(-c.pid, sig) != 0) kill(c.pid, sig);  // no group yet right after fork
    }
  }

  void stopAll() {
    signalRunning(SIGTERM);
    stopIssued_ = true;
    killPending_ = true;
    killAt_ = Clock::now() + kGracePeriod;
  }

  void drainSignals() {
    unsigned char buf[64];
    ssize_t n;
    while ((n = read(gSignalPipe[0], buf, sizeof(buf))) > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        int sig = buf[i];
        if (sig == SIGCHLD) continue;
        forward(sig);
      }
    }
  }

  void forward(int sig) {
    if (sig == SIGINT || sig == SIGTERM) {
      if (++terminationRequests_ >= 3) {
        fprintf(stderr, "collrun: got %s again; killing %d ranks\n", strsignal(sig), runningCount());
        signalRunning(SIGKILL);
        return;
      }
      signalForwarded_ = true;
    }
    fprintf(stderr, "collrun: got signal %d (%s); forwarding it to %d ranks\n", sig, strsignal(sig), runningCount());
    signalRunning(sig);
  }

  void reap() {
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      for (auto& c : children_) {
        if (c.pid != pid || !c.running) continue;
        c.running = false;
        onExit(c, status);
      }
    }
  }

  void onExit(const Child& c, int status) {
    bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (!failed) return;
    if (keepGoing_ && !stopIssued_ && !signalForwarded_) {
      onExitKeepingTheOthers(c, status);
      return;
    }
    if (failureSeen_) {
      if (!stopIssued_ && !signalForwarded_) ++laterFailures_;
      return;
    }
    failureSeen_ = true;
    firstFailedRank_ = c.rank;
    firstFailure_ = describeStatus(status, &exitCode_);
    if (stopIssued_) return;  // we asked for it (timeout)
    int others = runningCount();
    // After a forwarded SIGINT/SIGTERM the ranks' deaths are expected: stop the rest quietly.
    if (!signalForwarded_) {
      fprintf(stderr, "collrun: rank %d (pid %d) exited with status %s", c.rank, static_cast<int>(c.pid),
              firstFailure_.c_str());
      if (others > 0 && gracePeriod_.count() > 0) {
        fprintf(stderr, "; %s %g s to end before %s stopped", others == 1 ? "the other rank gets" : "the others get",
                std::chrono::duration<double>(gracePeriod_).count(), others == 1 ? "it is" : "they are");
      } else if (others > 0) {
        fprintf(stderr, "; stopping the other %d rank%s", others, others == 1 ? "" : "s");
      }
      fprintf(stderr, "\n");
    }
    if (others == 0) return;
    // The others often fail on their own a moment later (a peer gone, the same bad setting), and
    // their own messages say why: stopping them at once lost those lines.
    if (signalForwarded_ || gracePeriod_.count() == 0) {
      stopAll();
    } else {
      gracePending_ = true;
      graceUntil_ = Clock::now() + gracePeriod_;
    }
  }

  // --keep-going: the others go on (they may shrink their communicators and finish without this
  // rank). A rank killed by a signal was lost, and does not make the job fail by itself.
  void onExitKeepingTheOthers(const Child& c, int status) {
    int code = 0;
    const std::string how = describeStatus(status, &code);
    fprintf(stderr, "collrun: rank %d (pid %d) exited with status %s; the others go on (--keep-going)\n", c.rank,
            static_cast<int>(c.pid), how.c_str());
    if (WIFEXITED(status) && exitCode_ == 0) {
      exitCode_ = code;
      firstFailedRank_ = c.rank;
      firstFailure_ = how;
    }
  }

  void checkDeadlines() {
    auto now = Clock::now();
    if (hasTimeout_ && !timedOut_ && now >= timeoutAt_ && runningCount() > 0) {
      timedOut_ = true;
      fprintf(stderr, "collrun: timeout after %g s; stopping %d rank%s\n", timeoutSec_, runningCount(),
              runningCount() == 1 ? "" : "s");
      stopAll();
    }
    if (gracePending_ && now >= graceUntil_) {
      gracePending_ = false;
      if (runningCount() > 0 && !stopIssued_) {
        fprintf(stderr, "collrun: %d rank%s still running %g s after rank %d failed; stopping %s\n", runningCount(),
                runningCount() == 1 ? "" : "s", std::chrono::duration<double>(gracePeriod_).count(),
                firstFailedRank_, runningCount() == 1 ? "it" : "them");
        stopAll();
      }
    }
    if (killPending_ && now >= killAt_) {
      killPending_ = false;
      if (runningCount() > 0) {
        fprintf(stderr, "collrun: %d rank%s still running after SIGTERM; sending SIGKILL\n", runningCount(),
                runningCount() == 1 ? "" : "s");
        signalRunning(SIGKILL);
      }
    }
  }

  std::vector<Child> children_;
  TaggedOutput* output_;
  double timeoutSec_ = 0;
  bool hasTimeout_ = false;
  Clock::time_point timeoutAt_;
  bool timedOut_ = false;
  bool stopIssued_ = false;
  bool signalForwarded_ = false;
  bool killPending_ = false;
  Clock::time_point killAt_;
  Clock::duration gracePeriod_;
  bool keepGoing_ = false;
  bool gracePending_ = false;
  Clock::time_point graceUntil_;
  int firstFailedRank_ = -1;
  std::string firstFailure_;
  int laterFailures_ = 0;
  bool draining_ = false;
  Clock::time_point drainUntil_;
  bool failureSeen_ = false;
  int exitCode_ = 0;
  int terminationRequests_ = 0;
};

bool makePipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return true;
}

int launch(const Options& opts, const std::string& program) {
  std::string secret;
  if (!chooseJobSecret(opts, &secret)) return 2;
  std::vector<RankBinding> bindings = bindingsForRanks(opts);
  bool stdinIsTty = isatty(0) != 0;
  TaggedOutput tagged;
  std::vector<Child> children;
  for (int local = 0; local < opts.nprocs; ++local) {
    RankSpec spec;
    spec.localRank = local;
    spec.rank = opts.nodeRank * opts.nprocs + local;
    spec.env = rankEnvironment(opts, local, secret);
    spec.stdinDevNull = stdinIsTty;
    if (!bindings.empty()) {
      const RankBinding& binding = bindings[static_cast<size_t>(local)];
      spec.hasCpuSet = binding.bound;
      spec.cpus = binding.cpus;
      if (opts.bind != Binding::kAuto) fprintf(stderr, "collrun: rank %d %s\n", spec.rank, binding.description.c_str());
    }
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    if (opts.tagOutput) {
      if (!makePipe(out) || !makePipe(err)) {
        perror("collrun: pipe");
        return 1;
      }
      spec.stdoutFd = out[1];
      spec.stderrFd = err[1];
    }
    pid_t pid = spawnRank(spec, program, opts.command);
    int forkErrno = errno;
    if (opts.tagOutput) {
      close(out[1]);
      close(err[1]);
      tagged.add(spec.rank, out[0], 1);
      tagged.add(spec.rank, err[0], 2);
    }
    if (pid < 0) {
      fprintf(stderr, "collrun: fork failed for rank %d: %s; stopping the others\n", spec.rank, strerror(forkErrno));
      for (const auto& c : children) kill(-c.pid, SIGKILL);
      for (const auto& c : children) waitpid(c.pid, nullptr, 0);
      return 1;
    }
    children.push_back({spec.rank, pid, true});
  }
  Supervisor supervisor(std::move(children), opts.tagOutput ? &tagged : nullptr, opts.timeoutSec, opts.graceSec,
                        opts.keepGoing);
  return supervisor.run();
}

}  // namespace
}  // namespace collrun

int main(int argc, char** argv) {
  using namespace collrun;
  Options opts;
  switch (parseOptions(argc, argv, &opts)) {
    case ParseOutcome::kExitSuccess:
      return 0;
    case ParseOutcome::kUsageError:
      return 2;
    case ParseOutcome::kRun:
      break;
  }
  std::string why;
  std::string program = resolveProgram(opts.command[0], &why);
  if (program.empty()) {
    fprintf(stderr, "collrun: cannot execute '%s': %s\n", opts.command[0].c_str(), why.c_str());
    return 127;
  }
  if (opts.masterPort == 0) {
    opts.masterPort = pickFreePort();
    if (opts.masterPort == 0) {
      fprintf(stderr, "collrun: could not find a free port (%s); pass --master-port\n", strerror(errno));
      return 1;
    }
  }
  if (!installSignalHandlers()) {
    perror("collrun: installing signal handlers");
    return 1;
  }
  fflush(stdout);
  return launch(opts, program);
}
