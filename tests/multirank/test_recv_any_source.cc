// collRecvAny: a receive from any source takes the next message any rank sends, reports its
// sender, and mixes with named receives and collectives; ranks as threads and as processes.
// The case that decides the design: a peer that sends nothing and has gone on into a ring
// collective already has its share of that collective in the receiver's FIFO, which a receive
// from any source must not take for a message (the sender it must find is another, slower rank).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

// What rank `sender` sends in round `round`: `count` int32 words, each naming both.
std::vector<int32_t> messageOf(int sender, int round, size_t count) {
  std::vector<int32_t> words(count);
  for (size_t i = 0; i < count; ++i) words[i] = sender * 1000000 + round * 1000 + static_cast<int32_t>(i % 1000);
  return words;
}

std::string failureOf(const char* what, int rank, collComm_t comm) {
  return std::string(what) + " on rank " + std::to_string(rank) + ": " + collGetLastError(comm);
}

// Every other rank sends rank 0 one message per round; rank 0 takes them from any source and
// must see each sender once per round with its own words. Counts cover a zero-byte message, one
// slot, and messages spread over many slots (1 MiB, past the FIFO's depth by default).
RankBody manyToOne(size_t count, int rounds) {
  return [count, rounds](collComm_t comm, int rank, int nranks) {
    std::vector<std::string> failures;
    for (int round = 0; round < rounds; ++round) {
      if (rank != 0) {
        std::vector<int32_t> words = messageOf(rank, round, count);
        if (collSend(words.data(), count, collInt32, 0, comm, nullptr) != collSuccess)
          failures.push_back(failureOf("collSend", rank, comm));
      } else {
        std::vector<int> seen;
        for (int i = 1; i < nranks; ++i) {
          std::vector<int32_t> got(count + 1, -7);  // one word past the message stays untouched
          int source = -1;
          if (collRecvAny(got.data(), count, collInt32, &source, comm, nullptr) != collSuccess) {
            failures.push_back(failureOf("collRecvAny", rank, comm));
            return failures;
          }
          seen.push_back(source);
          std::vector<int32_t> want = messageOf(source, round, count);
          want.push_back(-7);
          if (source < 1 || source >= nranks || got != want)
            failures.push_back("round " + std::to_string(round) + ": a message reported from rank " +
                               std::to_string(source) + " does not hold that rank's words");
        }
        std::sort(seen.begin(), seen.end());
        for (int i = 1; i < nranks; ++i)
          if (seen[i - 1] != i)
            failures.push_back("round " + std::to_string(round) + ": rank " + std::to_string(i) +
                               " was not reported exactly once");
      }
      // A sender must not run a round ahead: rank 0 would rightly take its next message first.
      if (collBarrier(comm, nullptr) != collSuccess) failures.push_back(failureOf("collBarrier", rank, comm));
    }
    return failures;
  };
}

// Rank nranks-1 goes straight into a ring all-reduce, whose first slice it sends rank 0; rank 1
// sends rank 0 a message after a pause. Rank 0's receive from any source must report rank 1.
RankBody collectiveBytesAreNoMessage() {
  return [](collComm_t comm, int rank, int nranks) {
    std::vector<std::string> failures;
    const size_t count = 64 << 10;  // floats: 256 KiB, many slots of the ring
    std::vector<float> data(count, 1.0f);
    if (rank == 1) {
      usleep(200 * 1000);
      int32_t word = 4242;
      if (collSend(&word, 1, collInt32, 0, comm, nullptr) != collSuccess)
        failures.push_back(failureOf("collSend", rank, comm));
    } else if (rank == 0) {
      int32_t word = 0;
      int source = -1;
      if (collRecvAny(&word, 1, collInt32, &source, comm, nullptr) != collSuccess)
        failures.push_back(failureOf("collRecvAny", rank, comm));
      else if (source != 1 || word != 4242)
        failures.push_back("collRecvAny reported rank " + std::to_string(source) + " with word " +
                           std::to_string(word) + ": expected rank 1's 4242");
    }
    if (collAllReduce(data.data(), data.data(), count, collFloat32, collSum, comm, nullptr) != collSuccess)
      failures.push_back(failureOf("collAllReduce", rank, comm));
    else if (data[0] != static_cast<float>(nranks) || data[count - 1] != static_cast<float>(nranks))
      failures.push_back("the all-reduce after the receive gave " + std::to_string(data[0]));
    return failures;
  };
}

// Rank 1 sends two messages; rank 0 takes the first by name and the second from any source.
RankBody namedThenAny() {
  return [](collComm_t comm, int rank, int) {
    std::vector<std::string> failures;
    if (rank == 1) {
      for (int32_t word : {10, 20})
        if (collSend(&word, 1, collInt32, 0, comm, nullptr) != collSuccess)
          failures.push_back(failureOf("collSend", rank, comm));
    } else if (rank == 0) {
      int32_t first = 0, second = 0;
      int source = -1;
      if (collRecv(&first, 1, collInt32, 1, comm, nullptr) != collSuccess ||
          collRecvAny(&second, 1, collInt32, &source, comm, nullptr) != collSuccess)
        failures.push_back(failureOf("collRecv, then collRecvAny", rank, comm));
      else if (first != 10 || second != 20 || source != 1)
        failures.push_back("named then any: got " + std::to_string(first) + ", then " + std::to_string(second) +
                           " from rank " + std::to_string(source) + "; expected 10, then 20 from rank 1");
    }
    if (collBarrier(comm, nullptr) != collSuccess) failures.push_back(failureOf("collBarrier", rank, comm));
    return failures;
  };
}

class RecvAnyThreads : public ::testing::TestWithParam<int> {};
class RecvAnyProcesses : public ::testing::TestWithParam<int> {};

TEST_P(RecvAnyThreads, ManyToOneSmall) { EXPECT_EQ(joinFailures(runAsThreads(GetParam(), manyToOne(3, 20))), ""); }
TEST_P(RecvAnyThreads, ManyToOneEmptyMessages) {
  EXPECT_EQ(joinFailures(runAsThreads(GetParam(), manyToOne(0, 5))), "");
}
TEST_P(RecvAnyThreads, NamedThenAny) { EXPECT_EQ(joinFailures(runAsThreads(GetParam(), namedThenAny())), ""); }
TEST_P(RecvAnyThreads, CollectiveBytesAreNoMessage) {
  EXPECT_EQ(joinFailures(runAsThreads(GetParam(), collectiveBytesAreNoMessage())), "");
}
TEST_P(RecvAnyProcesses, ManyToOneSmall) { EXPECT_EQ(joinFailures(runAsProcesses(GetParam(), manyToOne(5, 20))), ""); }
TEST_P(RecvAnyProcesses, ManyToOneLarge) {
  EXPECT_EQ(joinFailures(runAsProcesses(GetParam(), manyToOne(256 << 10, 3))), "");
}
TEST_P(RecvAnyProcesses, NamedThenAny) { EXPECT_EQ(joinFailures(runAsProcesses(GetParam(), namedThenAny())), ""); }
// The ring's slices must travel through the FIFOs: in the one-shot area or by direct reads they
// would never be in the FIFO the receive could misread.
TEST_P(RecvAnyProcesses, CollectiveBytesAreNoMessage) {
  auto setup = [](int) {
    setenv("COLL_ALGO", "allreduce:ring", 1);
    setenv("COLL_ONESHOT_BYTES", "64", 1);
  };
  EXPECT_EQ(joinFailures(runAsProcessesWithSetup(GetParam(), setup, collectiveBytesAreNoMessage(), initMustSucceed())),
            "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, RecvAnyThreads, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });
INSTANTIATE_TEST_SUITE_P(Ranks, RecvAnyProcesses, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

// What collRecvAny refuses, and says so, without touching the buffer or any peer.
TEST(RecvAnyErrors, RefusedArgumentsAndPlaces) {
  auto body = [](collComm_t comm, int rank, int) {
    std::vector<std::string> failures;
    int32_t word = 5;
    int source = -9;
    auto expect = [&](collResult_t got, collResult_t want, const char* what, const char* words) {
      std::string message = collGetLastError(comm);
      if (got != want || message.find(words) == std::string::npos)
        failures.push_back(std::string(what) + ": result " + std::to_string(got) + ", message \"" + message + "\"");
    };
    if (rank == 0) {
      int available = -1;
      if (collCommRecvAnyAvailable(comm, &available) != collSuccess || available != 1)
        failures.push_back("collCommRecvAnyAvailable over shared memory: " + std::to_string(available));
      expect(collRecvAny(&word, 1, collInt32, nullptr, comm, nullptr), collInvalidArgument, "a NULL source",
             "source is NULL");
      expect(collRecvAny(nullptr, 1, collInt32, &source, comm, nullptr), collInvalidArgument, "a NULL buffer",
             "collRecvAny");
      expect(collRecvAny(&word, 1, collInt32, &source, comm, reinterpret_cast<collStream_t>(0x1)), collInvalidUsage,
             "a stream", "host buffers");
      collGroupStart();
      expect(collRecvAny(&word, 1, collInt32, &source, comm, nullptr), collInvalidUsage, "inside a group",
             "outside the group");
      collGroupEnd();
      expect(collRecvAny(&word, 1, collInt32, &source, nullptr, nullptr), collInvalidArgument, "a NULL comm",
             "comm is NULL");
      if (word != 5 || source != -9) failures.push_back("a refused collRecvAny wrote its outputs");
    }
    if (collBarrier(comm, nullptr) != collSuccess) failures.push_back(failureOf("collBarrier", rank, comm));
    return failures;
  };
  EXPECT_EQ(joinFailures(runAsThreads(2, body)), "");
}

// Without shared memory between every rank there are no counts to read: refused, with the reason,
// and collCommRecvAnyAvailable says so on every rank. Runs as "net." (COLL_TRANSPORTS=^shm, set
// for the whole test: the library reads its settings once per process).
TEST(RecvAnyErrors, RefusedOverSocketsAlone) {
  const char* transports = getenv("COLL_TRANSPORTS");
  if (transports == nullptr || std::string(transports) != "^shm") GTEST_SKIP() << "runs with COLL_TRANSPORTS=^shm";
  auto body = [](collComm_t comm, int rank, int) {
    std::vector<std::string> failures;
    int available = -1;
    if (collCommRecvAnyAvailable(comm, &available) != collSuccess || available != 0)
      failures.push_back("rank " + std::to_string(rank) +
                         ": collCommRecvAnyAvailable over sockets: " + std::to_string(available));
    int32_t word = 0;
    int source = -1;
    collResult_t rc = collRecvAny(&word, 1, collInt32, &source, comm, nullptr);
    std::string message = collGetLastError(comm);
    if (rc != collInvalidUsage || message.find("shared memory") == std::string::npos)
      failures.push_back("collRecvAny over sockets: result " + std::to_string(rc) + ", message \"" + message + "\"");
    // Still usable: a refused call touched nothing.
    if (collBarrier(comm, nullptr) != collSuccess) failures.push_back(failureOf("collBarrier", rank, comm));
    return failures;
  };
  EXPECT_EQ(joinFailures(runAsProcesses(2, body)), "");
}

// No rank sends: the receive ends with collTimeout at the communicator's timeout, naming itself.
TEST(RecvAnyErrors, NoSenderTimesOut) {
  auto body = [](collComm_t comm, int rank, int) {
    std::vector<std::string> failures;
    if (rank == 0) {
      int32_t word = 0;
      int source = -1;
      collResult_t rc = collRecvAny(&word, 1, collInt32, &source, comm, nullptr);
      std::string message = collGetLastError(comm);
      if (rc != collTimeout || message.find("RecvAny") == std::string::npos)
        failures.push_back("collRecvAny with no sender: result " + std::to_string(rc) + ", message \"" + message +
                           "\"");
    } else {
      sleep(3);  // outlives rank 0's timeout, so that rank 0 sees no failure of its peer first
    }
    return failures;
  };
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 1500;
  EXPECT_EQ(joinFailures(runAsThreads(2, body, &config)), "");
}

}  // namespace
}  // namespace colltest
