// The host planner keeps the last schedule it built per collective and reuses it while the call's
// shape stays the same (src/plan/host_planner.h). A kept schedule reused for a call it does not fit
// moves the wrong bytes, so calls here follow each other on one communicator changing one thing
// at a time: the root, the op (sum or average), the element size at the same count, the count,
// and back again. Over sockets only (COLL_TRANSPORTS=^shm), where every collective runs a
// schedule, and again with the ring and trees forced. Outputs are poisoned before every call and checked
// against values every rank computes for every rank.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
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

}  // namespace
}  // namespace colltest
