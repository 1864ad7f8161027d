// The thread through which a communicator's ranks reach each other outside the data path, over
// the rendezvous store: it answers while the rank's own thread is stuck in a call, or busy
// elsewhere, or has not called at all.
//
// Every rank has an inbox on the communicator's store: messages numbered by a counter
// (watch/<rank>/n) under watch/<rank>/<k>. The watcher reads its inbox in order, marks each
// message read (watch/<rank>/read/<k>; watch/<rank>/closed once it stopped) and handles:
//
//   probe <id> <from>     a rank whose call timed out asks for this rank's state: it answers with
//                         its newest calls (trace_dump.h) under watch/probe/<id>/<rank>, and dumps
//                         its recorder where COLL_TRACE_DIR asks for it
//   verdict <from> <silent> <line>
//                         that rank's hang line, which every rank prints, so every rank's output
//                         names the rank and the call that hold the job up; <silent> ranks did not
//                         answer its probe. A rank whose own probe heard from fewer reports the
//                         peer's line instead (a rank may have answered one prober and exited, or
//                         been too busy answering others, before the next one asked)
//   revoke <from>         collCommRevoke on that rank: this rank's communicator is revoked too,
//                         which ends its pending call and fails later ones (comm_failure.cc)
//   excluded <from>       the survivors shrank the communicator without this rank (it was
//                         stopped, or late): its communicator is revoked and its own
//                         collCommShrink fails saying so, instead of building one of its own
//   stop                  the communicator is being destroyed
//
// Between messages it wakes about once a second: to dump on SIGUSR1 (dump_signal.h) and to skip
// a message number taken by a rank that died before it wrote the message. A store that goes away
// (its host died) ends the watcher quietly; the communicator works on without it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store.h"
#include "src/trace/hang_diagnosis.h"

namespace coll {
namespace trace {

// What the watcher asks of its communicator; each may be called from the watcher's thread.
struct WatcherHooks {
  std::function<std::string(const char* reason, size_t newestCalls)> report;  // this rank's trace
  std::function<void(const char* reason)> dump;  // to COLL_TRACE_DIR, where asked for `reason`
  std::function<void(int byRank)> revoked;
  std::function<void(int byRank)> excluded;
  std::function<std::string(int rank)> silenceOf;  // why a peer may be silent ("" when unknown)
};

class CommWatcher {
 public:
  // `label` names the communicator in log lines ("comm trainer rank 2/4").
  CommWatcher(std::shared_ptr<bootstrap::Store> store, int rank, int nranks, std::string label, WatcherHooks hooks);
  // Stops and joins the thread.
  ~CommWatcher();
  CommWatcher(const CommWatcher&) = delete;
  CommWatcher& operator=(const CommWatcher&) = delete;

  // Asks every other rank for its state and waits up to `patience` for the answers; returns every
  // rank's status, this rank's included (`mine`, its own trace text).
  std::vector<RankStatus> probe(const std::string& mine, std::chrono::milliseconds patience);
  // Best effort, to every other rank (a store that is gone is logged, not thrown). `silent`: how
  // many ranks the line says did not answer.
  void tellVerdict(const std::string& line, int silent);
  // The peers' verdict with the fewest silent ranks so far; false when none came.
  bool peerVerdict(std::string* line, int* silent) const;
  void tellRevoked();
  void tellExcluded(const std::vector<int>& ranks);
  // For the rank whose process holds the store's server, before a destruction takes the server
  // away: waits a short while, until every rank not known to be gone has read its inbox. A rank
  // in no call hears of a hang only through its inbox, and may read it later than the ranks in
  // the call, which leave as soon as their calls fail. Costs one store request when no message
  // was sent to this rank and it sent none (a job without faults).
  void awaitInboxesRead();

 private:
  void run();
  // False when the watcher should end.
  bool handle(const std::string& message);
  void answerProbe(const std::string& id, int from);
  void send(int to, const std::string& message);
  // Until rank's inbox is read up to what it holds now, or `deadline`; false at the deadline.
  bool awaitInboxRead(int rank, Deadline deadline);
  void sendToAll(const std::string& message);
  std::string inboxKey(int rank, const std::string& what) const;

  std::shared_ptr<bootstrap::Store> store_;
  int rank_;
  int nranks_;
  std::string label_;
  WatcherHooks hooks_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> sentToPeers_{false};
  uint64_t signalsSeen_ = 0;
  std::string lastVerdict_;  // the watcher thread's alone
  mutable std::mutex verdictMutex_;
  std::string bestVerdict_;  // guarded by verdictMutex_, as is:
  int bestVerdictSilent_ = -1;
  std::thread thread_;
};

}  // namespace trace
}  // namespace coll
