// Zero-copy sends and receives over verbs (transport/verbs/verbs_caller_memory.h, verbs_landing.h),
// over the verbs emulator (CMake sets COLL_TRANSPORTS=verbs and names the emulator): slices that
// already lie in the caller's buffer are RDMA-written from it, and large receives are written
// straight into the receiver's output, both registered for that call only.
//   - results are bitwise right for all-reduce, all-gather, broadcast and send/recv at sizes on
//     both sides of COLL_IB_ZCOPY_BYTES, odd ones and in place, into outputs poisoned before each
//     call, and both zero-copy paths were taken above the threshold and not below (the domain's
//     counts, Communicator::transportUsage(): zero-copy writes, slices received in place);
//   - no registration outlives its call, and a buffer freed and allocated again at the same
//     address between calls sends, and receives, its new bytes (a registration cached by address
//     would not);
//   - a registration the device refuses (the emulator's COLL_VERBS_EMU_MAX_MRS, a pinned-memory
//     limit) falls back to the slots, logged at INFO once, and the call succeeds;
//   - COLL_IB_ZCOPY_BYTES=0 sends and receives nothing zero-copy;
//   - a write flagged as landed in the receiver's buffer where the receiver offered no landing
//     (the emulator's COLL_VERBS_EMU_IMM_OR on the sender) fails every rank within seconds.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collective.h"
#include "collective_cases.h"
#include "rank_launcher.h"
#include "reference.h"
#include "src/api_internal.h"
#include "src/comm.h"
#include "transport/domain.h"

namespace colltest {
namespace {

constexpr size_t kThreshold = 64 << 10;  // COLL_IB_ZCOPY_BYTES in these tests
constexpr int kRanks = 3;

// The verbs domain's counts on this rank ("zero-copy writes", "held", ...), empty without one.
std::map<std::string, uint64_t> verbsCounts(collComm_t comm) {
  std::map<std::string, uint64_t> counts;
  for (const auto& [name, usage] : coll::communicatorOf(comm)->transportUsage())
    if (name == "verbs")
      for (const auto& [what, count] : usage.counts) counts[what] = count;
  return counts;
}

std::string rankSays(int rank, const std::string& what) { return "rank " + std::to_string(rank) + ": " + what; }

const std::string kInPlace = coll::transport::kReceivedInPlace;

void setZeroCopyEnvironment(const char* threshold, const char* fifoDepth = "4") {
  setenv("COLL_IB_ZCOPY_BYTES", threshold, 1);
  // Slices of 16 KiB: a buffer above the threshold is many slices, so one registration serves
  // several writes, and FIFOs of 4 slots wrap.
  setenv("COLL_SHM_SLOT_BYTES", "16384", 1);
  setenv("COLL_NET_FIFO_DEPTH", fifoDepth, 1);
  setenv("COLL_TIMEOUT_MS", "60000", 1);
}

std::vector<Case> casesAroundTheThreshold() {
  const size_t below = kThreshold / 4 - 1;      // int32 elements: just under the threshold
  const size_t at = kThreshold / 4;             // exactly at it
  const size_t above = 3 * kThreshold / 4 + 7;  // several slices and an odd tail
  std::vector<Case> cases;
  for (size_t count : {below, at, above}) {
    for (bool inPlace : {false, true}) {
      cases.push_back({Coll::kAllReduce, collInt32, collSum, count, 0, inPlace});
      cases.push_back({Coll::kAllReduce, collFloat32, collMax, count, 0, inPlace});
      cases.push_back({Coll::kAllGather, collInt32, collSum, count, 0, inPlace});
      cases.push_back({Coll::kBroadcast, collUint8, collSum, count * 4 + 1, 2, inPlace});
    }
    cases.push_back({Coll::kSendRecv, collInt32, collSum, count, 0, false});
  }
  return cases;
}

// Whether `c`, above the threshold, must receive slices in place on `rank` somewhere in the call:
// every rank receives something in these collectives but broadcast's root, in steps above the
// threshold (a ring step is at most half a FIFO: 128 KiB here).
bool mustLand(const Case& c, int rank) { return !(c.coll == Coll::kBroadcast && rank == c.root); }

// The first word of a case's description, the collective's name: the key landings are summed by.
std::string collectiveName(const Case& c) { return c.describe().substr(0, c.describe().find(' ')); }

// The collectives of `landed` that no rank received a slice of in place, the same list on every
// rank (the counts are summed over the ranks).
std::vector<std::string> landedNowhere(collComm_t comm, const std::map<std::string, uint64_t>& landed,
                                       std::string* error) {
  std::vector<std::string> names;
  std::vector<uint64_t> counts;
  for (const auto& [coll, count] : landed) {
    names.push_back(coll);
    counts.push_back(count);
  }
  if (collAllReduce(counts.data(), counts.data(), counts.size(), collUint64, collSum, comm, nullptr) != collSuccess) {
    *error = std::string("summing the counts failed: ") + collGetLastError(comm);
    return {};
  }
  std::vector<std::string> nowhere;
  for (size_t i = 0; i < names.size(); ++i)
    if (counts[i] == 0) nowhere.push_back(names[i]);
  return nowhere;
}

// What landed (slices received in place) is up to timing where a sender may be a whole step
// ahead of its receiver's offer (a ring's first step sends the rank's own block at once, and a
// broadcast's root sends before the others have begun): each collective must land on some rank,
// and every rank somewhere. A collective that landed nowhere runs its cases above the threshold
// again, a few times: zero-copy receives that never work still fail every run, a loaded machine's
// late offers do not.
std::vector<std::string> checkLandedSomewhere(collComm_t comm, int rank, int nranks,
                                              std::map<std::string, uint64_t> landed) {
  constexpr int kRunsAgain = 4;
  std::string error;
  std::vector<std::string> nowhere = landedNowhere(comm, landed, &error);
  std::vector<std::string> problems;
  for (int run = 0; run < kRunsAgain && !nowhere.empty() && error.empty(); ++run) {
    std::map<std::string, uint64_t> again;
    for (const Case& c : casesAroundTheThreshold()) {
      const std::string name = collectiveName(c);
      if (c.count <= kThreshold / 4 || std::find(nowhere.begin(), nowhere.end(), name) == nowhere.end()) continue;
      const uint64_t before = verbsCounts(comm)[kInPlace];
      const std::string wrong = runCase(comm, rank, nranks, c);
      if (!wrong.empty()) problems.push_back(rankSays(rank, c.describe() + " (run again): " + wrong));
      const uint64_t landedNow = verbsCounts(comm)[kInPlace] - before;
      again[name] += mustLand(c, rank) ? landedNow : 0;
      landed[name] += mustLand(c, rank) ? landedNow : 0;
    }
    nowhere = landedNowhere(comm, again, &error);
  }
  if (!error.empty()) return {rankSays(rank, error)};
  uint64_t mine = 0;
  for (const auto& [coll, count] : landed) mine += count;
  if (mine == 0) problems.push_back(rankSays(rank, "no slice received in place above the threshold"));
  for (const std::string& name : nowhere)
    if (rank == 0)
      problems.push_back(name + ": no rank received a slice in place, in " + std::to_string(kRunsAgain + 1) + " runs");
  return problems;
}

// A point-to-point receive several FIFOs long: its sender cannot be more than a FIFO (16 slots)
// ahead of the receiver's offer, and learns of it before it has credit for more, so every slice
// past the first FIFO's worth lands, from each neighbour.
std::vector<std::string> checkLongReceiveLands(collComm_t comm, int rank, int nranks) {
  const Case c{Coll::kSendRecv, collInt32, collSum, 1 << 18, 0, false};
  const uint64_t before = verbsCounts(comm)[kInPlace];
  const std::string wrong = runCase(comm, rank, nranks, c);
  if (!wrong.empty()) return {rankSays(rank, c.describe() + ": " + wrong)};
  const uint64_t landed = verbsCounts(comm)[kInPlace] - before;
  const uint64_t slices = (1 << 20) / 16384, fifo = 16;
  if (landed < 2 * (slices - fifo))
    return {rankSays(rank, c.describe() + ": " + std::to_string(landed) + " slices received in place, expected " +
                               std::to_string(2 * (slices - fifo)) + " at least")};
  return {};
}

TEST(VerbsZeroCopy, ResultsAreRightAcrossTheThresholdAndLargeBuffersGoZeroCopy) {
  auto failures = runAsProcessesWithSetup(
      // FIFOs of 16 slots: a pipelined step may then move 128 KiB (half a FIFO), so that what one
      // step receives, which the receive side's threshold compares, reaches it.
      kRanks, [](int) { setZeroCopyEnvironment("65536", "16"); },
      [](collComm_t comm, int rank, int nranks) -> std::vector<std::string> {
        std::vector<std::string> problems;
        if (verbsCounts(comm).empty()) return {rankSays(rank, "no verbs domain: the test ran on another transport")};
        uint64_t writesBelow = 0, writesAbove = 0, landedBelow = 0;
        std::map<std::string, uint64_t> landedAbove;  // per collective
        for (const Case& c : casesAroundTheThreshold()) {
          std::map<std::string, uint64_t> before = verbsCounts(comm);
          const std::string wrong = runCase(comm, rank, nranks, c);
          if (!wrong.empty()) problems.push_back(rankSays(rank, c.describe() + ": " + wrong));
          std::map<std::string, uint64_t> after = verbsCounts(comm);
          // Nothing outlives the call that registered it, a landing's registration included.
          if (after["held"] != 0)
            problems.push_back(rankSays(rank, c.describe() + ": " + std::to_string(after["held"]) +
                                                  " caller registration(s) still held after the call"));
          const uint64_t written = after["zero-copy writes"] - before["zero-copy writes"];
          // Every buffer such a call touches is below the threshold only for the smallest count.
          if (c.count < kThreshold / 4 && c.coll != Coll::kAllGather && c.coll != Coll::kBroadcast)
            writesBelow += written;
          else if (c.count > kThreshold / 4)
            writesAbove += written;
          // No step receives more than the call's count, so below the threshold nothing lands.
          const uint64_t landed = after[kInPlace] - before[kInPlace];
          if (c.count * typeSize(c.type) < kThreshold) landedBelow += landed;
          // Every rank names the same collectives, so that the sums below line up.
          if (c.count > kThreshold / 4) landedAbove[collectiveName(c)] += mustLand(c, rank) ? landed : 0;
        }
        if (writesBelow != 0)
          problems.push_back(
              rankSays(rank, std::to_string(writesBelow) + " zero-copy writes from buffers below the threshold"));
        if (writesAbove == 0) problems.push_back(rankSays(rank, "no zero-copy write from buffers above the threshold"));
        if (landedBelow != 0)
          problems.push_back(
              rankSays(rank, std::to_string(landedBelow) + " slices received in place from steps below the threshold"));
        for (const std::string& problem : checkLandedSomewhere(comm, rank, nranks, landedAbove))
          problems.push_back(problem);
        for (const std::string& problem : checkLongReceiveLands(comm, rank, nranks)) problems.push_back(problem);
        return problems;
      },
      initMustSucceed(), 240);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// Rank 0 sends `bytes` of `fill` from `data` to rank 1, which receives them into its `data`,
// poisoned first, and checks them, and that all but the first FIFO's worth (4 slices of 16 KiB)
// were received in place.
std::string sendAndCheck(collComm_t comm, int rank, uint8_t* data, size_t bytes, uint8_t fill) {
  collResult_t rc;
  if (rank == 0) {
    std::memset(data, fill, bytes);
    rc = collSend(data, bytes, collUint8, 1, comm, nullptr);
  } else {
    std::memset(data, static_cast<uint8_t>(~fill), bytes);
    const uint64_t before = verbsCounts(comm)[kInPlace];
    rc = collRecv(data, bytes, collUint8, 0, comm, nullptr);
    if (rc == collSuccess) {
      for (size_t i = 0; i < bytes; ++i)
        if (data[i] != fill)
          return rankSays(rank, "byte " + std::to_string(i) + " is " + std::to_string(data[i]) +
                                    ", the sender's buffer held " + std::to_string(fill));
      const uint64_t landed = verbsCounts(comm)[kInPlace] - before;
      if (landed < bytes / 16384 - 4)
        return rankSays(rank, "only " + std::to_string(landed) + " of " + std::to_string(bytes / 16384) +
                                  " slices received in place");
    }
  }
  return rc == collSuccess ? "" : rankSays(rank, collGetLastError(comm));
}

TEST(VerbsZeroCopy, BufferFreedAndAllocatedAgainBetweenCallsSendsAndReceivesItsNewBytes) {
  auto failures = runAsProcessesWithSetup(
      2, [](int) { setZeroCopyEnvironment("65536"); },
      [](collComm_t comm, int rank, int) -> std::vector<std::string> {
        std::vector<std::string> problems;
        const size_t bytes = 1 << 20;
        auto check = [&](const std::string& problem) {
          if (!problem.empty()) problems.push_back(problem);
        };
        // malloc, free, malloc: glibc serves 1 MiB from mmap and may return the same range.
        auto* first = static_cast<uint8_t*>(malloc(bytes));
        check(sendAndCheck(comm, rank, first, bytes, 0x11));
        free(first);
        auto* second = static_cast<uint8_t*>(malloc(bytes));
        check(sendAndCheck(comm, rank, second, bytes, 0x22));
        free(second);
        // Certainly the same addresses with other pages: unmapped, then mapped again in place.
        void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mapped == MAP_FAILED) return {rankSays(rank, "mmap failed")};
        check(sendAndCheck(comm, rank, static_cast<uint8_t*>(mapped), bytes, 0x33));
        munmap(mapped, bytes);
        void* again = mmap(mapped, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (again != mapped) return {rankSays(rank, "mmap at the same address failed")};
        check(sendAndCheck(comm, rank, static_cast<uint8_t*>(again), bytes, 0x44));
        munmap(again, bytes);
        std::map<std::string, uint64_t> counts = verbsCounts(comm);
        // Each rank registered once per call (to send from, to receive into), the same range
        // included: nothing was reused.
        if (counts["caller buffers registered"] != 4)
          problems.push_back(rankSays(rank, std::to_string(counts["caller buffers registered"]) +
                                                " registrations for 4 calls into 4 buffers (expected one each)"));
        if (rank == 0 && counts["zero-copy writes"] < 4 * (bytes / 16384))
          problems.push_back(
              rankSays(rank, "only " + std::to_string(counts["zero-copy writes"]) + " zero-copy writes"));
        if (counts["held"] != 0) problems.push_back(rankSays(rank, "registrations held after the calls"));
        return problems;
      },
      initMustSucceed(), 120);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// What this process wrote to stderr so far (the setup pointed it at `path`).
std::string logged(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Where rank `rank` of the test process `parent` writes its stderr.
std::string refusalLog(pid_t parent, int rank) {
  return "/tmp/coll-zcopy-refused-" + std::to_string(parent) + "-" + std::to_string(rank);
}

TEST(VerbsZeroCopy, RefusedRegistrationFallsBackToTheSlotsLoggedOnce) {
  const pid_t parent = getpid();
  auto failures = runAsProcessesWithSetup(
      kRanks,
      [&](int rank) {
        setZeroCopyEnvironment("65536");
        // The emulator's pinned-memory limit: the domain's own slot region is the only one allowed.
        setenv("COLL_VERBS_EMU_MAX_MRS", "1", 1);
        setenv("COLL_DEBUG", "INFO", 1);
        setenv("COLL_DEBUG_SUBSYS", "TRANSPORT", 1);
        int fd = open(refusalLog(parent, rank).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) dup2(fd, 2), close(fd);
      },
      [&](collComm_t comm, int rank, int nranks) -> std::vector<std::string> {
        std::vector<std::string> problems;
        for (int round = 0; round < 3; ++round)
          for (bool inPlace : {false, true}) {
            Case c{Coll::kAllReduce, collInt32, collSum, (1 << 18) + 3, 0, inPlace};
            const std::string wrong = runCase(comm, rank, nranks, c);
            if (!wrong.empty()) problems.push_back(rankSays(rank, c.describe() + ": " + wrong));
          }
        std::map<std::string, uint64_t> counts = verbsCounts(comm);
        if (counts["zero-copy writes"] != 0)
          problems.push_back(
              rankSays(rank, std::to_string(counts["zero-copy writes"]) + " zero-copy writes despite the limit"));
        if (counts["refused"] == 0) problems.push_back(rankSays(rank, "no registration was refused"));
        fflush(stderr);
        const size_t lines = occurrences(logged(refusalLog(parent, rank)), "ibv_reg_mr of the caller's buffer");
        if (lines != 1)
          problems.push_back(rankSays(
              rank, "the refused registration was logged " + std::to_string(lines) + " times (expected once)"));
        return problems;
      },
      initMustSucceed(), 120);
  for (int rank = 0; rank < kRanks; ++rank) unlink(refusalLog(parent, rank).c_str());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(VerbsZeroCopy, ThresholdZeroSendsAndReceivesNothingZeroCopy) {
  auto failures = runAsProcessesWithSetup(
      2, [](int) { setZeroCopyEnvironment("0"); },
      [](collComm_t comm, int rank, int nranks) -> std::vector<std::string> {
        std::vector<std::string> problems;
        // A long point-to-point receive lands with any other threshold (checkLongReceiveLands).
        for (const Case& c : {Case{Coll::kAllReduce, collInt32, collSum, 1 << 18, 0, false},
                              Case{Coll::kSendRecv, collInt32, collSum, 1 << 18, 0, false}}) {
          const std::string wrong = runCase(comm, rank, nranks, c);
          if (!wrong.empty()) problems.push_back(rankSays(rank, wrong));
        }
        std::map<std::string, uint64_t> counts = verbsCounts(comm);
        if (counts["zero-copy writes"] != 0 || counts["caller buffers registered"] != 0)
          problems.push_back(rankSays(rank, "zero-copy with COLL_IB_ZCOPY_BYTES=0"));
        if (counts[kInPlace] != 0 || counts["landings offered"] != 0)
          problems.push_back(rankSays(
              rank, std::to_string(counts[kInPlace]) + " slices received in place with COLL_IB_ZCOPY_BYTES=0"));
        return problems;
      },
      initMustSucceed(), 120);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

using Clock = std::chrono::steady_clock;

// A rank's failure must come within 15 s of `started`, as a peer's or a link's error.
std::vector<std::string> judgeFailure(Clock::time_point started, int rank, collResult_t rc,
                                      const std::string& message) {
  std::vector<std::string> problems;
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (seconds > 15) problems.push_back(rankSays(rank, "failed only after " + std::to_string(seconds) + " s"));
  if (rc != collRemoteError && rc != collTimeout)
    problems.push_back(rankSays(rank, std::string(collGetErrorString(rc)) + ": " + message));
  return problems;
}

// Two ranks broadcast `bytes` from rank 0, with `variable`=`value` in rank `faulty`'s emulator,
// until one fails: every rank must fail within 15 s, and rank `witness`'s error must name the
// other rank and say `what`. 100 broadcasts that succeed are a failure of the test.
std::vector<std::string> faultyBroadcasts(int faulty, const char* variable, const char* value, size_t bytes,
                                          int witness, const std::string& what) {
  const auto started = Clock::now();
  auto judge = [&](int rank, collResult_t rc, const std::string& message) {
    std::vector<std::string> problems = judgeFailure(started, rank, rc, message);
    const std::string other = "rank " + std::to_string(1 - rank);
    if (rank == witness && (message.find(other) == std::string::npos || message.find(what) == std::string::npos))
      problems.push_back(rankSays(rank, "the error does not name " + other + " and say \"" + what + "\": " + message));
    return problems;
  };
  return runAsProcessesWithSetup(
      2,
      [&](int rank) {
        setZeroCopyEnvironment("65536");
        setenv("COLL_TIMEOUT_MS", "20000", 1);
        if (rank == faulty) setenv(variable, value, 1);
      },
      [&](collComm_t comm, int rank, int) -> std::vector<std::string> {
        std::vector<uint8_t> data(bytes, 7);
        for (int i = 0; i < 100; ++i) {
          collResult_t rc = collBroadcast(data.data(), data.data(), data.size(), collUint8, 0, comm, nullptr);
          if (rc != collSuccess) return judge(rank, rc, collGetLastError(comm));
        }
        return {rankSays(rank, "100 broadcasts succeeded")};
      },
      judge, 60);
}

TEST(VerbsZeroCopy, ErrorCompletionOfAZeroCopyWriteNamesThePeer) {
  // Rank 1's regions advertise a key that opens nothing (the emulator's fault injection): the
  // root's first write, from its own buffer, fails remotely, and says so as a slot's would.
  auto failures = faultyBroadcasts(1, "COLL_VERBS_EMU_CORRUPT_RKEY", "1", 1 << 20, 0,
                                   "data write from the caller's buffer completed with remote access error");
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(VerbsZeroCopy, WriteFlaggedAsLandedOutsideTheOfferFailsEveryRank) {
  // Rank 0's emulator sets the landed flag (transport/verbs/verbs_landing.h, kVerbsLandedBit) in
  // the immediate of every data write it makes, into rank 1's slots: rank 1, which offered no
  // landing for messages this small, must refuse them rather than hand out its buffer's stale
  // bytes as data, and both ranks must fail, not hang.
  auto failures = faultyBroadcasts(0, "COLL_VERBS_EMU_IMM_OR", "0x20000000", 4096, 1,
                                   "written into this rank's receive buffer, but this rank offered no landing");
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
