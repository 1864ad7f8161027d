// The flight recorder's side of the communicator: its dumps, the hang report a timed-out call
// makes through its peers' watchers, and the watcher thread itself (src/trace/comm_watcher.h).
#include <unistd.h>

#include "common/error.h"
#include "common/logging.h"
#include "common/net_interfaces.h"
#include "src/comm.h"
#include "src/ft/peer_process.h"
#include "src/trace/comm_watcher.h"
#include "src/trace/dump_signal.h"
#include "src/trace/hang_diagnosis.h"
#include "src/trace/trace_dump.h"

namespace coll {

void Communicator::startWatching() {
  if (params_.traceDumpOn & kTraceDumpOnSignal) trace::installDumpSignal();
  trace::WatcherHooks hooks;
  hooks.report = [this](const char* reason, size_t newestCalls) { return traceReport(reason, newestCalls); };
  hooks.dump = [this](const char* reason) {
    const std::string why = reason;
    dumpTraceFor(reason, why == "signal" ? kTraceDumpOnSignal : kTraceDumpOnTimeout);
  };
  hooks.revoked = [this](int rank) { revokedBy(rank, false); };
  hooks.excluded = [this](int rank) { revokedBy(rank, true); };
  hooks.silenceOf = [this](int rank) { return silenceOf(rank); };
  const std::string label = formatString("comm %s rank %d/%d", options_.name.c_str(), rank_, nranks_);
  watcher_ = std::make_unique<trace::CommWatcher>(store_, rank_, nranks_, label, std::move(hooks));
}

std::string Communicator::traceReport(const char* reason, size_t newestCalls) const {
  trace::TraceHeader header;
  header.commName = options_.name;
  header.commToken = commToken_;
  header.rank = rank_;
  header.nranks = nranks_;
  header.pid = static_cast<int>(getpid());
  header.host = localHostName();
  header.reason = reason;
  header.collectivesBegun = recorder_.collectivesBegun();
  header.collectivesCompleted = recorder_.collectivesCompleted();
  return trace::formatTrace(header, recorder_.snapshot(), newestCalls);
}

std::string Communicator::dumpTrace(const char* reason, const std::string& path) {
  const std::string target =
      path.empty() ? trace::traceFilePath(params_.traceDir.empty() ? "." : params_.traceDir, commToken_, rank_) : path;
  trace::writeTraceFile(target, traceReport(reason, 0));
  COLL_INFO(kColl, "comm %s rank %d: flight recorder dumped to %s (%s)", options_.name.c_str(), rank_, target.c_str(),
            reason);
  return target;
}

void Communicator::dumpTraceFor(const char* reason, unsigned policy) noexcept {
  if (params_.traceDir.empty() || (params_.traceDumpOn & policy) == 0 || !recorder_.enabled()) return;
  try {
    dumpTrace(reason, "");
  } catch (const std::exception& e) {
    COLL_WARN(kColl, "comm %s rank %d: could not dump the flight recorder: %s", options_.name.c_str(), rank_,
              e.what());
  }
}

std::string Communicator::silenceOf(int rank) const {
  return ft::describeProcessState(ft::peerProcessState(peers_[rank], peers_[rank_]));
}

std::string Communicator::reportHang() {
  if (!watcher_ || !recorder_.enabled()) return "";
  const std::vector<trace::RankStatus> statuses =
      watcher_->probe(traceReport("timeout", 8), std::chrono::milliseconds(params_.traceProbeMs));
  int silent = 0;
  for (const trace::RankStatus& s : statuses) silent += s.answered ? 0 : 1;
  std::string line = trace::describeHang(statuses);
  // A peer that timed out too may have heard from ranks this one did not (comm_watcher.h).
  std::string theirs;
  int theirSilent = 0;
  if (silent > 0 && watcher_->peerVerdict(&theirs, &theirSilent) && theirSilent < silent) {
    line = theirs;
    silent = theirSilent;
  }
  COLL_WARN(kColl, "comm %s rank %d: hang report: %s", options_.name.c_str(), rank_, line.c_str());
  watcher_->tellVerdict(line, silent);
  dumpTraceFor("timeout", kTraceDumpOnTimeout);
  return line;
}

}  // namespace coll
