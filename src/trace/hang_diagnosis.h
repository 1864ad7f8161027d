// "Which rank is hung, and in which call?": one line from every rank's state, the same whether
// the states came from peers answering a probe while the job hangs (comm_watcher.h) or from the
// dumps a dead job left (colltrace):
//
//   ranks 0-2 wait in all_reduce #1234 (4 MiB float); rank 3 last completed #1233 and is in broadcast #1234
//
// The call most ranks are in is the reference; every other rank is described against it: the
// call it is in instead, no call at all, or no answer (with why, where the asking rank can see:
// a stopped or exited process on its machine).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/trace/recorder.h"
#include "src/trace/trace_dump.h"

namespace coll {
namespace trace {

struct RankStatus {
  int rank = -1;
  bool answered = false;  // false: it did not answer the probe, or left no dump
  std::string silence;    // why it is silent, when known: "its process is stopped", "left no dump"
  uint64_t completed = 0;  // the newest collective it completed (0: none)
  bool inCall = false;
  CallRecord current;  // while inCall: the call it is in, failed in, or has queued on its stream
};

// A rank's status from its trace: the newest call that has not completed is the one it is in.
RankStatus statusFromTrace(const RankTrace& trace);
RankStatus silentRank(int rank, const std::string& why);

// The line (without a trailing newline). Ranks may come in any order.
std::string describeHang(std::vector<RankStatus> ranks);

// "rank 3", "ranks 0-2", "ranks 0, 2, 5-7".
std::string describeRanks(const std::vector<int>& ranks);
// "12 B", "4 KiB", "1.5 MiB".
std::string describeBytes(uint64_t bytes);

}  // namespace trace
}  // namespace coll
