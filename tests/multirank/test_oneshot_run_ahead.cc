// The one-shot path's reuse of its shared buffers while ranks run ahead of each other
// (src/algorithms/oneshot.h): a broadcast's or scatter's root, and a gather's or reduce's
// non-roots, wait for nobody, so they run up to a buffer's worth of calls ahead of the slowest
// reader, tiny inputs packed several to a slot, and inputs of at most 8 bytes four to a line. Long runs of such calls,
// of every size class (packed, a slot of their own, a whole buffer) and roots that move, must each deliver their own
// call's values: a slot overwritten before every reader finished with it shows as another call's
// values here. Outputs are poisoned before every call and checked against values every rank can
// compute for every rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

constexpr int32_t kPoison = -123456789;

// Rank r's input element e in call i.
int32_t inputOf(int rank, int call, size_t e) { return (rank + 1) * 1000003 + call * 7919 + static_cast<int32_t>(e); }

struct CallShape {
  enum Kind { kBroadcast, kScatter, kGather, kReduce } kind;
  size_t count;  // per rank's block for scatter and gather
  int root;
};

// A tiny call mostly (packed), now and then one that takes a slot of its own or a whole buffer,
// with runs of one kind and one root so that the ranks that wait for nobody run far ahead.
CallShape shapeOf(int call, int nranks) {
  CallShape shape;
  const int run = call / 150;
  shape.kind = static_cast<CallShape::Kind>(run % 4);
  shape.root = (run / 4) % nranks;
  shape.count = 1 + static_cast<size_t>(call % 11);
  if (call % 97 == 0) shape.count = 300;    // 1.2 KB per block: above the packed size
  if (call % 211 == 0) shape.count = 5000;  // 20 KB: a whole buffer at the default 64 KiB
  // Scatter's and gather's one-shot input is the whole of the root's buffer.
  if ((shape.kind == CallShape::kScatter || shape.kind == CallShape::kGather) && shape.count > 11)
    shape.count /= static_cast<size_t>(nranks);
  return shape;
}

// Inputs of at most 8 bytes go four calls to a line, on a ring of 2048 calls, and a rank may run
// nearly that far ahead: runs of one kind longer than the ring, so that the ranks that wait for
// nobody wrap it while the readers pause, with now and then an input of a line of its own.
CallShape tinyShapeOf(int call, int nranks) {
  CallShape shape;
  const int run = call / 2600;
  shape.kind = static_cast<CallShape::Kind>(run % 4);
  shape.root = run % nranks;
  shape.count = 1 + static_cast<size_t>(call % 2);
  // Now and then 20 bytes, a line of its own. Such a call holds the rank ahead within 512 calls (the
  // lines' ring), so it comes less often than a ring of tiny calls.
  if (call % 2203 == 0) shape.count = 5;
  return shape;
}

// Readers pause for pauseMicros every pauseEvery calls.
struct Pauses {
  int every;
  unsigned micros;
};

std::vector<std::string> runCalls(collComm_t comm, int rank, int nranks, int calls, CallShape (*shapeOf)(int, int),
                                  Pauses pauses) {
  std::vector<std::string> failures;
  const std::string me = "rank " + std::to_string(rank) + ": ";
  std::vector<int32_t> send, recv, expected;
  // Every rank makes every call, whatever it found wrong, so that no rank waits for one that stopped.
  for (int call = 0; call < calls; ++call) {
    const CallShape s = shapeOf(call, nranks);
    const size_t n = static_cast<size_t>(nranks);
    const bool root = rank == s.root;
    // The readers (a broadcast's or scatter's non-roots, a gather's or reduce's root) pause now and
    // then, so that the ranks that wait for nobody run as far ahead as the buffers let them.
    const bool reads = (s.kind == CallShape::kBroadcast || s.kind == CallShape::kScatter) != root;
    if (reads && call % pauses.every == 0) usleep(pauses.micros);
    collResult_t rc = collSuccess;
    const char* what = "";
    switch (s.kind) {
      case CallShape::kBroadcast:
        what = "broadcast";
        send.assign(s.count, 0);
        for (size_t e = 0; e < s.count; ++e) send[e] = inputOf(s.root, call, e);
        recv.assign(s.count, kPoison);
        expected = send;
        rc = collBroadcast(root ? send.data() : nullptr, recv.data(), s.count, collInt32, s.root, comm, nullptr);
        break;
      case CallShape::kScatter:
        what = "scatter";
        send.assign(s.count * n, 0);
        for (size_t e = 0; e < send.size(); ++e) send[e] = inputOf(s.root, call, e);
        recv.assign(s.count, kPoison);
        expected.assign(send.begin() + static_cast<long>(rank * s.count),
                        send.begin() + static_cast<long>((rank + 1) * s.count));
        rc = collScatter(root ? send.data() : nullptr, recv.data(), s.count, collInt32, s.root, comm, nullptr);
        break;
      case CallShape::kGather:
        what = "gather";
        send.assign(s.count, 0);
        for (size_t e = 0; e < s.count; ++e) send[e] = inputOf(rank, call, e);
        recv.assign(root ? s.count * n : 1, kPoison);
        expected = recv;
        if (root)
          for (int r = 0; r < nranks; ++r)
            for (size_t e = 0; e < s.count; ++e) expected[r * s.count + e] = inputOf(r, call, e);
        rc = collGather(send.data(), root ? recv.data() : nullptr, s.count, collInt32, s.root, comm, nullptr);
        break;
      case CallShape::kReduce:
        what = "reduce";
        send.assign(s.count, 0);
        for (size_t e = 0; e < s.count; ++e) send[e] = inputOf(rank, call, e);
        recv.assign(s.count, kPoison);
        expected = recv;
        if (root)
          for (size_t e = 0; e < s.count; ++e) {
            int64_t sum = 0;
            for (int r = 0; r < nranks; ++r) sum += inputOf(r, call, e);
            expected[e] = static_cast<int32_t>(sum);
          }
        rc = collReduce(send.data(), root ? recv.data() : nullptr, s.count, collInt32, collSum, s.root, comm, nullptr);
        break;
    }
    const std::string where = me + "call " + std::to_string(call) + " (" + what + ", " + std::to_string(s.count) +
                              " elements, root " + std::to_string(s.root) + ")";
    if (rc != collSuccess) {
      failures.push_back(where + " failed: " + collGetLastError(comm));
      break;
    }
    for (size_t e = 0; e < expected.size() && failures.size() < 5; ++e)
      if (recv[e] != expected[e]) {
        failures.push_back(where + ": element " + std::to_string(e) + " is " + std::to_string(recv[e]) + ", expected " +
                           std::to_string(expected[e]));
        break;
      }
  }
  return failures;
}

class OneShotRunAhead : public ::testing::TestWithParam<int> {};

TEST_P(OneShotRunAhead, EveryCallDeliversItsOwnValues) {
  auto failures = runAsProcesses(GetParam(), [](collComm_t comm, int rank, int nranks) {
    return runCalls(comm, rank, nranks, 1800, shapeOf, {37, 300});
  });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST_P(OneShotRunAhead, TinyCallsAroundTheirWholeRing) {
  auto failures = runAsProcesses(GetParam(), [](collComm_t comm, int rank, int nranks) {
    // Pauses long enough for the others to run a whole ring of calls ahead (a microsecond or so
    // a call here).
    return runCalls(comm, rank, nranks, 4 * 2600, tinyShapeOf, {401, 10000});
  });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(Ranks, OneShotRunAhead, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

}  // namespace
}  // namespace colltest
