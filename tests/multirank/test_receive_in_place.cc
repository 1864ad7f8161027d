// Receiving straight into the caller's memory (transport/transport.h, offerLanding): over shared
// memory a send/receive group's large sends go by a single copy that the receiver reads into its
// output (cross-memory attach), and over sockets a frame bound for the output is read there. Each
// case checks every received value against what the sender sent, and the domains' count of
// slices received in place, which must be non-zero where the path should run and zero where it
// should not (COLL_SHM_SINGLE_COPY_BYTES=0, or a message above a window the user set), so the
// count is not vacuous. A group of sends
// alone must stay eager: each rank sends before it receives, outside any group, and neither waits
// for the other.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"
#include "src/api_internal.h"
#include "src/comm.h"
#include "src/plan/tuner.h"
#include "transport/local_memory.h"
#include "transport_counts.h"

namespace colltest {
namespace {

uint64_t receivedInPlace(collComm_t comm) { return transportCount(comm, coll::transport::kReceivedInPlace); }

// Rank r's value at index i: every rank can compute every other's.
float valueOf(int rank, size_t i) { return static_cast<float>(rank * 1000003 + static_cast<int>(i % 65521)); }

// Sends `count` floats to the next rank and receives as many from the previous one, in a group.
std::vector<std::string> exchange(collComm_t comm, int rank, int nranks, size_t count, int rounds) {
  std::vector<std::string> failures;
  const std::string me = "rank " + std::to_string(rank) + ": ";
  std::vector<float> out(count), in(count + 1);
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < count; ++i) out[i] = valueOf(rank, i) + static_cast<float>(round);
    std::fill(in.begin(), in.end(), -1.0f);
    collResult_t rc = collGroupStart();
    if (rc == collSuccess) rc = collSend(out.data(), count, collFloat32, next, comm, nullptr);
    if (rc == collSuccess) rc = collRecv(in.data(), count, collFloat32, prev, comm, nullptr);
    collResult_t end = collGroupEnd();
    // The caller may reuse its send buffer at once: a single copy must have been read by now.
    std::fill(out.begin(), out.end(), -7.0f);
    if (rc != collSuccess || end != collSuccess) {
      failures.push_back(me + "send/recv failed: " + collGetLastError(comm));
      return failures;
    }
    for (size_t i = 0; i < count; ++i) {
      float expected = valueOf(prev, i) + static_cast<float>(round);
      if (in[i] != expected) {
        failures.push_back(me + "round " + std::to_string(round) + ", element " + std::to_string(i) + " is " +
                           std::to_string(in[i]) + ", expected " + std::to_string(expected));
        return failures;
      }
    }
    if (in[count] != -1.0f) failures.push_back(me + "wrote past the receive buffer");
  }
  return failures;
}

// Whether slices must have been received in place.
enum class InPlace {
  kYes,
  kNo,
  // Only where every rank has a core: single copies are off by default where ranks share cores.
  kWhenRanksHaveCores,
};

struct Expectation {
  const char* name;
  const char* env;  // "NAME=VALUE NAME=VALUE" set in every rank before init
  int nranks;
  size_t count;  // floats each rank sends
  InPlace inPlace;
  // Send/receive groups in a row. Above the window the host engine times the FIFO and single
  // copies (PlanTuner: a first run of 6 calls through the FIFO, then 6 by single copy), so 20
  // calls take both, and 3 the FIFO only.
  int rounds = 3;
};

void PrintTo(const Expectation& e, std::ostream* os) { *os << e.name << " (" << e.env << ")"; }

class ReceiveInPlace : public ::testing::TestWithParam<Expectation> {};

TEST_P(ReceiveInPlace, ValuesAndCount) {
  const Expectation e = GetParam();
  auto failures = runAsProcessesWithSetup(
      e.nranks,
      [&](int) {
        std::string settings = e.env;
        size_t start = 0;
        while (start < settings.size()) {
          size_t space = settings.find(' ', start);
          std::string pair = settings.substr(start, space == std::string::npos ? std::string::npos : space - start);
          size_t eq = pair.find('=');
          if (eq != std::string::npos) setenv(pair.substr(0, eq).c_str(), pair.substr(eq + 1).c_str(), 1);
          if (space == std::string::npos) break;
          start = space + 1;
        }
      },
      [&](collComm_t comm, int rank, int nranks) {
        std::vector<std::string> failures = exchange(comm, rank, nranks, e.count, e.rounds);
        uint64_t count = receivedInPlace(comm);
        const bool inPlace = e.inPlace == InPlace::kYes ||
                             (e.inPlace == InPlace::kWhenRanksHaveCores && nranks <= sysconf(_SC_NPROCESSORS_ONLN));
        if (inPlace && count == 0)
          failures.push_back("rank " + std::to_string(rank) + ": no slice was received in place");
        if (!inPlace && count != 0)
          failures.push_back("rank " + std::to_string(rank) + ": " + std::to_string(count) +
                             " slices were received in place where that path is off");
        return failures;
      },
      initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(
    Paths, ReceiveInPlace,
    // 300,007 floats: 1.2 MB, ten slices of 128 KiB and an odd tail; 12,289 floats: 48 KiB and 4
    // bytes, one slice, within the default single-copy window (32-64 KiB).
    ::testing::Values(
        Expectation{"shm2", "COLL_TRANSPORTS=shm,self COLL_SHM_SINGLE_COPY_MAX_BYTES=16777216", 2, 300007,
                    InPlace::kYes},
        // Set explicitly, single copies run where ranks share cores too.
        Expectation{"shm3",
                    "COLL_TRANSPORTS=shm,self COLL_SHM_SINGLE_COPY_BYTES=32768 COLL_SHM_SINGLE_COPY_MAX_BYTES=16777216",
                    3, 300007, InPlace::kYes},
        Expectation{"shmDefault", "COLL_TRANSPORTS=shm,self", 2, 12289, InPlace::kWhenRanksHaveCores},
        Expectation{"shmDefault3", "COLL_TRANSPORTS=shm,self", 3, 12289, InPlace::kWhenRanksHaveCores},
        // The window set by the user: larger sends always go through the FIFO.
        Expectation{"shmAboveTheWindow", "COLL_TRANSPORTS=shm,self COLL_SHM_SINGLE_COPY_MAX_BYTES=65536", 2, 300007,
                    InPlace::kNo, 20},
        // Unset, larger sends take single copies now and then, by measurement (host_engine.h);
        // where ranks outnumber cores (3 ranks on a 2-core machine), by rank 0's measurement.
        Expectation{"shmMeasuredAboveTheWindow", "COLL_TRANSPORTS=shm,self", 2, 300007, InPlace::kYes, 20},
        Expectation{"shmMeasuredAboveTheWindow3", "COLL_TRANSPORTS=shm,self", 3, 300007, InPlace::kYes, 20},
        Expectation{"shmOff", "COLL_TRANSPORTS=shm,self COLL_SHM_SINGLE_COPY_BYTES=0", 2, 12289, InPlace::kNo},
        Expectation{"sockets2", "COLL_TRANSPORTS=net,self", 2, 300007, InPlace::kYes},
        Expectation{"sockets3", "COLL_TRANSPORTS=net,self COLL_SOCKET_NSOCKS=3 COLL_NET_FIFO_DEPTH=2", 3, 300007,
                    InPlace::kYes}),
    [](const ::testing::TestParamInfo<Expectation>& info) { return std::string(info.param.name); });

// A single copy stands for many slices of its message (shm_connection.h). A receive that
// expects fewer or more bytes than were sent must end in an error on the receiver, with nothing
// written outside its buffer, and the sender, whose buffer is never acknowledged as read, must
// learn of the failure instead of waiting for ever.
TEST(ReceiveInPlaceSingleCopy, SizeMismatchFailsWithoutWritingPastTheBuffer) {
  for (const size_t received : {size_t{200000}, size_t{400009}}) {
    SCOPED_TRACE("received " + std::to_string(received) + " floats of 300007");
    auto failures = runAsProcessesWithSetup(
        2,
        [](int) { setenv("COLL_TRANSPORTS", "shm,self", 1), setenv("COLL_SHM_SINGLE_COPY_MAX_BYTES", "16777216", 1); },
        [&](collComm_t comm, int rank, int) {
          std::vector<std::string> failures;
          const size_t sent = 300007;
          std::vector<float> out(sent), in(received + 1, -1.0f);
          for (size_t i = 0; i < sent; ++i) out[i] = valueOf(rank, i);
          collResult_t rc = collGroupStart();
          if (rank == 0) {
            if (rc == collSuccess) rc = collSend(out.data(), sent, collFloat32, 1, comm, nullptr);
            if (rc == collSuccess) rc = collRecv(in.data(), 1, collFloat32, 1, comm, nullptr);
          } else {
            if (rc == collSuccess) rc = collSend(out.data(), 1, collFloat32, 0, comm, nullptr);
            if (rc == collSuccess) rc = collRecv(in.data(), received, collFloat32, 0, comm, nullptr);
          }
          collResult_t end = collGroupEnd();
          const std::string me = "rank " + std::to_string(rank) + ": ";
          if (rc == collSuccess && end == collSuccess) failures.push_back(me + "the mismatched exchange succeeded");
          const size_t filled = rank == 0 ? 1 : received;
          if (in[filled] != -1.0f) failures.push_back(me + "wrote past the receive buffer");
          return failures;
        },
        initMustSucceed());
    EXPECT_TRUE(failures.empty()) << joinFailures(failures);
  }
}

// Where the host's ranks outnumber its cores, every rank sends a message above the single-copy
// window the way rank 0 does (host_engine.h, its NativeArea's largeSendPlans). Rank 0 sends
// nothing large here, so the plan it holds is the one this test writes: rank 1's sends to rank 2
// must go through the FIFO (no slice received in place) while it says so, and by single copy
// (slices received in place) while it says that, in turn.
TEST(ReceiveInPlaceCrowded, EveryRankSendsTheWayRankZeroDoes) {
  const int nranks = static_cast<int>(std::max(3L, sysconf(_SC_NPROCESSORS_ONLN) + 1));
  auto failures = runAsProcessesWithSetup(
      nranks, [](int) { setenv("COLL_TRANSPORTS", "shm,self", 1); },
      [&](collComm_t comm, int rank, int) {
        std::vector<std::string> failures;
        const std::string me = "rank " + std::to_string(rank) + ": ";
        coll::transport::LocalMemory* memory = coll::communicatorOf(comm)->localMemory();
        if (memory == nullptr) return std::vector<std::string>{me + "no memory that every rank maps"};
        const size_t count = 300007;
        std::atomic<uint8_t>& plan =
            memory->area(0)->largeSendPlans[coll::PlanTuner::sizeClassOf(count * sizeof(float))];
        std::vector<float> out(count), in(count + 1);
        float ack = 0;
        using coll::transport::NativeArea;
        for (const uint8_t way : {NativeArea::kSendByFifo, NativeArea::kSendBySingleCopy, NativeArea::kSendByFifo}) {
          const bool single = way == NativeArea::kSendBySingleCopy;
          if (rank == 0) plan.store(way);
          if (collBarrier(comm, nullptr) != collSuccess) return std::vector<std::string>{me + collGetLastError(comm)};
          const uint64_t before = receivedInPlace(comm);
          for (size_t i = 0; i < count; ++i) out[i] = valueOf(rank, i) + (single ? 1.0f : 0.0f);
          std::fill(in.begin(), in.end(), -1.0f);
          collResult_t rc = collGroupStart();
          if (rank == 1 && rc == collSuccess) rc = collSend(out.data(), count, collFloat32, 2, comm, nullptr);
          if (rank == 1 && rc == collSuccess) rc = collRecv(&ack, 1, collFloat32, 2, comm, nullptr);
          if (rank == 2 && rc == collSuccess) rc = collRecv(in.data(), count, collFloat32, 1, comm, nullptr);
          if (rank == 2 && rc == collSuccess) rc = collSend(out.data(), 1, collFloat32, 1, comm, nullptr);
          const collResult_t end = collGroupEnd();
          if (rc != collSuccess || end != collSuccess) return std::vector<std::string>{me + collGetLastError(comm)};
          if (rank == 2) {
            for (size_t i = 0; i < count && failures.empty(); ++i)
              if (in[i] != valueOf(1, i) + (single ? 1.0f : 0.0f))
                failures.push_back(me + "element " + std::to_string(i) + " is " + std::to_string(in[i]));
            if (in[count] != -1.0f) failures.push_back(me + "wrote past the receive buffer");
            const uint64_t landed = receivedInPlace(comm) - before;
            if (single && landed == 0) failures.push_back(me + "rank 0 sends by single copy, yet rank 1 did not");
            if (!single && landed != 0)
              failures.push_back(me + std::to_string(landed) + " slices received in place while rank 0 uses the FIFO");
          }
          if (collBarrier(comm, nullptr) != collSuccess) return std::vector<std::string>{me + collGetLastError(comm)};
        }
        return failures;
      },
      initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(ReceiveInPlaceEager, SendsOutsideAGroupDoNotWaitForTheReceiver) {
  // Both ranks send 256 KiB first, then receive: with sends that waited for their receiver (as a
  // single copy does) this would never finish.
  auto failures = runAsProcesses(2, [](collComm_t comm, int rank, int) {
    std::vector<std::string> failures;
    const size_t count = 65536;
    std::vector<float> out(count), in(count, -1.0f);
    for (size_t i = 0; i < count; ++i) out[i] = valueOf(rank, i);
    if (collSend(out.data(), count, collFloat32, 1 - rank, comm, nullptr) != collSuccess ||
        collRecv(in.data(), count, collFloat32, 1 - rank, comm, nullptr) != collSuccess) {
      failures.push_back(std::string("send/recv failed: ") + collGetLastError(comm));
      return failures;
    }
    for (size_t i = 0; i < count; ++i)
      if (in[i] != valueOf(1 - rank, i)) {
        failures.push_back("element " + std::to_string(i) + " differs");
        break;
      }
    return failures;
  });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
