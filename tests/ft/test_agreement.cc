// Survivors that first disagree on who is gone still build one communicator: the agreement over
// a store alone (ranks as threads, src/ft/agreement.h), then whole shrinks of communicators whose
// ranks are threads sharing a store in memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "bootstrap/memory_store.h"
#include "collective.h"
#include "src/api_internal.h"
#include "common/error.h"
#include "src/ft/agreement.h"

namespace {

using std::chrono::milliseconds;

struct Outcome {
  bool excluded = false;  // this rank got collRemoteError saying so
  std::vector<int> decision;
};

// Runs the agreement on `ranks` (threads) with each one's first exclusions; the others are gone
// and post nothing.
std::vector<Outcome> agree(int nranks, const std::vector<std::vector<int>>& firstExclusions,
                           const std::vector<int>& ranks, milliseconds patience) {
  coll::bootstrap::MemoryStore store;
  std::vector<Outcome> outcomes(nranks);
  std::vector<std::thread> threads;
  for (int r : ranks) {
    threads.emplace_back([&, r] {
      coll::ft::AgreementInput input;
      input.rank = r;
      input.nranks = nranks;
      input.excluded = firstExclusions[r];
      input.patience = patience;
      input.deadline = coll::Clock::now() + std::chrono::seconds(30);
      try {
        outcomes[r].decision = coll::ft::agreeOnExcluded(store, input);
      } catch (const coll::CollError& e) {
        outcomes[r].excluded = e.code() == collRemoteError;
      }
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

TEST(ShrinkAgreement, SurvivorsThatSawDifferentFailuresAgreeOnTheirUnion) {
  // Rank 0 saw rank 3 go, rank 1 saw rank 2 go; ranks 2 and 3 are gone.
  auto outcomes = agree(4, {{3}, {2}, {}, {}}, {0, 1}, milliseconds(20000));
  for (int r : {0, 1}) {
    EXPECT_FALSE(outcomes[r].excluded) << "rank " << r;
    EXPECT_EQ(outcomes[r].decision, (std::vector<int>{2, 3})) << "rank " << r;
  }
}

TEST(ShrinkAgreement, ARankThatSawNothingWaitsForTheOthersViewsNotForItsPatience) {
  // Rank 2 is gone; only rank 0 knows. Ranks 1 and 3 learn it from rank 0's view at once.
  const auto start = std::chrono::steady_clock::now();
  auto outcomes = agree(4, {{2}, {}, {}, {}}, {0, 1, 3}, milliseconds(20000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  for (int r : {0, 1, 3}) EXPECT_EQ(outcomes[r].decision, (std::vector<int>{2})) << "rank " << r;
}

TEST(ShrinkAgreement, ASilentRankIsExcludedAfterThePatience) {
  // Nobody knows rank 1 is gone: it is excluded once it posted nothing for the patience.
  auto outcomes = agree(3, {{}, {}, {}}, {0, 2}, milliseconds(300));
  for (int r : {0, 2}) EXPECT_EQ(outcomes[r].decision, (std::vector<int>{1})) << "rank " << r;
}

TEST(ShrinkAgreement, ALiveRankThatAnotherExcludesLearnsItIsOut) {
  // Rank 0 excludes rank 2, which is alive and shrinking: everyone follows the union.
  auto outcomes = agree(4, {{2}, {}, {}, {}}, {0, 1, 2, 3}, milliseconds(20000));
  EXPECT_TRUE(outcomes[2].excluded);
  for (int r : {0, 1, 3}) EXPECT_EQ(outcomes[r].decision, (std::vector<int>{2})) << "rank " << r;
}

TEST(ShrinkAgreement, RankListsAreCheckedAsBytesFromThePeers) {
  EXPECT_EQ(coll::ft::parseRankList("5,2,2", 8, "a view"), (std::vector<int>{2, 5}));
  EXPECT_THROW(coll::ft::parseRankList("1,9", 8, "a view"), coll::CollError);
  EXPECT_THROW(coll::ft::parseRankList("1,,2", 8, "a view"), coll::CollError);
  EXPECT_THROW(coll::ft::parseRankList("x", 8, "a view"), coll::CollError);
}

// Whole communicators, ranks as threads on one store in memory: `shrinking` call collCommShrink
// with their own lists; the others never do. Each shrinking rank reports its new size and rank
// and the sum of an all-reduce of (old rank + 1) on the new communicator, or -1 when excluded.
struct ShrinkResult {
  int size = 0, rank = -1;
  float sum = 0;
  collResult_t rc = collSuccess;
};

std::vector<ShrinkResult> shrinkThreads(int nranks, const std::vector<std::vector<int>>& lists,
                                        const std::vector<int>& shrinking) {
  auto store = std::make_shared<coll::bootstrap::MemoryStore>();
  std::vector<ShrinkResult> results(nranks);
  std::vector<collComm_t> comms(nranks, nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r)
    threads.emplace_back([&, r] { EXPECT_EQ(coll::commInitWithStore(&comms[r], store, nranks, r, nullptr), collSuccess); });
  for (auto& t : threads) t.join();
  threads.clear();
  for (int r : shrinking) {
    threads.emplace_back([&, r] {
      collComm_t child = nullptr;
      ShrinkResult& out = results[r];
      out.rc = collCommShrink(comms[r], lists[r].data(), static_cast<int>(lists[r].size()), &child, nullptr,
                              COLL_SHRINK_DEFAULT);
      if (out.rc != collSuccess) return;
      collCommCount(child, &out.size);
      collCommUserRank(child, &out.rank);
      float value = static_cast<float>(r + 1);
      if (collAllReduce(&value, &out.sum, 1, collFloat, collSum, child, nullptr) != collSuccess) out.sum = -1;
      collCommDestroy(child);
    });
  }
  for (auto& t : threads) t.join();
  for (collComm_t c : comms) collCommDestroy(c);
  return results;
}

TEST(ShrinkThreads, SurvivorsWithDifferentListsBuildOneCommunicator) {
  // Ranks 2 and 3 are gone (they never shrink); rank 0 names 3, rank 1 names 2.
  auto results = shrinkThreads(4, {{3}, {2}, {}, {}}, {0, 1});
  for (int r : {0, 1}) {
    EXPECT_EQ(results[r].rc, collSuccess) << "rank " << r;
    EXPECT_EQ(results[r].size, 2) << "rank " << r;
    EXPECT_EQ(results[r].rank, r);
    EXPECT_EQ(results[r].sum, 3.0f) << "rank " << r;  // 1 + 2
  }
}

TEST(ShrinkThreads, AnExcludedLiveRankFailsAndTheOthersGoOn) {
  auto results = shrinkThreads(4, {{2}, {}, {}, {}}, {0, 1, 2, 3});
  EXPECT_EQ(results[2].rc, collRemoteError);
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(results[r].rc, collSuccess) << "rank " << r;
    EXPECT_EQ(results[r].size, 3);
    EXPECT_EQ(results[r].sum, 1.0f + 2.0f + 4.0f);
  }
  EXPECT_EQ(results[3].rank, 2);  // ranks keep their order
}

TEST(ShrinkThreads, ArgumentsAreChecked) {
  auto store = std::make_shared<coll::bootstrap::MemoryStore>();
  collComm_t comm = nullptr;
  ASSERT_EQ(coll::commInitWithStore(&comm, store, 1, 0, nullptr), collSuccess);
  collComm_t child = nullptr;
  const int outside = 5, self = 0;
  EXPECT_EQ(collCommShrink(comm, &outside, 1, &child, nullptr, 0), collInvalidArgument);
  EXPECT_NE(std::string(collGetLastError(comm)).find("excludeRanksList[0] is 5"), std::string::npos);
  EXPECT_EQ(collCommShrink(comm, &self, 1, &child, nullptr, 0), collInvalidArgument);
  EXPECT_EQ(collCommShrink(comm, nullptr, 1, &child, nullptr, 0), collInvalidArgument);
  EXPECT_EQ(collCommShrink(comm, nullptr, 0, &child, nullptr, 7), collInvalidArgument);
  EXPECT_EQ(collCommShrink(comm, nullptr, 0, nullptr, nullptr, 0), collInvalidArgument);
  int count = -1;
  EXPECT_EQ(collCommExcludedRanks(comm, nullptr, 0, &count), collSuccess);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(collCommDestroy(comm), collSuccess);
}

}  // namespace
