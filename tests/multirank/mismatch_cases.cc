#include "mismatch_cases.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "guarded_memory.h"
#include "reference.h"

namespace colltest {
namespace {

// Elements of this rank's send and receive buffers for `args` (rank 0 of a send/recv sends).
void bufferElements(const MismatchCase& c, const RankArgs& args, int rank, int n, size_t* send, size_t* recv) {
  const bool root = rank == c.root;
  const size_t all = args.count * static_cast<size_t>(n);
  *send = *recv = args.count;
  switch (c.coll) {
    case Coll::kAllGather:
      *recv = all;
      break;
    case Coll::kReduceScatter:
      *send = all;
      break;
    case Coll::kGather:
      *recv = root ? all : 0;
      break;
    case Coll::kScatter:
      *send = root ? all : 0;
      break;
    case Coll::kAllToAll:
      *send = *recv = all;
      break;
    case Coll::kBroadcast:
      *send = root ? args.count : 0;
      break;
    case Coll::kReduce:
      *recv = root || c.inPlace ? args.count : 0;  // in place, every rank's input is there
      break;
    case Coll::kSendRecv:
      *send = rank == 0 ? args.count : 0;
      *recv = rank == 1 ? args.count : 0;
      break;
    default:
      break;
  }
}

collResult_t issue(collComm_t comm, const MismatchCase& c, const RankArgs& a, int rank, const void* send, void* recv) {
  if (c.coll != Coll::kSendRecv) return issueCase(comm, {c.coll, a.type, collSum, a.count, c.root, c.inPlace}, send, recv);
  if (rank == 0) return collSend(send, a.count, a.type, 1, comm, nullptr);
  if (rank == 1) return collRecv(recv, a.count, a.type, 0, comm, nullptr);
  return collSuccess;
}

// Where this rank's input lies inside its output when the call is in place (docs/api.md).
void placeInPlace(const MismatchCase& c, const RankArgs& a, int rank, uint8_t** send, uint8_t** recv) {
  const size_t block = a.count * typeSize(a.type);
  switch (c.coll) {
    case Coll::kAllReduce:
    case Coll::kBroadcast:
    case Coll::kReduce:
      *send = *recv;
      break;
    case Coll::kAllGather:
      *send = *recv + rank * block;
      break;
    case Coll::kReduceScatter:
      *recv = *send + rank * block;
      break;
    case Coll::kGather:
      if (rank == c.root) *send = *recv + rank * block;
      break;
    case Coll::kScatter:
      if (rank == c.root) *recv = *send + rank * block;
      break;
    default:
      break;
  }
}

// Whether this rank's part of the call needs nothing from the others, so that it may return
// before any receiver looks at what it sent (docs/errors.md); a count of zero is a no-op.
bool mayReturnFirst(const MismatchCase& c, int rank) {
  if (c.ranks[rank == 0 ? 0 : 1].count == 0) return true;
  switch (c.coll) {
    case Coll::kBroadcast:
    case Coll::kScatter:
      return rank == c.root;
    case Coll::kReduce:
    case Coll::kGather:
      return rank != c.root;
    case Coll::kSendRecv:
      return rank != 1;
    default:
      return false;
  }
}

std::string countText(const RankArgs& a) {
  return "count " + std::to_string(a.count) + " of " + typeName(a.type);
}

// Both ranks' counts: as counts of their datatypes for a collective, as bytes for a send and its
// receive (which move bytes, whatever the datatypes).
bool namesBothCounts(const MismatchCase& c, const std::string& message) {
  for (const RankArgs& a : c.ranks) {
    const std::string text = c.coll == Coll::kSendRecv ? std::to_string(a.count * typeSize(a.type)) + " bytes"
                                                        : countText(a);
    if (message.find(text) == std::string::npos) return false;
  }
  return true;
}

}  // namespace

std::string MismatchCase::describe() const {
  char text[200];
  snprintf(text, sizeof(text), "%s root=%d %s: rank 0 %s, the others %s", collName(coll), root,
           inPlace ? "in-place" : "out-of-place", countText(ranks[0]).c_str(), countText(ranks[1]).c_str());
  return text;
}

std::vector<MismatchCase> mismatchCases(bool zeroCounts) {
  const Coll colls[] = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce,   Coll::kAllGather, Coll::kReduceScatter,
                        Coll::kGather,    Coll::kScatter,   Coll::kAllToAll, Coll::kSendRecv};
  // Floats: 8 and 4 bytes (a tiny one-shot input), 48 and 24 (inline), 4000 and 2000 (a one-shot
  // region), 400,000 and 200,000 (the issue's: FIFO slots or direct reads), 512 KiB and 256 KiB
  // (whole numbers of slots).
  const size_t counts[][2] = {{2, 1}, {12, 6}, {1000, 500}, {100000, 50000}, {131072, 65536}};
  std::vector<MismatchCase> cases;
  for (Coll coll : colls) {
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      if (inPlace && (coll == Coll::kAllToAll || coll == Coll::kSendRecv)) continue;
      for (const auto& pair : counts) {
        cases.push_back({coll, {{pair[0], collFloat32}, {pair[1], collFloat32}}, 0, inPlace == 1});
        cases.push_back({coll, {{pair[1], collFloat32}, {pair[0], collFloat32}}, 0, inPlace == 1});
      }
      cases.push_back({coll, {{100000, collFloat64}, {100000, collFloat32}}, 0, inPlace == 1});
      // A receive of nothing posts none (the API's no-op): the send waits in the FIFO for a later
      // receive, unmatched, and is not a mismatch of this call.
      if (zeroCounts && coll != Coll::kSendRecv)
        cases.push_back({coll, {{1000, collFloat32}, {0, collFloat32}}, 0, inPlace == 1});
    }
  }
  return cases;
}

std::string runMismatch(collComm_t comm, int rank, int n, const MismatchCase& c) {
  const RankArgs& mine = c.ranks[rank == 0 ? 0 : 1];
  const size_t es = typeSize(mine.type);
  size_t sendElems = 0, recvElems = 0;
  bufferElements(c, mine, rank, n, &sendElems, &recvElems);
  // +1: unaligned, as the kernels must take any address.
  GuardedMemory sendMemory(sendElems * es, 1), recvMemory(recvElems * es, 1);
  uint8_t* send = sendMemory.data();
  uint8_t* recv = recvMemory.data();
  if (c.inPlace) placeInPlace(c, mine, rank, &send, &recv);
  for (size_t i = 0; i < sendElems && send == sendMemory.data(); ++i) storeValue(send, i, mine.type, 1.0);
  const collResult_t rc = issue(comm, c, mine, rank, sendElems > 0 ? send : nullptr, recvElems > 0 ? recv : nullptr);
  const std::string message = collGetLastError(comm);
  if (rc != collSuccess) {
    std::string problems = sendMemory.damage("send buffer") + recvMemory.damage("receive buffer");
    if (rc != collRemoteError) problems += std::string("it returned ") + collGetErrorString(rc) + "; ";
    if (!namesBothCounts(c, message)) problems += "its error does not name both counts: " + message + "; ";
    return problems;
  }
  // A rank that only sends may have returned before the receiver looked: its next call fails.
  // (Its peers may still be writing until then: the guards are checked after it.)
  const collResult_t next = collBarrier(comm, nullptr);
  const std::string nextMessage = collGetLastError(comm);
  std::string problems = sendMemory.damage("send buffer") + recvMemory.damage("receive buffer");
  if (!mayReturnFirst(c, rank)) {
    problems += std::string("the call succeeded (then a barrier returned ") + collGetErrorString(next) + ": " +
                nextMessage + "); ";
  } else if (next == collSuccess) {
    problems += "the call and the barrier after it succeeded; ";
  } else if (!namesBothCounts(c, nextMessage)) {
    problems += "the barrier after it failed without naming both counts: " + nextMessage + "; ";
  }
  return problems;
}

std::vector<std::string> runMismatches(collComm_t comm, int rank, int n, const std::vector<MismatchCase>& cases) {
  std::vector<std::string> failures;
  // Each case's communicator waits 10 s at most: a mismatch that went undetected shows as a
  // timeout instead of the default five minutes. The parent keeps its own timeout, so that the
  // ranks meet at its barrier whenever each of them is done with the case before.
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 10000;
  for (const MismatchCase& c : cases) {
    collComm_t child = nullptr;
    if (collBarrier(comm, nullptr) != collSuccess ||
        collCommSplit(comm, 0, rank, &child, &config) != collSuccess) {
      failures.push_back("rank " + std::to_string(rank) + ": before " + c.describe() + ": " + collGetLastError(comm));
      break;
    }
    std::string problem = runMismatch(child, rank, n, c);
    collCommDestroy(child);
    if (!problem.empty()) failures.push_back("rank " + std::to_string(rank) + ": " + c.describe() + ": " + problem);
  }
  return failures;
}

}  // namespace colltest
