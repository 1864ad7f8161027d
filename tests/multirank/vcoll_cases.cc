#include "vcoll_cases.h"

#include <cstdio>
#include <memory>

#include "guarded_memory.h"
#include "reference.h"

namespace colltest {
namespace {

// Values that moved from rank `from` (to rank `to`): below 97, so exact in every datatype, and
// with a period of 97 elements, so a block that lands a few elements off, or from the wrong rank,
// shows.
double moved(int from, int to, size_t index) {
  return static_cast<double>((from * 37 + to * 53 + index * 11 + 5) % 97);
}

// Displacements for `counts` as the placement lays them out; *extent is where the furthest ends.
std::vector<size_t> displsOf(const std::vector<size_t>& counts, Placement placement, size_t* extent) {
  const int n = static_cast<int>(counts.size());
  std::vector<size_t> displs(n);
  size_t at = 0;
  if (placement == Placement::kPacked) {
    for (int p = 0; p < n; ++p) displs[p] = at, at += counts[p];
  } else {
    at = 2;  // a gap before the first region too
    for (int p = n - 1; p >= 0; --p) displs[p] = at, at += counts[p] + 3;
  }
  *extent = 0;
  for (int p = 0; p < n; ++p)
    if (counts[p] > 0) *extent = std::max(*extent, displs[p] + counts[p]);
  return displs;
}

struct Checker {
  const VCase& c;
  std::string problems;
  int wrong = 0;
  void expect(const void* base, size_t index, double want, collRedOp_t op) {
    if (valueMatches(base, index, c.type, op, want)) return;
    if (++wrong <= 3) {
      char line[160];
      snprintf(line, sizeof(line), "out[%zu] = %g, expected %g; ", index, loadValue(base, index, c.type), want);
      problems += line;
    }
  }
  std::string result() {
    if (wrong > 3) problems += "(" + std::to_string(wrong) + " wrong in all)";
    return problems;
  }
};

// Elements of a receive buffer that no region covers must still hold the poison.
void expectGapsUntouched(Checker& check, const uint8_t* base, const std::vector<size_t>& counts,
                         const std::vector<size_t>& displs, size_t extent, size_t es) {
  std::vector<bool> covered(extent, false);
  for (size_t p = 0; p < counts.size(); ++p)
    for (size_t i = 0; i < counts[p]; ++i) covered[displs[p] + i] = true;
  for (size_t e = 0; e < extent; ++e)
    if (!covered[e] && !isPoisoned(base + e * es, es)) {
      check.problems += "wrote element " + std::to_string(e) + ", in a gap between receive regions; ";
      return;
    }
}

collResult_t issue(collComm_t comm, const VCase& c, const VLayout& l, const void* send, void* recv, int rank,
                   collStream_t stream) {
  switch (c.coll) {
    case VColl::kAllGatherV:
      return collAllGatherV(send, l.recvcounts[rank], recv, l.recvcounts.data(), l.rdispls.data(), c.type, comm,
                            stream);
    case VColl::kReduceScatterV:
      return collReduceScatterV(send, recv, l.recvcounts.data(), c.type, c.op, comm, stream);
    case VColl::kAllToAllV:
      return collAllToAllV(send, l.sendcounts.data(), l.sdispls.data(), recv, l.recvcounts.data(), l.rdispls.data(),
                           c.type, comm, stream);
  }
  return collInternalError;
}

}  // namespace

const char* vcollName(VColl coll) {
  static const char* names[] = {"AllGatherV", "ReduceScatterV", "AllToAllV"};
  return names[static_cast<int>(coll)];
}

std::string VCase::describe() const {
  static const char* shapes[] = {"uneven", "some-zero", "all-zero", "only-one", "alike"};
  char text[200];
  snprintf(text, sizeof(text), "%s %s %s %s x%zu %s %s", vcollName(coll), typeName(type),
           coll == VColl::kReduceScatterV ? opName(op) : "-", shapes[static_cast<int>(shape)], scale,
           placement == Placement::kPacked ? "packed" : "reversed-with-gaps", inPlace ? "in-place" : "out-of-place");
  return text;
}

size_t blockCount(const VCase& c, int of, int nranks) {
  const size_t p = static_cast<size_t>(of);
  switch (c.shape) {
    case CountShape::kUneven:
      return c.scale * (1 + (p * 5 + 3) % 7) + p;
    case CountShape::kSomeZero:
      return p % 3 == 1 ? 0 : c.scale * (p + 1) + 1;
    case CountShape::kAllZero:
      return 0;
    case CountShape::kOnlyOne:
      return of == nranks - 1 ? c.scale * 5 + 3 : 0;
    case CountShape::kAlike:
      return c.scale;
  }
  return 0;
}

size_t pairCount(const VCase& c, int from, int to, int nranks) {
  return blockCount(c, (from + 2 * to) % nranks, nranks);
}

VLayout layoutOf(const VCase& c, int rank, int n) {
  VLayout l;
  l.recvcounts.resize(n);
  switch (c.coll) {
    case VColl::kAllGatherV:
      for (int p = 0; p < n; ++p) l.recvcounts[p] = blockCount(c, p, n);
      l.rdispls = displsOf(l.recvcounts, c.placement, &l.recvElems);
      l.sendElems = l.recvcounts[rank];
      break;
    case VColl::kReduceScatterV:
      for (int p = 0; p < n; ++p) l.recvcounts[p] = blockCount(c, p, n), l.sendElems += l.recvcounts[p];
      l.recvElems = l.recvcounts[rank];
      break;
    case VColl::kAllToAllV:
      l.sendcounts.resize(n);
      for (int p = 0; p < n; ++p) {
        l.sendcounts[p] = pairCount(c, rank, p, n);
        l.recvcounts[p] = pairCount(c, p, rank, n);
      }
      l.sdispls = displsOf(l.sendcounts, c.placement, &l.sendElems);
      l.rdispls = displsOf(l.recvcounts, c.placement, &l.recvElems);
      break;
  }
  return l;
}

std::string runVCase(collComm_t comm, int rank, int n, const VCase& c, VCaseMemory* memory) {
  const size_t es = typeSize(c.type);
  const VLayout l = layoutOf(c, rank, n);
  // Misaligned on purpose: the kernels must not assume more than the element's alignment.
  GuardedMemory sendMem(l.sendElems * es, 8), recvMem(l.recvElems * es, 16);
  poison(sendMem.data(), sendMem.bytes());
  poison(recvMem.data(), recvMem.bytes());
  uint8_t* send = sendMem.data();
  uint8_t* recv = recvMem.data();
  Checker check{c, "", 0};
  size_t ownOffset = 0;  // ReduceScatterV: where this rank's block starts in the send buffer
  for (int p = 0; p < rank && c.coll == VColl::kReduceScatterV; ++p) ownOffset += l.recvcounts[p];
  switch (c.coll) {
    case VColl::kAllGatherV:
      if (c.inPlace) send = recv + l.rdispls[rank] * es;
      for (size_t i = 0; i < l.sendElems; ++i) storeValue(send, i, c.type, moved(rank, 0, i));
      break;
    case VColl::kReduceScatterV:
      for (size_t i = 0; i < l.sendElems; ++i) storeValue(send, i, c.type, inputValue(rank, i, c.type, c.op));
      if (c.inPlace) recv = send + ownOffset * es;
      break;
    case VColl::kAllToAllV:
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < l.sendcounts[p]; ++i) storeValue(send, l.sdispls[p] + i, c.type, moved(rank, p, i));
      break;
  }
  const VCaseMemory::Issue call = [&](const void* s, void* r, collStream_t stream) {
    return issue(comm, c, l, s, r, rank, stream);
  };
  const collResult_t rc =
      memory != nullptr ? memory->run(sendMem, recvMem, send, recv, call) : call(send, recv, nullptr);
  if (rc != collSuccess) return std::string("call failed: ") + collGetErrorString(rc) + ": " + collGetLastError(comm);
  switch (c.coll) {
    case VColl::kAllGatherV:
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < l.recvcounts[p]; ++i) check.expect(recv, l.rdispls[p] + i, moved(p, 0, i), collSum);
      expectGapsUntouched(check, recv, l.recvcounts, l.rdispls, l.recvElems, es);
      break;
    case VColl::kReduceScatterV:
      for (size_t i = 0; i < l.recvElems; ++i)
        check.expect(recv, i, reducedValue(n, ownOffset + i, c.type, c.op), c.op);
      break;
    case VColl::kAllToAllV:
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < l.recvcounts[p]; ++i) check.expect(recv, l.rdispls[p] + i, moved(p, rank, i), collSum);
      expectGapsUntouched(check, recv, l.recvcounts, l.rdispls, l.recvElems, es);
      break;
  }
  check.problems += sendMem.damage("send buffer") + recvMem.damage("receive buffer");
  return check.result();
}

std::vector<VCase> standardVCases() {
  const collDataType_t types[] = {collInt8,   collUint8,   collInt32,   collUint32,  collInt64,
                                  collUint64, collFloat16, collFloat32, collFloat64, collBfloat16};
  const struct {
    CountShape shape;
    size_t scale;
    bool everyOp;
  } shapes[] = {{CountShape::kUneven, 1, false},
                {CountShape::kUneven, 5, true},
                {CountShape::kSomeZero, 2, true},
                {CountShape::kAllZero, 1, false},
                {CountShape::kOnlyOne, 4, false}};
  std::vector<VCase> cases;
  for (collDataType_t type : types)
    for (const auto& s : shapes) {
      for (Placement placement : {Placement::kPacked, Placement::kReversedWithGaps}) {
        for (bool inPlace : {false, true})
          cases.push_back({VColl::kAllGatherV, type, collSum, s.shape, s.scale, placement, inPlace});
        cases.push_back({VColl::kAllToAllV, type, collSum, s.shape, s.scale, placement, false});
      }
      for (collRedOp_t op : {collSum, collProd, collMax, collMin, collAvg}) {
        if (op != collSum && !s.everyOp) continue;
        for (bool inPlace : {false, true})
          cases.push_back({VColl::kReduceScatterV, type, op, s.shape, s.scale, Placement::kPacked, inPlace});
      }
    }
  // Past a pipeline chunk: rings take several loops, FIFOs wrap.
  for (collDataType_t type : {collInt8, collFloat32, collBfloat16}) {
    for (bool inPlace : {false, true}) {
      cases.push_back(
          {VColl::kAllGatherV, type, collSum, CountShape::kUneven, 2000, Placement::kReversedWithGaps, inPlace});
      cases.push_back({VColl::kReduceScatterV, type, collSum, CountShape::kUneven, 2000, Placement::kPacked, inPlace});
    }
    cases.push_back({VColl::kAllToAllV, type, collSum, CountShape::kUneven, 2000, Placement::kReversedWithGaps, false});
  }
  cases.push_back(
      {VColl::kReduceScatterV, collFloat32, collAvg, CountShape::kOnlyOne, 3000, Placement::kPacked, false});
  return cases;
}

std::vector<std::string> runVCases(collComm_t comm, int rank, int nranks, const std::vector<VCase>& cases) {
  std::vector<std::string> failures;
  for (const VCase& c : cases) {
    std::string problem = runVCase(comm, rank, nranks, c);
    if (!problem.empty()) failures.push_back("rank " + std::to_string(rank) + ": " + c.describe() + ": " + problem);
    if (failures.size() > 20) break;
  }
  return failures;
}

}  // namespace colltest
