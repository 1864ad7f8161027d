#include "src/trace/dump_signal.h"

#include <signal.h>

#include <atomic>
#include <mutex>

namespace coll {
namespace trace {
namespace {

std::atomic<uint64_t> gDumpSignals{0};
struct sigaction gPrevious;

void onDumpSignal(int signal, siginfo_t* info, void* context) {
  gDumpSignals.fetch_add(1, std::memory_order_relaxed);
  if (gPrevious.sa_flags & SA_SIGINFO) {
    if (gPrevious.sa_sigaction != nullptr) gPrevious.sa_sigaction(signal, info, context);
  } else if (gPrevious.sa_handler != SIG_DFL && gPrevious.sa_handler != SIG_IGN && gPrevious.sa_handler != nullptr) {
    gPrevious.sa_handler(signal);
  }
}

}  // namespace

void installDumpSignal() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action = {};
    action.sa_sigaction = onDumpSignal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, &gPrevious);
  });
}

uint64_t dumpSignalCount() { return gDumpSignals.load(std::memory_order_relaxed); }

}  // namespace trace
}  // namespace coll
