#include "collective_cases.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "reference.h"

namespace colltest {
namespace {

constexpr size_t kGuardBytes = 64;

bool reduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter; }
bool rooted(Coll c) { return c == Coll::kBroadcast || c == Coll::kReduce || c == Coll::kGather || c == Coll::kScatter; }

// A byte buffer with a poisoned guard zone after `bytes`, so writes past the end show up.
struct GuardedBuffer {
  std::vector<unsigned char> storage;
  size_t bytes;
  explicit GuardedBuffer(size_t n) : storage(n + kGuardBytes + 1), bytes(n) { poison(storage.data(), storage.size()); }
  unsigned char* data() { return storage.data() + 1; }  // +1: deliberately unaligned for the kernels
  bool guardIntact() const {
    return isPoisoned(storage.data() + 1 + bytes, kGuardBytes) && storage[0] == storage[1 + bytes];
  }
};

struct Checker {
  const Case& c;
  std::string problems;
  int wrong = 0;
  void expect(const void* base, size_t index, double want, const char* what) {
    if (valueMatches(base, index, c.type, c.op, want)) return;
    if (++wrong <= 3) {
      char line[256];
      snprintf(line, sizeof(line), "%s[%zu] = %g, expected %g; ", what, index, loadValue(base, index, c.type), want);
      problems += line;
    }
  }
  std::string result() {
    if (wrong > 3) problems += "(" + std::to_string(wrong) + " wrong in all)";
    return problems;
  }
};

void fillInput(void* base, int rank, size_t first, size_t count, const Case& c) {
  for (size_t i = 0; i < count; ++i) storeValue(base, i, c.type, inputValue(rank, first + i, c.type, c.op));
}

}  // namespace

collResult_t issueCase(collComm_t comm, const Case& c, const void* send, void* recv) {
  switch (c.coll) {
    case Coll::kAllReduce:
      return collAllReduce(send, recv, c.count, c.type, c.op, comm, nullptr);
    case Coll::kBroadcast:
      return collBroadcast(send, recv, c.count, c.type, c.root, comm, nullptr);
    case Coll::kReduce:
      return collReduce(send, recv, c.count, c.type, c.op, c.root, comm, nullptr);
    case Coll::kAllGather:
      return collAllGather(send, recv, c.count, c.type, comm, nullptr);
    case Coll::kReduceScatter:
      return collReduceScatter(send, recv, c.count, c.type, c.op, comm, nullptr);
    case Coll::kGather:
      return collGather(send, recv, c.count, c.type, c.root, comm, nullptr);
    case Coll::kScatter:
      return collScatter(send, recv, c.count, c.type, c.root, comm, nullptr);
    case Coll::kAllToAll:
      return collAllToAll(send, recv, c.count, c.type, comm, nullptr);
    case Coll::kBarrier:
      return collBarrier(comm, nullptr);
    default:
      return collInternalError;
  }
}

namespace {

std::string runSendRecv(collComm_t comm, int rank, int nranks, const Case& c) {
  // A ring and its reverse in one group: every rank sends to and receives from both neighbours.
  size_t bytes = c.count * typeSize(c.type);
  int next = (rank + 1) % nranks, prev = (rank - 1 + nranks) % nranks;
  std::vector<unsigned char> out(bytes + 1), in(bytes + 1);
  GuardedBuffer fromPrev(bytes), fromNext(bytes);
  fillInput(out.data(), rank, 0, c.count, c);
  collResult_t rc = collGroupStart();
  if (rc == collSuccess) rc = collSend(out.data(), c.count, c.type, next, comm, nullptr);
  if (rc == collSuccess) rc = collRecv(fromPrev.data(), c.count, c.type, prev, comm, nullptr);
  if (rc == collSuccess) rc = collSend(out.data(), c.count, c.type, prev, comm, nullptr);
  if (rc == collSuccess) rc = collRecv(fromNext.data(), c.count, c.type, next, comm, nullptr);
  collResult_t end = collGroupEnd();
  if (rc != collSuccess || end != collSuccess)
    return std::string("send/recv failed: ") + collGetErrorString(rc != collSuccess ? rc : end) + ": " +
           collGetLastError(comm);
  Checker check{c, "", 0};
  for (size_t i = 0; i < c.count; ++i) {
    check.expect(fromPrev.data(), i, inputValue(prev, i, c.type, c.op), "fromPrev");
    check.expect(fromNext.data(), i, inputValue(next, i, c.type, c.op), "fromNext");
  }
  if (!fromPrev.guardIntact() || !fromNext.guardIntact()) check.problems += "wrote past the receive buffer; ";
  return check.result();
}

}  // namespace

const char* collName(Coll coll) {
  static const char* names[] = {"AllReduce", "Broadcast", "Reduce",   "AllGather", "ReduceScatter",
                                "Gather",    "Scatter",   "AllToAll", "SendRecv",  "Barrier"};
  return names[static_cast<int>(coll)];
}

std::string Case::describe() const {
  char text[200];
  snprintf(text, sizeof(text), "%s %s %s count=%zu root=%d %s", collName(coll), typeName(type), opName(op), count, root,
           inPlace ? "in-place" : "out-of-place");
  return text;
}

std::string runCase(collComm_t comm, int rank, int n, const Case& c) {
  if (c.coll == Coll::kSendRecv) return runSendRecv(comm, rank, n, c);
  size_t es = typeSize(c.type);
  size_t count = c.count;
  bool isRoot = rank == c.root;
  // Element counts of the send and receive sides for this rank.
  size_t sendElems = count, recvElems = count;
  switch (c.coll) {
    case Coll::kAllGather:
      recvElems = count * n;
      break;
    case Coll::kReduceScatter:
      sendElems = count * n;
      break;
    case Coll::kGather:
      recvElems = count * n;
      break;
    case Coll::kScatter:
      sendElems = count * n;
      break;
    case Coll::kAllToAll:
      sendElems = recvElems = count * n;
      break;
    default:
      break;
  }
  GuardedBuffer recv(recvElems * es);
  GuardedBuffer sendStorage(sendElems * es);
  unsigned char* send = sendStorage.data();
  unsigned char* out = recv.data();
  // In place: the input sits inside the output buffer where docs/api.md says.
  if (c.inPlace) {
    switch (c.coll) {
      case Coll::kAllReduce:
      case Coll::kBroadcast:
      case Coll::kReduce:
        send = out;
        break;
      case Coll::kAllGather:
        send = out + rank * count * es;
        break;
      case Coll::kReduceScatter:
        out = send + rank * count * es;
        break;
      case Coll::kGather:
        if (isRoot) send = out + rank * count * es;
        break;
      case Coll::kScatter:
        if (isRoot) out = send + rank * count * es;
        break;
      default:
        break;
    }
  }
  // Inputs: the reference's values; for rooted "send from root" collectives only the root's matter.
  switch (c.coll) {
    case Coll::kReduceScatter:
    case Coll::kAllToAll:
      fillInput(send, rank, 0, sendElems, c);
      break;
    case Coll::kScatter:
      if (isRoot) fillInput(send, rank, 0, sendElems, c);
      break;
    case Coll::kBroadcast:
      if (isRoot) fillInput(send, rank, 0, count, c);
      break;
    case Coll::kBarrier:
      break;
    default:
      fillInput(send, rank, 0, count, c);
      break;
  }
  collResult_t rc = issueCase(comm, c, send, out);
  if (rc != collSuccess) return std::string("call failed: ") + collGetErrorString(rc) + ": " + collGetLastError(comm);
  Checker check{c, "", 0};
  switch (c.coll) {
    case Coll::kAllReduce:
      for (size_t i = 0; i < count; ++i) check.expect(out, i, reducedValue(n, i, c.type, c.op), "out");
      break;
    case Coll::kReduce:
      if (isRoot)
        for (size_t i = 0; i < count; ++i) check.expect(out, i, reducedValue(n, i, c.type, c.op), "out");
      break;
    case Coll::kBroadcast:
      for (size_t i = 0; i < count; ++i) check.expect(out, i, inputValue(c.root, i, c.type, c.op), "out");
      break;
    case Coll::kAllGather:
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) check.expect(out, r * count + i, inputValue(r, i, c.type, c.op), "out");
      break;
    case Coll::kReduceScatter:
      for (size_t i = 0; i < count; ++i) check.expect(out, i, reducedValue(n, rank * count + i, c.type, c.op), "out");
      break;
    case Coll::kGather:
      if (isRoot)
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < count; ++i) check.expect(out, r * count + i, inputValue(r, i, c.type, c.op), "out");
      break;
    case Coll::kScatter:
      for (size_t i = 0; i < count; ++i)
        check.expect(out, i, inputValue(c.root, rank * count + i, c.type, c.op), "out");
      break;
    case Coll::kAllToAll:
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < count; ++i)
          check.expect(out, p * count + i, inputValue(p, rank * count + i, c.type, c.op), "out");
      break;
    default:
      break;
  }
  // Outputs a rank must not receive stay untouched (non-roots of reduce and gather).
  bool untouchedOutput = !c.inPlace && ((c.coll == Coll::kReduce || c.coll == Coll::kGather) && !isRoot);
  if (untouchedOutput && !isPoisoned(recv.data(), recv.bytes)) check.problems += "wrote to a non-root's recvbuff; ";
  if (!recv.guardIntact() || !sendStorage.guardIntact()) check.problems += "wrote past the end of a buffer; ";
  return check.result();
}

std::vector<Case> standardCases(int n, bool thorough) {
  std::vector<Case> cases;
  const collDataType_t types[] = {collInt8,   collUint8,   collInt32,   collUint32,  collInt64,
                                  collUint64, collFloat16, collFloat32, collFloat64, collBfloat16};
  const collRedOp_t ops[] = {collSum, collProd, collMax, collMin, collAvg};
  const Coll colls[] = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce,   Coll::kAllGather, Coll::kReduceScatter,
                        Coll::kGather,    Coll::kScatter,   Coll::kAllToAll, Coll::kSendRecv};
  // 0, 1, odd, not a multiple of n; then larger than a pipeline step (512 KiB) and above the
  // one-shot limit so the ring and tree paths run.
  const size_t smallCounts[] = {0, 1, 7, static_cast<size_t>(3 * n + 1)};
  const size_t largeCount = 300007;
  for (Coll coll : colls) {
    int roots = rooted(coll) ? n : 1;
    for (collDataType_t type : types) {
      int nops = reduces(coll) ? 5 : 1;
      for (int o = 0; o < nops; ++o) {
        for (size_t count : smallCounts)
          for (int root = 0; root < roots; ++root)
            for (int inPlace = 0; inPlace < 2; ++inPlace)
              if (!(inPlace && (coll == Coll::kAllToAll || coll == Coll::kSendRecv)))
                cases.push_back({coll, type, ops[o], count, root, inPlace == 1});
        bool bigType = thorough || type == collFloat32 || type == collInt8 || type == collBfloat16;
        if (bigType && (o == 0 || o == 4 || thorough)) {
          cases.push_back(
              {coll, type, ops[o],
               largeCount / (coll == Coll::kAllGather || coll == Coll::kReduceScatter || coll == Coll::kGather ||
                                     coll == Coll::kScatter || coll == Coll::kAllToAll
                                 ? n
                                 : 1),
               roots - 1, false});
          if (coll != Coll::kAllToAll && coll != Coll::kSendRecv)
            cases.push_back({coll, type, ops[o], largeCount / n + 1, 0, true});
        }
      }
    }
  }
  cases.push_back({Coll::kBarrier, collUint8, collSum, 0, 0, false});
  return cases;
}

std::vector<std::string> runCases(collComm_t comm, int rank, int nranks, const std::vector<Case>& cases) {
  std::vector<std::string> failures;
  for (const Case& c : cases) {
    std::string problem = runCase(comm, rank, nranks, c);
    if (!problem.empty()) failures.push_back("rank " + std::to_string(rank) + ": " + c.describe() + ": " + problem);
    if (failures.size() > 20) break;
  }
  return failures;
}

}  // namespace colltest
