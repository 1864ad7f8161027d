// A schedule is what one rank does for one collective call: an ordered list of steps. Every
// algorithm is a pure function that builds one (algorithms.h), so schedules can be unit-tested by
// simulating all ranks in one process, and the host executor (executor.h) runs them over any
// transport. The CUDA path lowers the same vocabulary to device primitives.
//
// One step vocabulary covers send, recv, recvReduceSend, recvReduceCopySend, recvCopySend and
// copy: a step reads from its receive peers' slots and optionally a local source, reduces them
// when there is more than one, and writes the result to an optional local destination and to
// every send peer. The executor moves a step slice by slice (one transport slot each), so a
// step's sends and receives pipeline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace coll {

constexpr int kMaxStepPeers = 16;

// kAddress refers to memory by address: point-to-point calls in a group each bring their own.
enum class BufferId : uint8_t { kNone, kSend, kRecv, kAddress };

// A place in one of the call's buffers, in elements.
struct BufferRef {
  BufferId buffer = BufferId::kNone;
  size_t offset = 0;
  void* address = nullptr;  // with kAddress
};

struct Step {
  int recvPeers[kMaxStepPeers];
  int sendPeers[kMaxStepPeers];
  int nrecv = 0;
  int nsend = 0;
  BufferRef src;          // local source, if any
  BufferRef dst;          // local destination, if any
  size_t count = 0;       // elements
  bool finalAvg = false;  // collAvg: divide by nranks when storing this step's results
  bool joinNext = false;  // progress together with the following step (independent transfers)
  // Where the local source stands among the step's sources when they are reduced: before the
  // receive peer at this index, or after all of them (-1). Sources are combined left to right, so
  // ranks that list the same values in the same order get bitwise-identical results.
  int8_t localSourceAt = -1;
  // Begin only once every earlier send of this call has left the caller's memory: a step that
  // writes where an earlier step sent from (in place) must not change bytes a socket still reads.
  bool afterSends = false;
  // The tag this step's slices carry and must arrive with (src/call_tag.h), for steps that bring
  // their own call (point-to-point); 0: the call's.
  uint64_t tag = 0;

  Step& recvFrom(int peer) {
    recvPeers[nrecv++] = peer;
    return *this;
  }
  Step& sendTo(int peer) {
    sendPeers[nsend++] = peer;
    return *this;
  }
};

struct Schedule {
  std::vector<Step> steps;
  std::string algorithm;  // for logs and COLL_DEBUG=TRACE

  Step& add(size_t count) {
    steps.emplace_back();
    steps.back().count = count;
    return steps.back();
  }
};

inline BufferRef sendAt(size_t offset) { return {BufferId::kSend, offset, nullptr}; }
inline BufferRef recvAt(size_t offset) { return {BufferId::kRecv, offset, nullptr}; }
inline BufferRef atAddress(const void* address) { return {BufferId::kAddress, 0, const_cast<void*>(address)}; }

}  // namespace coll
