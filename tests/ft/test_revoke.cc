// collCommRevoke: every pending and later call on the communicator, on every rank, fails with
// collRemoteError ("revoked") within a second, whether the rank waits in a call, is in no call,
// or is the rank whose other thread revoked. Ranks are processes launched as collrun does.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "collective.h"
#include "rank_job.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

constexpr int kRevokedAt = 0;  // board slot: when rank 0 revoked (steady ns)

// Rank 0 never joins the all-reduce that ranks 1 and 2 wait in; it revokes after 500 ms. They
// must return collRemoteError ("revoked") within a second; rank 3, in no call then, fails its
// next call at once.
std::vector<std::string> revokeBody(collComm_t comm, int rank, int, SharedBoard& board) {
  std::vector<std::string> failures;
  std::vector<float> data(1024, 1.0f);
  if (rank == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    board.slot[kRevokedAt].store(nowNs());
    if (collCommRevoke(comm) != collSuccess) failures.push_back(failure(rank, collGetLastError(comm)));
  } else if (rank == 3) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  }
  collResult_t rc = collAllReduce(data.data(), data.data(), data.size(), collFloat, collSum, comm, nullptr);
  const int64_t returned = nowNs();
  if (rc != collRemoteError)
    failures.push_back(failure(rank, std::string("expected collRemoteError, got ") + collGetErrorString(rc)));
  else if (!lastErrorMentions(comm, "revoked"))
    failures.push_back(failure(rank, std::string("the error does not say revoked: ") + collGetLastError(comm)));
  if (rank == 1 || rank == 2) {
    const double late = (returned - board.slot[kRevokedAt].load()) / 1e9;
    if (late > 1.0) failures.push_back(failure(rank, "returned " + std::to_string(late) + " s after the revoke"));
  }
  collCommDestroy(comm);
  return failures;
}

TEST(Revoke, EveryPendingAndLaterCallOnEveryRankFailsWithinASecond) {
  auto failures = runJob(4, revokeBody, 60000);  // only the revoke may end the wait
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// The rank blocked in the call is revoked by another of its own threads.
std::vector<std::string> revokeFromAnotherThread(collComm_t comm, int rank, int, SharedBoard&) {
  std::vector<std::string> failures;
  float value = 1.0f;
  if (rank == 1) {
    int64_t revokedAt = 0;
    std::thread revoker([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      revokedAt = nowNs();
      collCommRevoke(comm);
    });
    collResult_t rc = collAllReduce(&value, &value, 1, collFloat, collSum, comm, nullptr);
    const int64_t returned = nowNs();
    revoker.join();
    if (rc != collRemoteError) failures.push_back(failure(rank, collGetErrorString(rc)));
    if (returned - revokedAt > 1000000000) failures.push_back(failure(rank, "returned more than 1 s after the revoke"));
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    if (collAllReduce(&value, &value, 1, collFloat, collSum, comm, nullptr) != collRemoteError || !lastErrorMentions(comm, "revoked"))
      failures.push_back(failure(rank, std::string("a later call did not fail as revoked: ") + collGetLastError(comm)));
  }
  collCommDestroy(comm);
  return failures;
}

TEST(Revoke, FromAnotherThreadOfTheBlockedRank) {
  auto failures = runJob(3, revokeFromAnotherThread, 60000);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
