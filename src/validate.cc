#include "src/validate.h"

#include <algorithm>
#include <cstdint>

#include "common/cuda_device.h"
#include "common/enum_bits.h"
#include "common/error.h"
#include "kernels/cpu/reduce.h"
#include "src/call_tag.h"
#include "src/collective_table.h"

namespace coll {
namespace {

static_assert(kMaxBufferBits <= kCallTagSizeBits, "a call tag holds every count and byte size validation lets through");

}  // namespace

void refuseDeviceBuffers(const char* fn, const CollCall& c) {
  // One look at the thread's context for both buffers: every host call makes this check, and on
  // a machine without a GPU it is all the check ever finds.
  if (!cudaContextIsCurrent()) return;
  const struct {
    const char* name;
    const void* pointer;
  } buffers[] = {{"sendbuff", c.sendbuff}, {"recvbuff", c.recvbuff}};
  for (const auto& b : buffers) {
    int device = -1;
    if (isDeviceOnlyMemory(b.pointer, &device))
      throwError(collInvalidArgument,
                 "%s: %s %p is device memory (GPU %d), but stream is NULL, which means host buffers: pass the CUDA "
                 "stream the call belongs on (cudaStreamLegacy for the default stream)",
                 fn, b.name, b.pointer, device);
  }
}

namespace {

// Where the address space of a 64-bit Linux process ends for a buffer that starts at `address`: a
// buffer that starts below 2^47 ends there (4-level page tables on x86-64; arm64's 48-bit spaces
// map above it), any other at 2^56 (5-level page tables, arm64's 52-bit spaces).
constexpr uint64_t kLowAddressTop = uint64_t{1} << 47;
uint64_t addressSpaceTopFor(uintptr_t address) {
  return address < kLowAddressTop ? kLowAddressTop : uint64_t{1} << kMaxBufferBits;
}

// Each buffer the call uses (sendMul or recvMul above zero) must fit there: a larger count cannot
// describe memory the caller has (it is a negative or uninitialised value, or a count of the wrong
// unit), and taken as given it would size the library's work, and a peer's expectations, by it.
// Out of line: the usual buffers never come here (refuseBadBuffers).
__attribute__((noinline, cold)) void refuseBeyondAddressSpace(const char* fn, const CollCall& c, size_t sendMul,
                                                              size_t recvMul) {
  const struct {
    const char* name;
    const void* buffer;
    size_t multiple;
  } buffers[] = {{"sendbuff", c.sendbuff, sendMul}, {"recvbuff", c.recvbuff, recvMul}};
  for (const auto& b : buffers) {
    if (b.multiple == 0) continue;
    const size_t bytes = c.count * c.elemSize * b.multiple;  // did not overflow (refuseBadBuffers)
    const auto address = reinterpret_cast<uintptr_t>(b.buffer);
    const uint64_t top = addressSpaceTopFor(address);
    if (address < top && bytes <= top - address) continue;
    throwError(collInvalidArgument,
               "%s: count %zu of %s (x%zu) is %zu bytes, which from %s %p runs past the end of the address space "
               "(0x%llx): expected at most %llu bytes there",
               fn, c.count, kernels::dataTypeName(c.datatype), b.multiple, bytes, b.name, b.buffer,
               static_cast<unsigned long long>(top),
               static_cast<unsigned long long>(address < top ? top - address : 0));
  }
}

void refuseBadDatatype(const char* fn, const CollCall& c) {
  if (enumBits(c.datatype) < 0 || enumBits(c.datatype) >= collNumTypes)
    throwError(collInvalidArgument, "%s: datatype %d is out of range: expected a collDataType_t in [0, %d)", fn,
               enumBits(c.datatype), static_cast<int>(collNumTypes));
}

// The buffer rules every call with data follows, in the order they are checked: its bytes (times
// the larger multiple) fit in size_t, a buffer it uses is not NULL, both buffers lie below the low
// address space's top (else refuseBeyondAddressSpace looks closer), and send and receive buffers
// overlap only in place. The first rule a call breaks; inline, so that the usual call pays a few
// comparisons and anything else goes the long way (refuseBadBuffers says it in words).
enum class BufferFault { kNone, kOverflow, kNullSend, kNullRecv, kAboveLowSpace, kOverlap };

inline bool overlapNotInPlace(const CollCall& c, const CollectiveRow& row, int rank, size_t sendMul,
                              size_t recvMul) {
  if (sendMul == 0 || recvMul == 0) return false;
  const auto send = reinterpret_cast<uintptr_t>(c.sendbuff);
  const auto recv = reinterpret_cast<uintptr_t>(c.recvbuff);
  const size_t bytes = c.count * c.elemSize;
  const bool overlap = send < recv + bytes * recvMul && recv < send + bytes * sendMul;
  return overlap && (row.inPlace == nullptr || !row.inPlace(c, rank));
}

inline BufferFault firstBufferFault(const CollCall& c, const CollectiveRow& row, int rank, size_t sendMul,
                                    size_t recvMul) {
  size_t maxMul = sendMul > recvMul ? sendMul : recvMul;
  if (maxMul == 0) maxMul = 1;
  size_t totalBytes;  // overflow checked by multiplying: two divisions showed on an 8-byte call
  if (__builtin_mul_overflow(c.count, c.elemSize, &totalBytes) ||
      __builtin_mul_overflow(totalBytes, maxMul, &totalBytes))
    return BufferFault::kOverflow;
  if (c.count == 0) return BufferFault::kNone;
  if (sendMul > 0 && c.sendbuff == nullptr) return BufferFault::kNullSend;
  if (recvMul > 0 && c.recvbuff == nullptr) return BufferFault::kNullRecv;
  // Both buffers fit in the address space where the higher of them starts below 2^47 and the
  // larger is smaller than the room above it: one comparison for the usual buffers.
  const uintptr_t highest = std::max(reinterpret_cast<uintptr_t>(c.sendbuff), reinterpret_cast<uintptr_t>(c.recvbuff));
  if (highest >= kLowAddressTop || totalBytes > kLowAddressTop - highest) return BufferFault::kAboveLowSpace;
  return overlapNotInPlace(c, row, rank, sendMul, recvMul) ? BufferFault::kOverlap : BufferFault::kNone;
}

// Says what firstBufferFault found. A call above the low address space may still be right (5-level
// page tables); then only its overlap is left to check.
__attribute__((noinline, cold)) void refuseBadBuffers(const char* fn, const CollCall& c, const CollectiveRow& row,
                                                      int rank, size_t sendMul, size_t recvMul, BufferFault fault) {
  const size_t maxMul = std::max<size_t>({sendMul, recvMul, 1});
  switch (fault) {
    case BufferFault::kNone:
      return;
    case BufferFault::kOverflow:
      throwError(collInvalidArgument, "%s: count %zu of %s (x%zu ranks) overflows size_t bytes", fn, c.count,
                 kernels::dataTypeName(c.datatype), maxMul);
    case BufferFault::kNullSend:
      throwError(collInvalidArgument, "%s: sendbuff is NULL with count %zu: expected a buffer of %zu bytes", fn,
                 c.count, c.count * c.elemSize * sendMul);
    case BufferFault::kNullRecv:
      throwError(collInvalidArgument, "%s: recvbuff is NULL with count %zu: expected a buffer of %zu bytes", fn,
                 c.count, c.count * c.elemSize * recvMul);
    case BufferFault::kAboveLowSpace:
      refuseBeyondAddressSpace(fn, c, sendMul, recvMul);
      if (!overlapNotInPlace(c, row, rank, sendMul, recvMul)) return;
      break;
    case BufferFault::kOverlap:
      break;
  }
  const size_t sendBytes = c.count * c.elemSize * sendMul, recvBytes = c.count * c.elemSize * recvMul;
  throwError(collInvalidArgument,
             "%s: sendbuff %p (%zu bytes) and recvbuff %p (%zu bytes) overlap without being in place: expected "
             "disjoint buffers%s%s",
             fn, c.sendbuff, sendBytes, c.recvbuff, recvBytes, row.inPlace ? " or in place, " : "", row.inPlaceRule);
}

void checkBuffers(const char* fn, const CollCall& c, const CollectiveRow& row, int rank, size_t sendMul,
                  size_t recvMul) {
  const BufferFault fault = firstBufferFault(c, row, rank, sendMul, recvMul);
  if (fault != BufferFault::kNone) refuseBadBuffers(fn, c, row, rank, sendMul, recvMul, fault);
}

// Variable counts: the rules of refuseBadBuffers over the extents the arrays gave (call.counts).
void refuseBadExtents(const char* fn, const CollCall& c, const CollectiveRow& row, int rank) {
  const struct {
    const char* name;
    const void* buffer;
    size_t elems;
  } buffers[] = {{"sendbuff", c.sendbuff, c.counts->sendElems}, {"recvbuff", c.recvbuff, c.counts->recvElems}};
  size_t bytes[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const auto& b = buffers[i];
    if (__builtin_mul_overflow(b.elems, c.elemSize, &bytes[i]))
      throwError(collInvalidArgument, "%s: %s spans %zu elements of %s, which overflows size_t bytes", fn, b.name,
                 b.elems, kernels::dataTypeName(c.datatype));
    if (b.elems == 0) continue;
    if (b.buffer == nullptr)
      throwError(collInvalidArgument, "%s: %s is NULL with %zu elements to hold: expected a buffer of %zu bytes", fn,
                 b.name, b.elems, bytes[i]);
    const auto address = reinterpret_cast<uintptr_t>(b.buffer);
    const uint64_t top = addressSpaceTopFor(address);
    if (address >= top || bytes[i] > top - address)
      throwError(collInvalidArgument,
                 "%s: %s %p spans %zu elements of %s (%zu bytes), which runs past the end of the address space "
                 "(0x%llx): expected at most %llu bytes there",
                 fn, b.name, b.buffer, b.elems, kernels::dataTypeName(c.datatype), bytes[i],
                 static_cast<unsigned long long>(top),
                 static_cast<unsigned long long>(address < top ? top - address : 0));
  }
  if (bytes[0] == 0 || bytes[1] == 0) return;
  const auto send = reinterpret_cast<uintptr_t>(c.sendbuff), recv = reinterpret_cast<uintptr_t>(c.recvbuff);
  const bool overlap = send < recv + bytes[1] && recv < send + bytes[0];
  if (overlap && (row.inPlace == nullptr || !row.inPlace(c, rank)))
    throwError(collInvalidArgument,
               "%s: sendbuff %p (%zu bytes) and recvbuff %p (%zu bytes) overlap without being in place: expected "
               "disjoint buffers%s%s",
               fn, c.sendbuff, bytes[0], c.recvbuff, bytes[1], row.inPlace ? " or in place, " : "", row.inPlaceRule);
}

// Sends and receives have one buffer each and no root or op: their checks alone, without the
// collectives' rules, as each message of a send/receive loop makes them (an 8-byte pair is a few
// hundred instructions in all).
void validatePointToPoint(const char* fn, CollCall& c, int rank, int nranks) {
  refuseBadDatatype(fn, c);
  c.elemSize = kernels::dataTypeSize(c.datatype);
  if (c.peer < 0 || c.peer >= nranks)
    throwError(collInvalidArgument, "%s: peer %d is out of range: expected 0 <= peer < %d (the communicator's size)",
               fn, c.peer, nranks);
  const CollectiveRow& row = collectiveRow(c.type);
  checkBuffers(fn, c, row, rank, row.sendMultiple(rank, 0, nranks), row.recvMultiple(rank, 0, nranks));
}

}  // namespace

void validateCall(const char* fn, CollCall& c, int rank, int nranks) {
  const CollectiveRow& row = collectiveRow(c.type);
  if (!row.hasData) return;
  if (row.pointToPoint) {
    validatePointToPoint(fn, c, rank, nranks);
    return;
  }
  refuseBadDatatype(fn, c);
  c.elemSize = kernels::dataTypeSize(c.datatype);
  if (row.reducing && (enumBits(c.op) < 0 || enumBits(c.op) >= collNumOps))
    throwError(collInvalidArgument, "%s: op %d is out of range: expected a collRedOp_t in [0, %d)", fn, enumBits(c.op),
               static_cast<int>(collNumOps));
  if (row.rooted && (c.root < 0 || c.root >= nranks))
    throwError(collInvalidArgument, "%s: root %d is out of range: expected 0 <= root < %d (the communicator's size)",
               fn, c.root, nranks);
  if (row.variableCounts) {
    row.checkCounts(fn, c, rank, nranks);
    refuseBadExtents(fn, c, row, rank);
    return;
  }
  checkBuffers(fn, c, row, rank, row.sendMultiple(rank, c.root, nranks), row.recvMultiple(rank, c.root, nranks));
}

}  // namespace coll
