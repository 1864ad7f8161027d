// Where a collective has two valid plans, rank 0 chooses between them by measurement and tells
// the other ranks once per lease of calls (src/plan/tuner.h: SharedChoices); each rank
// counts a lease down by itself, per collective and size class. Ranks that counted differently
// would run different plans of one call, which moves the wrong bytes or never completes. Here
// direct reads are offered from 4 KiB (COLL_DIRECT_READ_BYTES), so small all-gathers and
// all-reduces of two size classes, interleaved in an irregular order, all go through the tuner
// for hundreds of calls (dozens of leases and runs of tries); every output is poisoned before its
// call and checked against values every rank computes for every rank.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

constexpr float kPoison = -7777.0f;

float inputOf(int rank, int call, size_t e) { return static_cast<float>((rank + 1) * 8 + call % 16 + e % 7); }

TEST(PlanLeases, RanksAgreeOnEveryTunedCall) {
  auto failures = runAsProcessesWithSetup(
      3,
      [](int) {
        setenv("COLL_TRANSPORTS", "shm,self", 1);
        setenv("COLL_DIRECT_READ_BYTES", "4096", 1);
        setenv("COLL_TIMEOUT_MS", "10000", 1);
      },
      [](collComm_t comm, int rank, int nranks) {
        std::vector<std::string> failures;
        const std::string me = "rank " + std::to_string(rank) + ": ";
        const int calls = 600;
        for (int call = 0; call < calls && failures.empty(); ++call) {
          // 2000 and 3000 floats: 8000 and 12000 bytes a rank, two size classes.
          const int kind = (call * 7 + call / 5) % 4;
          const size_t count = kind % 2 == 0 ? 2000 : 3000;
          const bool gather = kind < 2;
          std::vector<float> in(count), out(gather ? count * nranks : count, kPoison);
          for (size_t e = 0; e < count; ++e) in[e] = inputOf(rank, call, e);
          collResult_t rc = gather ? collAllGather(in.data(), out.data(), count, collFloat32, comm, nullptr)
                                   : collAllReduce(in.data(), out.data(), count, collFloat32, collSum, comm, nullptr);
          if (rc != collSuccess) {
            failures.push_back(me + "call " + std::to_string(call) + " failed: " + collGetLastError(comm));
            break;
          }
          for (size_t i = 0; i < out.size(); ++i) {
            float expected = 0;
            if (gather) {
              expected = inputOf(static_cast<int>(i / count), call, i % count);
            } else {
              for (int r = 0; r < nranks; ++r) expected += inputOf(r, call, i);
            }
            if (out[i] != expected) {
              failures.push_back(me + "call " + std::to_string(call) + (gather ? " (all-gather)" : " (all-reduce)") +
                                 ", element " + std::to_string(i) + " is " + std::to_string(out[i]) + ", expected " +
                                 std::to_string(expected));
              break;
            }
          }
        }
        return failures;
      },
      initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
