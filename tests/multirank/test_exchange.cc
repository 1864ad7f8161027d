// The exchange all-reduce (src/algorithms/exchange.cc) reduces the n inputs in rank order on every
// rank, so every rank must hold exactly the float sum ((x0 + x1) + x2) + ... of the inputs, bit for
// bit, whatever its own place. The inputs here are floats whose sums round differently in other
// orders (the multi-rank suite's small integers would not tell the orders apart), over sockets and
// shared memory, in place and out of place; and the planner must take it on its own for a small
// all-reduce over sockets.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace {

using colltest::joinFailures;
using colltest::RankBody;

// Rank r's input: floats of mixed magnitudes, so that the order of a sum changes its rounding.
std::vector<float> inputOf(int rank, size_t count) {
  std::mt19937 gen(1234u + static_cast<unsigned>(rank));
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-12, 12);
  std::vector<float> in(count);
  for (float& v : in) v = std::ldexp(mantissa(gen), exponent(gen)) * (gen() % 2 ? 1.0f : -1.0f);
  return in;
}

// The rank-order sum, as float additions.
std::vector<float> rankOrderSum(int nranks, size_t count) {
  std::vector<float> sum = inputOf(0, count);
  for (int r = 1; r < nranks; ++r) {
    std::vector<float> in = inputOf(r, count);
    for (size_t i = 0; i < count; ++i) sum[i] = sum[i] + in[i];
  }
  return sum;
}

RankBody rankOrderBody(bool inPlace) {
  return [inPlace](collComm_t comm, int rank, int nranks) {
    std::vector<std::string> failures;
    for (size_t count : {size_t{1}, size_t{3}, size_t{257}, size_t{4000}}) {
      std::vector<float> in = inputOf(rank, count);
      std::vector<float> out(count);
      std::memset(out.data(), 0xA7, count * sizeof(float));  // poison
      float* recv = inPlace ? in.data() : out.data();
      collResult_t rc = collAllReduce(in.data(), recv, count, collFloat32, collSum, comm, nullptr);
      if (rc != collSuccess) {
        failures.push_back("collAllReduce of " + std::to_string(count) + " floats: " + collGetLastError(comm));
        continue;
      }
      std::vector<float> want = rankOrderSum(nranks, count);
      int wrong = 0;
      for (size_t i = 0; i < count; ++i)
        if (std::memcmp(&recv[i], &want[i], sizeof(float)) != 0 && wrong++ < 3)
          failures.push_back("rank " + std::to_string(rank) + " count " + std::to_string(count) + " element " +
                             std::to_string(i) + ": " + std::to_string(recv[i]) + ", the rank-order sum is " +
                             std::to_string(want[i]));
    }
    return failures;
  };
}

std::function<void(int)> environment(const char* transports, const char* algo) {
  return [transports, algo](int) {
    setenv("COLL_TRANSPORTS", transports, 1);
    if (algo != nullptr) setenv("COLL_ALGO", algo, 1);
  };
}

struct Setting {
  int nranks;
  const char* transports;
  bool inPlace;
};

void PrintTo(const Setting& s, std::ostream* os) {
  *os << s.nranks << " ranks, COLL_TRANSPORTS=" << s.transports << (s.inPlace ? ", in place" : "");
}

class ExchangeRankOrder : public ::testing::TestWithParam<Setting> {};

TEST_P(ExchangeRankOrder, EveryRankHoldsTheRankOrderSumBitForBit) {
  const Setting s = GetParam();
  auto failures = colltest::runAsProcessesWithSetup(s.nranks, environment(s.transports, "allreduce:exchange"),
                                                    rankOrderBody(s.inPlace), colltest::initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(Exchange, ExchangeRankOrder,
                         ::testing::Values(Setting{2, "^shm", false}, Setting{3, "^shm", false},
                                           Setting{3, "^shm", true}, Setting{4, "^shm", true},
                                           Setting{3, "self,shm", false}, Setting{4, "self,shm", true}),
                         [](const ::testing::TestParamInfo<Setting>& info) {
                           return std::to_string(info.param.nranks) + "ranks_" +
                                  (info.param.transports[0] == '^' ? "sockets" : "shm") +
                                  (info.param.inPlace ? "_inplace" : "");
                         });

// Nothing forced: over sockets an all-reduce of up to 4000 floats among 3 ranks is the
// exchange's (the planner's model), so every rank holds the rank-order sum again.
TEST(ExchangeChosen, SmallAllReduceOverSocketsTakesIt) {
  auto failures = colltest::runAsProcessesWithSetup(3, environment("^shm", nullptr), rankOrderBody(false),
                                                    colltest::initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
