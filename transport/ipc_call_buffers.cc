#include "transport/ipc_call_buffers.h"

#include <cstring>
#include <exception>
#include <utility>

#include "common/error.h"

namespace coll {
namespace transport {
namespace {

constexpr uint32_t kRecordMarker = 0x43425546;  // "FUBC": a call-buffers record of this build

struct WireBuffer {
  uint64_t pointer;  // the caller's address, valid in the caller's process
  uint64_t base;
  uint64_t bytes;
  uint64_t bufferId;
  uint64_t offset;  // pointer - base
  uint8_t handle[64];
};

struct WireRecord {
  uint32_t marker;
  int32_t rank;
  uint64_t callBytes;
  WireBuffer send;
  WireBuffer recv;
};

WireBuffer describeBuffer(IpcExportCache& exports, const void* pointer, uint64_t bytes, const char* what) {
  const auto [key, handle] = exports.exportFor(pointer);
  WireBuffer b{};
  b.pointer = reinterpret_cast<uint64_t>(pointer);
  b.base = key.base;
  b.bytes = key.bytes;
  b.bufferId = key.bufferId;
  b.offset = b.pointer - key.base;
  if (b.offset > key.bytes || key.bytes - b.offset < bytes)
    throwError(collInvalidUsage,
               "the %s buffer at %p holds %llu bytes to the end of its allocation: the call needs %llu", what,
               pointer, static_cast<unsigned long long>(key.bytes - b.offset), static_cast<unsigned long long>(bytes));
  memcpy(b.handle, handle.data(), sizeof b.handle);
  return b;
}

void checkBuffer(const WireBuffer& b, uint64_t bytes, int rank, const char* what) {
  if (b.offset != b.pointer - b.base || b.offset > b.bytes || b.bytes - b.offset < bytes)
    throwError(collRemoteError,
               "rank %d described its %s buffer as offset %llu in an allocation of %llu bytes: it cannot hold the "
               "call's %llu bytes",
               rank, what, static_cast<unsigned long long>(b.offset), static_cast<unsigned long long>(b.bytes),
               static_cast<unsigned long long>(bytes));
}

}  // namespace

IpcCallBuffers::IpcCallBuffers(IpcDriver& driver, int rank, std::vector<bool> sameProcess, size_t capacity)
    : exports_(driver), imports_(driver, capacity), rank_(rank),
      sameProcess_(std::move(sameProcess)) {}

std::vector<uint8_t> IpcCallBuffers::describe(const void* send, const void* recv, uint64_t bytes) {
  WireRecord record{};
  record.marker = kRecordMarker;
  record.rank = rank_;
  record.callBytes = bytes;
  record.send = describeBuffer(exports_, send, bytes, "send");
  record.recv = describeBuffer(exports_, recv, bytes, "receive");
  std::vector<uint8_t> bytesOut(sizeof record);
  memcpy(bytesOut.data(), &record, sizeof record);
  return bytesOut;
}

void IpcCallBuffers::map(const std::vector<std::vector<uint8_t>>& records, const void* send, void* recv,
                         uint64_t bytes, const char** sends, char** recvs, const std::function<void()>& quiesce) {
  const int n = static_cast<int>(sameProcess_.size());
  if (static_cast<int>(records.size()) != n)
    throwError(collInternalError, "call buffers: %zu records for %d ranks", records.size(), n);
  for (int r = 0; r < n; ++r) {
    if (r == rank_) {
      sends[r] = static_cast<const char*>(send);
      recvs[r] = static_cast<char*>(recv);
      continue;
    }
    WireRecord record{};
    if (records[r].empty())
      throwError(collRemoteError, "rank %d refused its own buffers for this call (its error says why)", r);
    if (records[r].size() != sizeof record)
      throwError(collRemoteError, "rank %d sent a call-buffers record of %zu bytes: expected %zu (another build?)", r,
                 records[r].size(), sizeof record);
    memcpy(&record, records[r].data(), sizeof record);
    if (record.marker != kRecordMarker || record.rank != r)
      throwError(collRemoteError, "rank %d sent a call-buffers record marked %#x for rank %d: expected %#x, rank %d",
                 r, record.marker, record.rank, kRecordMarker, r);
    if (record.callBytes != bytes)
      throwError(collRemoteError, "rank %d's call moves %llu bytes, this rank's %llu: the ranks' calls differ", r,
                 static_cast<unsigned long long>(record.callBytes), static_cast<unsigned long long>(bytes));
    checkBuffer(record.send, bytes, r, "send");
    checkBuffer(record.recv, bytes, r, "receive");
    if (sameProcess_[r]) {
      sends[r] = reinterpret_cast<const char*>(record.send.pointer);
      recvs[r] = reinterpret_cast<char*>(record.recv.pointer);
      continue;
    }
    auto mapped = [&](const WireBuffer& b) {
      const AllocationKey key{b.base, b.bytes, b.bufferId};
      // A new mapping in a full cache closes the least recently used one, which a kernel
      // enqueued earlier may still be about to use.
      if (!imports_.holds(r, key) && imports_.size() >= imports_.capacity()) quiesce();
      IpcHandleBytes handle;
      memcpy(handle.data(), b.handle, handle.size());
      return static_cast<char*>(imports_.mappingFor(r, key, handle)) + b.offset;
    };
    sends[r] = mapped(record.send);
    recvs[r] = mapped(record.recv);
  }
}

void IpcCallBuffers::describeExchangeAndMap(const void* send, void* recv, uint64_t bytes,
                                            const ExchangeRecords& exchange, const char** sends, char** recvs,
                                            const std::function<void()>& quiesce) {
  std::vector<uint8_t> mine;
  std::exception_ptr refused;
  try {
    mine = describe(send, recv, bytes);
  } catch (...) {
    refused = std::current_exception();
  }
  const std::vector<std::vector<uint8_t>> records = exchange(mine);
  if (refused) std::rethrow_exception(refused);
  map(records, send, recv, bytes, sends, recvs, quiesce);
}

}  // namespace transport
}  // namespace coll
