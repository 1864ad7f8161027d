// Every rank's buffers of one call, mapped in this process, for kernels that read and write them
// directly: the direct all-reduce between rank processes that share a GPU under MPS, as thread
// ranks do in one address space (kernels/cuda/direct_kernel.cuh). Per call, each rank describes
// its send and receive buffers (a fixed-size record: each buffer's allocation key, offset and IPC
// handle, and the call's bytes); the caller exchanges the records among the ranks through host
// memory; each rank then maps the peers' allocations through the IPC caches
// (ipc_buffer_cache.h: a mapping is reused only for the very allocation it was opened for).
// Ranks in this rank's own process need no mapping: their addresses are used as they are.
//
// A peer's record is checked before use: its size and marker, its rank, the call's bytes, and
// that each buffer holds the call inside its allocation as the record describes it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "transport/exchange_records.h"
#include "transport/ipc_buffer_cache.h"

namespace coll {
namespace transport {

class IpcCallBuffers {
 public:
  // sameProcess[r]: rank r runs in this process (its addresses are valid here). `capacity`: the
  // most peer allocations kept mapped.
  IpcCallBuffers(IpcDriver& driver, int rank, std::vector<bool> sameProcess, size_t capacity);

  // This rank's record of a call of `bytes` bytes from `send` into `recv` (equal: in place).
  // Throws collInvalidUsage, naming the buffer, where one is not device memory of a live
  // allocation or does not hold `bytes` bytes.
  std::vector<uint8_t> describe(const void* send, const void* recv, uint64_t bytes);

  // From every rank's record (records[r], this rank's own included): where each rank's buffers
  // are in this process. Throws collRemoteError naming the rank whose record is malformed or
  // describes buffers that do not hold the call. `quiesce` is called before a full cache may
  // close the least recently used mapping: it must wait until no launched kernel can still use
  // one (a kernel enqueued earlier may not have run yet).
  void map(const std::vector<std::vector<uint8_t>>& records, const void* send, void* recv, uint64_t bytes,
           const char** sends, char** recvs, const std::function<void()>& quiesce);

  // describe, exchange (every rank's record, through the caller's host all-gather) and map, as one
  // step that every rank joins even when it refuses its own buffers: it then sends an empty
  // record, which each peer's map refuses naming it, and throws its own error after the exchange,
  // so that no rank is left waiting in the exchange for it.
  void describeExchangeAndMap(const void* send, void* recv, uint64_t bytes, const ExchangeRecords& exchange,
                              const char** sends, char** recvs, const std::function<void()>& quiesce);

  uint64_t mappingsOpened() const { return imports_.opened(); }

 private:
  IpcExportCache exports_;
  IpcImportCache imports_;
  int rank_;
  std::vector<bool> sameProcess_;
};

}  // namespace transport
}  // namespace coll
