// A rank's flight-recorder dump: one text file per rank and communicator, which colltrace reads
// after the job is gone, and the same text (its newest calls only) is what a rank answers a
// peer's probe with when a call times out (comm_watcher.h). One parser serves both, so the line a
// live hang prints and the line colltrace prints come from the same records.
//
//   # libcollective flight recorder
//   version 1
//   comm name=trainer token=4f2a09c1d3e8b6a7 rank=1 nranks=4 pid=4242 host=node3 reason=timeout wall_ms=...
//        begun=1234 completed=1233
//   call seq=1234 op=all_reduce type=float count=1048576 redop=sum root=-1 peer=-1 algo=ring state=started
//        device=0 result=0 start_ms=... end_ms=0
//
// (each record is one line). Names are percent-encoded (space, '%', '=' and control bytes), times
// are wall-clock milliseconds since the epoch (0: not yet). docs/env.md lists the COLL_TRACE_*
// settings; tools/README.md describes colltrace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/trace/recorder.h"

namespace coll {
namespace trace {

// Who wrote a trace, why and when, and where its communicator stood.
struct TraceHeader {
  std::string commName;
  uint64_t commToken = 0;  // the same on every rank of one communicator (rank 0's, from init)
  int rank = -1;
  int nranks = 0;
  int pid = 0;
  std::string host;
  std::string reason;  // "timeout", "abort", "signal", "probe", "api"
  int64_t wallMs = 0;  // when it was written
  uint64_t collectivesBegun = 0;
  uint64_t collectivesCompleted = 0;
};

struct RankTrace {
  TraceHeader header;
  std::vector<CallRecord> calls;  // oldest first; times are wall-clock ns since the epoch
};

// The text of a trace. `newestCalls` > 0 keeps only that many of the newest calls (a probe's
// answer). Record times are taken as CLOCK_MONOTONIC_COARSE and written as wall-clock time.
std::string formatTrace(const TraceHeader& header, const std::vector<CallRecord>& calls, size_t newestCalls = 0);
// Throws CollError(collInvalidArgument) naming the line and what was expected when the text is
// not a trace of this version.
RankTrace parseTrace(const std::string& text);

// "<dir>/colltrace.<token>.rank<r>.txt": the token keeps communicators (and jobs) apart.
std::string traceFilePath(const std::string& dir, uint64_t commToken, int rank);
// Writes the file whole (a temporary file renamed into place), so a reader never sees half of
// one. Throws collSystemError naming the path.
void writeTraceFile(const std::string& path, const std::string& text);

}  // namespace trace
}  // namespace coll
