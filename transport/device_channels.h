// A capability of domains that carry device memory (p2p): where this rank's kernels read what
// each peer sends and write what it sends (kernels/cuda/channel_layout.h), the kernels' status
// word, and a way to stop them. It is to the device engine (src/exec/device_engine.h) what send
// and receive connections are to the host executor. CUDA-free: only pointers cross here.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "collective.h"
#include "common/clock.h"
#include "kernels/cuda/channel_layout.h"
#include "transport/exchange_records.h"

namespace coll {
namespace transport {

// A call as the host side of the channels sees it: the steps lowered for this rank, and how they
// are cut into slices (kernels/cuda/device_step.h), and the call's tag (src/call_tag.h), which
// every frame a host connection carries for it holds (transport.h): 0 for a group of sends and
// receives, whose frames are checked by their sizes alone. describeTag, where given, puts a tag in
// words for the message of a frame of another call.
struct CallShape {
  const device::DeviceStep* steps = nullptr;
  uint32_t nsteps = 0;
  uint32_t elemSize = 1;
  device::ChannelGeometry geometry = device::kSimpleGeometry;
  uint64_t tag = 0;
  std::string (*describeTag)(uint64_t tag) = nullptr;
};

collResult_t deviceStatusError(const volatile device::DeviceStatus* status, int rank, std::string* message);

class DeviceChannels {
 public:
  virtual ~DeviceChannels() = default;
  virtual int device() const = 0;
  // Whether the members' kernels run at the same time (threads of one process, or one rank per
  // GPU), so that a kernel may wait for a peer's kernel; otherwise every unit is its own launch
  // and the stream waits for its slots (docs/cuda.md, "Several ranks per GPU").
  virtual bool kernelsConcurrent() const = 0;
  // Whether every member is a thread of this process on this GPU, so that a kernel may use a
  // peer's call buffers by their addresses (the direct all-reduce, kernels/cuda/direct_kernel.cuh).
  virtual bool sharedAddressSpace() const = 0;
  // Per rank: where this rank reads what the rank sends it, and where it writes what it sends.
  virtual const std::vector<device::PeerChannels>& hostTable() const = 0;
  virtual const device::PeerChannels* deviceTable() const = 0;
  // The kernels' status word: host-mapped memory, readable at any time without synchronizing.
  virtual device::DeviceStatus* deviceStatus() const = 0;
  virtual const volatile device::DeviceStatus* hostStatus() const = 0;
  virtual unsigned long long* laneBarrier() const = 0;
  // 16 bytes of device memory, for calls without buffers (barrier).
  virtual void* scratch() const = 0;
  // Asks this rank's running and future kernels to stop at their next wait.
  virtual void requestAbort() = 0;

  // Channels whose bytes the host moves for some peers (staging through pinned host memory,
  // transport/staged): a call about to be launched, in launch order, so that the host side knows
  // what each connection carries. Throws when the host side failed earlier.
  virtual void beginCall(const CallShape& call) { (void)call; }
  // What went wrong, without blocking: the kernels' report, or the host side's own failure.
  virtual collResult_t pollError(int rank, std::string* message) const {
    return deviceStatusError(hostStatus(), rank, message);
  }
  // After the last launch ended: waits until the host side has moved what the kernels handed it.
  // Throws its failure, or collTimeout at the deadline.
  virtual void drain(Deadline deadline) { (void)deadline; }
  // Takes `other`'s channels to `ranks` into this one's table, so that one kernel reaches peers
  // of both (P2P inside a host, staging across hosts); false where these channels cannot.
  virtual bool adoptPeers(const DeviceChannels& other, const std::vector<int>& ranks) {
    (void)other, (void)ranks;
    return false;
  }

  // Whether mapCallBuffers serves these channels: rank processes on one GPU whose kernels run
  // together (MPS), which then may use each other's call buffers as threads do.
  virtual bool mapsCallBuffers() const { return false; }
  // Every rank's buffers of a call of `bytes` bytes as mapped in this process (sends[r],
  // recvs[r]), after `exchange` gave every rank's description; `quiesce` waits until no launched
  // kernel can still use a mapping about to be closed. Only where mapsCallBuffers().
  virtual void mapCallBuffers(const void* send, void* recv, uint64_t bytes, const ExchangeRecords& exchange,
                              const std::function<void()>& quiesce, const char** sends, char** recvs) {
    (void)send, (void)recv, (void)bytes, (void)exchange, (void)quiesce, (void)sends, (void)recvs;
  }
};

// What a rank's kernels reported in their status word: collSuccess, collTimeout (a wait past its
// deadline) or collRemoteError (aborted), with a message naming the rank, the peer and the step.

}  // namespace transport
}  // namespace coll
