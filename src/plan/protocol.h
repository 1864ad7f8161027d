// The device protocol of one call: LL for small messages (latency), Simple for the rest
// (bandwidth). A pure function of arguments equal on every rank, so every rank picks the same
// protocol and both ends of every connection cut the data the same way.
#pragma once

#include <cstddef>

#include "kernels/cuda/device_step.h"
#include "src/coll_call.h"
#include "src/params.h"

namespace coll {

// Largest per-rank buffer (the larger of input and output, in bytes) that LL carries by default.
// LL moves 4 data bytes per 8-byte line, so it costs twice the memory traffic of Simple: worth it
// only while the fixed cost of a ready flag and a fence per slot dominates.
constexpr size_t kLLMaxBytes = 64 << 10;

// The larger of what this call reads and writes per rank, in bytes (gather-like calls count the
// full nranks-sized buffer: the collective's row says which, DataLayout::largestPerRank). The same
// on every rank: a variable-count call counts the sum its ranks agree on, or SIZE_MAX where they
// agree on none (all-to-all).
size_t deviceCallBytes(const CollCall& call, int nranks);

// kernelsConcurrent: the ranks' kernels are guaranteed to run at the same time (ranks are threads
// of one process, sharing a context), so a kernel may wait for a peer's kernel. Without that
// guarantee the call runs in serialized mode (docs/cuda.md), which needs Simple's ready flags:
// LL, even forced with COLL_PROTO=LL, becomes Simple there.
device::Protocol chooseProtocol(const CollCall& call, int nranks, bool kernelsConcurrent, ProtoChoice forced);
// The same for a transfer of `bytes` (a group of sends and receives: its largest).
device::Protocol chooseProtocolOfBytes(size_t bytes, bool kernelsConcurrent, ProtoChoice forced);

}  // namespace coll
