// The host planner keeps the last schedule it built per collective and reuses it while the call's
// shape stays the same (src/plan/host_planner.h). A kept schedule reused for a call it does not fit
// moves the wrong bytes, so calls here follow each other on one communicator changing one thing
// at a time: the root, the op (sum or average), the element size at the same count, the count,
// and back again; for the variable-count collectives, the split of one total between the ranks
// and the displacements. Over sockets only (COLL_TRANSPORTS=^shm), where every collective runs a
// schedule, and again with the ring and trees forced (the variable-count ones also over shared
// memory). Outputs are poisoned before every call and checked against values every rank computes
// for every rank.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

constexpr double kPoison = -7777.0;

// Rank r's input element e in call i: small integers, exact in float and double, so that sums and
// averages of up to 4 ranks are exact too.
double inputOf(int rank, int call, size_t e) { return static_cast<double>((rank + 1) * 16 + call % 8 + e % 5); }

struct Shape {
  enum Kind { kBroadcast, kReduce, kAllReduce } kind;
  int root;
  collRedOp_t op;
  collDataType_t type;
  size_t count;
};

// Runs of calls that differ from the previous one in one field only.
std::vector<Shape> shapes(int nranks) {
  std::vector<Shape> out;
  for (Shape::Kind kind : {Shape::kBroadcast, Shape::kReduce, Shape::kAllReduce}) {
    for (int root = 0; root < nranks; ++root) out.push_back({kind, root, collSum, collFloat32, 37});
    out.push_back({kind, 0, collSum, collFloat32, 37});
    out.push_back({kind, 0, collAvg, collFloat32, 37});
    out.push_back({kind, 0, collSum, collFloat32, 37});
    out.push_back({kind, 0, collSum, collFloat64, 37});
    out.push_back({kind, 0, collSum, collFloat32, 37});
    out.push_back({kind, 0, collSum, collFloat32, 5000});
    out.push_back({kind, nranks - 1, collAvg, collFloat64, 5000});
    out.push_back({kind, 0, collSum, collFloat32, 37});
  }
  return out;
}

template <typename T>
std::vector<std::string> runShape(collComm_t comm, int rank, int nranks, int call, const Shape& s) {
  std::vector<T> send(s.count), recv(s.count, static_cast<T>(kPoison)), expected(s.count, static_cast<T>(kPoison));
  for (size_t e = 0; e < s.count; ++e) send[e] = static_cast<T>(inputOf(rank, call, e));
  const bool root = rank == s.root;
  collResult_t rc = collSuccess;
  const char* what = "";
  if (s.kind == Shape::kBroadcast) {
    what = "broadcast";
    for (size_t e = 0; e < s.count; ++e) expected[e] = static_cast<T>(inputOf(s.root, call, e));
    rc = collBroadcast(send.data(), recv.data(), s.count, s.type, s.root, comm, nullptr);
  } else {
    what = s.kind == Shape::kReduce ? "reduce" : "all-reduce";
    if (s.kind == Shape::kAllReduce || root)
      for (size_t e = 0; e < s.count; ++e) {
        double sum = 0;
        for (int r = 0; r < nranks; ++r) sum += inputOf(r, call, e);
        expected[e] = static_cast<T>(s.op == collAvg ? sum / nranks : sum);
      }
    rc = s.kind == Shape::kReduce ? collReduce(send.data(), recv.data(), s.count, s.type, s.op, s.root, comm, nullptr)
                                  : collAllReduce(send.data(), recv.data(), s.count, s.type, s.op, comm, nullptr);
  }
  const std::string where = "rank " + std::to_string(rank) + ": call " + std::to_string(call) + " (" + what + ", " +
                            std::to_string(s.count) + (s.type == collFloat64 ? " doubles" : " floats") + ", root " +
                            std::to_string(s.root) + (s.op == collAvg ? ", avg" : ", sum") + ")";
  if (rc != collSuccess) return {where + " failed: " + collGetLastError(comm)};
  for (size_t e = 0; e < s.count; ++e) {
    // Averages of up to 4 ranks' small integers: exact in binary after at most two halvings, or
    // within float rounding for 3.
    const double tolerance = s.op == collAvg ? 1e-4 : 0;
    if (static_cast<double>(recv[e]) < static_cast<double>(expected[e]) - tolerance ||
        static_cast<double>(recv[e]) > static_cast<double>(expected[e]) + tolerance)
      return {where + ": element " + std::to_string(e) + " is " + std::to_string(static_cast<double>(recv[e])) +
              ", expected " + std::to_string(static_cast<double>(expected[e]))};
  }
  return {};
}

std::vector<std::string> changingShapes(collComm_t comm, int rank, int nranks) {
  std::vector<std::string> failures;
  const std::vector<Shape> all = shapes(nranks);
  // Twice through: the second pass starts with a schedule kept from the end of the first.
  for (int call = 0; call < 2 * static_cast<int>(all.size()); ++call) {
    const Shape& s = all[static_cast<size_t>(call) % all.size()];
    std::vector<std::string> found = s.type == collFloat64 ? runShape<double>(comm, rank, nranks, call, s)
                                                           : runShape<float>(comm, rank, nranks, call, s);
    failures.insert(failures.end(), found.begin(), found.end());
    if (!found.empty() && found[0].find("failed") != std::string::npos) break;  // the communicator is gone
  }
  return failures;
}

// A split of one total between the ranks, whether the gathered blocks leave gaps between them
// (displacements that are not the packed ones), and whether the elements are int32, not float.
struct Split {
  std::vector<size_t> counts;
  bool gaps;
  bool int32 = false;
};

// Runs of splits of 24 elements, and one of 5000, that differ from the previous one in the
// split, the displacements or the datatype only (an all-to-all-v's steps carry the call's
// datatype in their tags): a schedule kept for one fits none of the others.
std::vector<Split> splits(int nranks) {
  const size_t n = static_cast<size_t>(nranks);
  auto even = [n](size_t total) {
    std::vector<size_t> c(n, total / n);
    c.back() += total % n;
    return c;
  };
  std::vector<size_t> linear(n), zeroAtOne = even(24);
  size_t given = 0;
  for (size_t r = 0; r < n; ++r) given += linear[r] = 24 * (r + 1) / (n * (n + 1) / 2);
  linear.back() += 24 - given;
  if (n > 1) {
    zeroAtOne[0] += zeroAtOne[1];
    zeroAtOne[1] = 0;
  }
  return {{even(24), false},          {linear, false},         {linear, true},
          {even(24), false},          {even(24), false, true}, {zeroAtOne, false},
          {even(24), true},           {even(24), true, true},  {even(50000), false},
          {even(50000), false, true}, {even(24), false}};
}

std::vector<size_t> packed(const std::vector<size_t>& counts, size_t gap) {
  std::vector<size_t> displs(counts.size(), 0);
  for (size_t p = 1; p < counts.size(); ++p) displs[p] = displs[p - 1] + counts[p - 1] + gap;
  return displs;
}

template <typename T>
std::string checked(const std::vector<T>& got, const std::vector<T>& expected, const std::string& where) {
  for (size_t e = 0; e < got.size(); ++e)
    if (got[e] != expected[e])
      return where + ": element " + std::to_string(e) + " is " + std::to_string(got[e]) + ", expected " +
             std::to_string(expected[e]);
  return {};
}

// One all-gather-v, reduce-scatter-v and all-to-all-v of `split`, elements of T (`type`); the
// failures, or none.
template <typename T>
std::vector<std::string> runSplitOf(collComm_t comm, int rank, int nranks, int call, const Split& split,
                                    collDataType_t type) {
  const std::vector<size_t>& counts = split.counts;
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  const std::string where = "rank " + std::to_string(rank) + ": call " + std::to_string(call) + " (" +
                            std::to_string(total) + (split.int32 ? " int32" : " float") + (split.gaps ? ", gaps" : "") +
                            ")";
  const size_t me = static_cast<size_t>(rank);
  std::vector<std::string> failures;
  auto report = [&](collResult_t rc, const char* what, const std::vector<T>& got, const std::vector<T>& expected) {
    const std::string at = where + " " + what;
    std::string found = rc != collSuccess ? at + " failed: " + collGetLastError(comm) : checked(got, expected, at);
    if (!found.empty()) failures.push_back(found);
    return rc == collSuccess;
  };

  // All-gather-v: each block lands at its displacement; the gaps keep their poison.
  const std::vector<size_t> displs = packed(counts, split.gaps ? 3 : 0);
  std::vector<T> send(counts[me]);
  for (size_t e = 0; e < send.size(); ++e) send[e] = static_cast<T>(inputOf(rank, call, e));
  std::vector<T> gathered(displs.back() + counts.back() + 1, kPoison), expected = gathered;
  for (int p = 0; p < nranks; ++p)
    for (size_t e = 0; e < counts[p]; ++e) expected[displs[p] + e] = static_cast<T>(inputOf(p, call, e));
  if (!report(
          collAllGatherV(send.data(), counts[me], gathered.data(), counts.data(), displs.data(), type, comm, nullptr),
          "all-gather-v", gathered, expected))
    return failures;

  // Reduce-scatter-v: this rank's block of the sum, and a guard after it.
  const size_t offset = packed(counts, 0)[me];
  std::vector<T> whole(total);
  for (size_t e = 0; e < total; ++e) whole[e] = static_cast<T>(inputOf(rank, call, e));
  std::vector<T> block(counts[me] + 1, kPoison), sums = block;
  for (size_t e = 0; e < counts[me]; ++e) {
    double sum = 0;
    for (int q = 0; q < nranks; ++q) sum += inputOf(q, call, offset + e);
    sums[e] = static_cast<T>(sum);
  }
  if (!report(collReduceScatterV(whole.data(), block.data(), counts.data(), type, collSum, comm, nullptr),
              "reduce-scatter-v", block, sums))
    return failures;

  // All-to-all-v: rank a sends rank b counts[(a + b) % n] elements, each naming both.
  const size_t n = static_cast<size_t>(nranks);
  std::vector<size_t> sendcounts(n), recvcounts(n);
  for (size_t p = 0; p < n; ++p) {
    sendcounts[p] = counts[(me + p) % n];
    recvcounts[p] = counts[(p + me) % n];
  }
  const std::vector<size_t> sdispls = packed(sendcounts, 0), rdispls = packed(recvcounts, split.gaps ? 2 : 0);
  std::vector<T> out(sdispls.back() + sendcounts.back());
  for (size_t p = 0; p < n; ++p)
    for (size_t e = 0; e < sendcounts[p]; ++e) out[sdispls[p] + e] = static_cast<T>(inputOf(rank, call, p * 1000 + e));
  std::vector<T> in(rdispls.back() + recvcounts.back() + 1, kPoison), arrived = in;
  for (size_t p = 0; p < n; ++p)
    for (size_t e = 0; e < recvcounts[p]; ++e)
      arrived[rdispls[p] + e] = static_cast<T>(inputOf(static_cast<int>(p), call, me * 1000 + e));
  report(collAllToAllV(out.data(), sendcounts.data(), sdispls.data(), in.data(), recvcounts.data(), rdispls.data(),
                       type, comm, nullptr),
         "all-to-all-v", in, arrived);
  return failures;
}

std::vector<std::string> runSplit(collComm_t comm, int rank, int nranks, int call, const Split& split) {
  return split.int32 ? runSplitOf<int32_t>(comm, rank, nranks, call, split, collInt32)
                     : runSplitOf<float>(comm, rank, nranks, call, split, collFloat32);
}

std::vector<std::string> changingSplits(collComm_t comm, int rank, int nranks) {
  std::vector<std::string> failures;
  const std::vector<Split> all = splits(nranks);
  for (int call = 0; call < 2 * static_cast<int>(all.size()); ++call) {
    std::vector<std::string> found = runSplit(comm, rank, nranks, call, all[static_cast<size_t>(call) % all.size()]);
    failures.insert(failures.end(), found.begin(), found.end());
    if (!found.empty() && found.back().find("failed") != std::string::npos) break;  // the communicator is gone
  }
  return failures;
}

struct Setting {
  int nranks;
  const char* algo;  // COLL_ALGO, or nullptr for the planner's choice
};

class KeptSchedules : public ::testing::TestWithParam<Setting> {};

TEST_P(KeptSchedules, EveryCallFitsItsOwnShape) {
  const Setting setting = GetParam();
  auto setup = [setting](int) {
    setenv("COLL_TRANSPORTS", "^shm", 1);
    if (setting.algo != nullptr) setenv("COLL_ALGO", setting.algo, 1);
  };
  auto failures = runAsProcessesWithSetup(setting.nranks, setup, changingShapes, initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(Sockets, KeptSchedules,
                         ::testing::Values(Setting{2, nullptr}, Setting{3, nullptr}, Setting{4, nullptr},
                                           Setting{3, "allreduce:ring,reduce:tree,broadcast:tree"}),
                         [](const ::testing::TestParamInfo<Setting>& info) {
                           return std::to_string(info.param.nranks) + "ranks" +
                                  (info.param.algo != nullptr ? "_forced" : "");
                         });

// A kept all-to-all-v schedule still carries the datatype of the call it runs (its steps carry the
// call's tag): after a float call, rank 0 calls with int32 (as many bytes) where rank 1 calls with
// float again. Both must fail naming the datatypes, not move the bytes as if the calls matched.
std::vector<std::string> datatypesThatDifferAfterAKeptCall(collComm_t comm, int rank, int nranks) {
  const size_t n = static_cast<size_t>(nranks), per = 20000;  // a pair larger than a slot: a schedule
  const std::vector<size_t> counts(n, per), displs = packed(counts, 0);
  std::vector<float> out(n * per, 1.0f), in(n * per, 0.0f);
  const std::string who = "rank " + std::to_string(rank) + ": ";
  if (collAllToAllV(out.data(), counts.data(), displs.data(), in.data(), counts.data(), displs.data(), collFloat32,
                    comm, nullptr) != collSuccess)
    return {who + "the first call failed: " + collGetLastError(comm)};
  const collDataType_t type = rank == 0 ? collInt32 : collFloat32;
  if (collAllToAllV(out.data(), counts.data(), displs.data(), in.data(), counts.data(), displs.data(), type, comm,
                    nullptr) == collSuccess)
    return {who + "the call whose datatype differs between the ranks succeeded"};
  const std::string error = collGetLastError(comm);
  if (error.find("int32") == std::string::npos || error.find("float") == std::string::npos)
    return {who + "the error does not name both datatypes: " + error};
  return {};
}

TEST(KeptVariableSchedules, DatatypesThatDifferAfterAKeptCallFail) {
  auto setup = [](int) { setenv("COLL_TRANSPORTS", "^shm", 1); };
  auto failures = runAsProcessesWithSetup(2, setup, datatypesThatDifferAfterAKeptCall, initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// The variable-count collectives: over sockets as the fixed ones, and over shared memory with the
// ring forced (the one-shot path runs no schedule).
struct VariableSetting {
  int nranks;
  const char* transports;  // COLL_TRANSPORTS, or nullptr for every transport
  const char* algo;
};

class KeptVariableSchedules : public ::testing::TestWithParam<VariableSetting> {};

TEST_P(KeptVariableSchedules, EveryCallFitsItsOwnCounts) {
  const VariableSetting setting = GetParam();
  auto setup = [setting](int) {
    if (setting.transports != nullptr) setenv("COLL_TRANSPORTS", setting.transports, 1);
    if (setting.algo != nullptr) setenv("COLL_ALGO", setting.algo, 1);
  };
  auto failures = runAsProcessesWithSetup(setting.nranks, setup, changingSplits, initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(Counts, KeptVariableSchedules,
                         ::testing::Values(VariableSetting{2, "^shm", nullptr}, VariableSetting{3, "^shm", nullptr},
                                           VariableSetting{4, "^shm", nullptr},
                                           VariableSetting{3, nullptr, "allgatherv:ring,reducescatterv:ring"}),
                         [](const ::testing::TestParamInfo<VariableSetting>& info) {
                           return std::to_string(info.param.nranks) + "ranks" +
                                  (info.param.transports == nullptr ? "_shm_ring" : "_sockets");
                         });

}  // namespace
}  // namespace colltest
