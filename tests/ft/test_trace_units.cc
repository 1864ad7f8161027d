// The flight recorder's parts without a job: the ring, the dump format, and the hang line,
// including the line the issue asks for word for word.
#include <gtest/gtest.h>

#include <thread>

#include "common/error.h"
#include "src/trace/hang_diagnosis.h"
#include "src/trace/recorder.h"
#include "src/trace/trace_dump.h"

namespace {

using coll::CollCall;
using coll::CollType;
using namespace coll::trace;

CollCall callOf(CollType type, size_t count, collDataType_t datatype, int root = 0, int peer = 0) {
  CollCall call;
  call.type = type;
  call.count = count;
  call.datatype = datatype;
  call.root = root;
  call.peer = peer;
  return call;
}

TEST(FlightRecorder, KeepsTheNewestCallsInOrderWithTheirStates) {
  FlightRecorder recorder(4);
  for (int i = 0; i < 6; ++i) {
    uint64_t ticket = recorder.begin(callOf(CollType::kAllReduce, 100 + i, collFloat), false);
    recorder.end(ticket, CallState::kCompleted, collSuccess, coll::Algo::kRing);
  }
  const uint64_t pending = recorder.begin(callOf(CollType::kBroadcast, 7, collInt32, 2), false);
  (void)pending;
  const std::vector<CallRecord> calls = recorder.snapshot();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls.front().seq, 4u);
  EXPECT_EQ(calls.back().seq, 7u);
  EXPECT_EQ(calls.back().type, CollType::kBroadcast);
  EXPECT_EQ(calls.back().root, 2);
  EXPECT_EQ(calls.back().state, CallState::kStarted);
  EXPECT_EQ(calls[2].state, CallState::kCompleted);
  EXPECT_EQ(calls[2].algorithm, "ring");
  EXPECT_EQ(recorder.collectivesBegun(), 7u);
  EXPECT_EQ(recorder.collectivesCompleted(), 6u);
}

TEST(FlightRecorder, SendsAndReceivesCountApartFromCollectives) {
  FlightRecorder recorder(8);
  recorder.end(recorder.begin(callOf(CollType::kAllReduce, 1, collFloat), false), CallState::kCompleted, collSuccess,
               coll::Algo::kAuto);
  recorder.end(recorder.begin(callOf(CollType::kSend, 1, collFloat, 0, 3), false), CallState::kCompleted, collSuccess,
               coll::Algo::kAuto);
  recorder.begin(callOf(CollType::kAllReduce, 1, collFloat), false);
  const auto calls = recorder.snapshot();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[1].seq, 1u);  // the first send
  EXPECT_EQ(calls[1].peer, 3);
  EXPECT_EQ(calls[2].seq, 2u);  // the second collective
}

// A group's sends and receives, recorded together: each its own record, in order, with its peer,
// a start and an end; a device group's handed to its stream, with no end seen.
TEST(FlightRecorder, AGroupRecordsEachOfItsCalls) {
  FlightRecorder recorder(8);
  recorder.end(recorder.begin(callOf(CollType::kAllReduce, 1, collFloat), false), CallState::kCompleted, collSuccess,
               coll::Algo::kAuto);
  const std::vector<CollCall> group = {callOf(CollType::kSend, 5, collFloat, 0, 1),
                                       callOf(CollType::kRecv, 6, collInt32, 0, 2),
                                       callOf(CollType::kSend, 7, collFloat, 0, 3)};
  const uint64_t first = recorder.beginGroup(group, false);
  std::vector<CallRecord> calls = recorder.snapshot();
  ASSERT_EQ(calls.size(), 4u);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(calls[i].seq, i);  // sends and receives count apart from the collective
    EXPECT_EQ(calls[i].type, group[i - 1].type);
    EXPECT_EQ(calls[i].count, group[i - 1].count);
    EXPECT_EQ(calls[i].peer, group[i - 1].peer);
    EXPECT_EQ(calls[i].state, CallState::kStarted);
    EXPECT_GT(calls[i].startNs, 0);
    EXPECT_EQ(calls[i].endNs, 0);
  }
  recorder.endGroup(first, group.size(), CallState::kFailed, collRemoteError);
  const uint64_t queued = recorder.beginGroup({callOf(CollType::kRecv, 8, collFloat, 0, 4)}, true);
  recorder.endGroup(queued, 1, CallState::kQueued, collSuccess);
  calls = recorder.snapshot();
  ASSERT_EQ(calls.size(), 5u);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(calls[i].state, CallState::kFailed);
    EXPECT_EQ(calls[i].result, collRemoteError);
    EXPECT_GE(calls[i].endNs, calls[i].startNs);
  }
  EXPECT_EQ(calls[4].seq, 4u);
  EXPECT_TRUE(calls[4].device);
  EXPECT_EQ(calls[4].state, CallState::kQueued);
  EXPECT_EQ(calls[4].endNs, 0);
  EXPECT_EQ(recorder.collectivesCompleted(), 1u);
}

TEST(FlightRecorder, OffRecordsNothing) {
  FlightRecorder recorder(0);
  EXPECT_FALSE(recorder.enabled());
  recorder.end(recorder.begin(callOf(CollType::kAllReduce, 1, collFloat), false), CallState::kCompleted, collSuccess,
               coll::Algo::kAuto);
  EXPECT_TRUE(recorder.snapshot().empty());
}

// A reader beside a writer sees whole records only (run under ThreadSanitizer too).
TEST(FlightRecorder, AReaderBesideTheWriterSeesWholeRecords) {
  FlightRecorder recorder(16);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 1; i <= 20000; ++i) {
      uint64_t ticket = recorder.begin(callOf(CollType::kAllReduce, static_cast<size_t>(i), collFloat), false);
      recorder.end(ticket, CallState::kCompleted, collSuccess, coll::Algo::kRing);
    }
    done.store(true);
  });
  int bad = 0;
  while (!done.load())
    for (const CallRecord& r : recorder.snapshot()) bad += r.count == r.seq ? 0 : 1;
  writer.join();
  EXPECT_EQ(bad, 0);
}

TraceHeader headerOf(int rank, uint64_t completed) {
  TraceHeader h;
  h.commName = "train er=%";
  h.commToken = 0x4f2a09c1d3e8b6a7ull;
  h.rank = rank;
  h.nranks = 4;
  h.pid = 4242;
  h.host = "node3";
  h.reason = "timeout";
  h.collectivesBegun = completed + 1;
  h.collectivesCompleted = completed;
  return h;
}

CallRecord recordOf(uint64_t seq, CollType type, uint64_t count, CallState state) {
  CallRecord r;
  r.seq = seq;
  r.type = type;
  r.datatype = collFloat;
  r.count = count;
  r.state = state;
  r.algorithm = "ring";
  r.startNs = coarseMonotonicNs();
  return r;
}

TEST(TraceDump, ReadsBackWhatItWrites) {
  std::vector<CallRecord> calls = {recordOf(1233, CollType::kAllReduce, 1 << 20, CallState::kCompleted),
                                   recordOf(1234, CollType::kBroadcast, 16, CallState::kStarted)};
  calls[1].root = 2;
  const RankTrace trace = parseTrace(formatTrace(headerOf(3, 1233), calls));
  EXPECT_EQ(trace.header.commName, "train er=%");
  EXPECT_EQ(trace.header.commToken, 0x4f2a09c1d3e8b6a7ull);
  EXPECT_EQ(trace.header.rank, 3);
  EXPECT_EQ(trace.header.collectivesCompleted, 1233u);
  ASSERT_EQ(trace.calls.size(), 2u);
  EXPECT_EQ(trace.calls[1].type, CollType::kBroadcast);
  EXPECT_EQ(trace.calls[1].root, 2);
  EXPECT_EQ(trace.calls[1].state, CallState::kStarted);
  EXPECT_EQ(trace.calls[0].algorithm, "ring");
  EXPECT_GT(trace.calls[0].startNs, 0);
}

TEST(TraceDump, ReadsBackEveryCollective) {
  // The variable-count collectives too: a dump names each by its row, which the reader looks up.
  std::vector<CallRecord> calls;
  for (int t = 0; t < static_cast<int>(CollType::kCount); ++t)
    calls.push_back(recordOf(100 + t, static_cast<CollType>(t), 8, CallState::kCompleted));
  const RankTrace trace = parseTrace(formatTrace(headerOf(0, 100), calls));
  ASSERT_EQ(trace.calls.size(), calls.size());
  for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(trace.calls[i].type, calls[i].type) << i;
  EXPECT_STREQ(operationName(CollType::kAllToAllV), "all_to_all_v");
}

TEST(TraceDump, RefusesWhatItDidNotWriteNamingTheLine) {
  try {
    parseTrace("version 1\ncomm name=x token=zz rank=0\n");
    FAIL() << "parsed a bad token";
  } catch (const coll::CollError& e) {
    EXPECT_EQ(e.code(), collInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parseTrace("version 2\n"), coll::CollError);
  EXPECT_THROW(parseTrace("call seq=1\n"), coll::CollError);
}

RankStatus statusOf(int rank, uint64_t completed, const std::vector<CallRecord>& calls) {
  RankTrace trace;
  trace.header = headerOf(rank, completed);
  trace.calls = calls;
  return statusFromTrace(trace);
}

// The example, word for word.
TEST(HangDiagnosis, NamesTheRanksWaitingAndTheOneBehind) {
  const CallRecord waiting = recordOf(1234, CollType::kAllReduce, 1 << 20, CallState::kStarted);
  std::vector<RankStatus> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back(statusOf(r, 1233, {waiting}));
  ranks.push_back(statusOf(3, 1233, {recordOf(1234, CollType::kBroadcast, 16, CallState::kStarted)}));
  EXPECT_EQ(describeHang(ranks),
            "ranks 0-2 wait in all_reduce #1234 (4 MiB float); rank 3 last completed #1233 and is in broadcast #1234");
}

TEST(HangDiagnosis, NamesASilentRankAndARankInNoCall) {
  const CallRecord waiting = recordOf(57, CollType::kAllReduce, 16384, CallState::kFailed);
  std::vector<RankStatus> ranks = {statusOf(3, 56, {waiting}), silentRank(2, "its process is stopped"),
                                   statusOf(0, 56, {waiting}),
                                   statusOf(1, 56, {recordOf(56, CollType::kAllReduce, 1, CallState::kCompleted)})};
  EXPECT_EQ(describeHang(ranks),
            "ranks 0, 3 wait in all_reduce #57 (64 KiB float); rank 1 last completed #56 and is in no call; rank 2 did "
            "not answer (its process is stopped)");
}

TEST(HangDiagnosis, DescribesSizesAndRanges) {
  EXPECT_EQ(describeBytes(12), "12 B");
  EXPECT_EQ(describeBytes(4096), "4 KiB");
  EXPECT_EQ(describeBytes(1536 * 1024), "1.5 MiB");
  EXPECT_EQ(describeRanks({3}), "rank 3");
  EXPECT_EQ(describeRanks({0, 2, 5, 6, 7}), "ranks 0, 2, 5-7");
}

}  // namespace
