// The two halves of a staged connection, as the proxy (staging_proxy.h) drives them: each moves
// one peer's slices between the kernels' slots in pinned host memory and a host connection
// (transport.h), call after call, in the order of the connection's plans (staging_plan.h).
//
//   sender:   a frame's lanes posted by the kernel (ready flag 1) -> copied into a host slot,
//             posted -> each lane whose last bytes went out is handed back (flag 0);
//   receiver: a frame arrived (its tag and size checked against the plan) -> each piece copied into its
//             lane's slot once the kernel freed it (flag 0) -> a lane whose last bytes landed is
//             marked full (flag 1) for the kernel; with an uploader (COLL_STAGED_RECV=copy) its
//             slot is first copied into the lane's slot in device memory, and marked full once
//             that copy is complete (slot_uploader.h).
//
// Credits end to end: the kernel cannot post more than a lane's depth of slots before the sender
// hands them back, the sender cannot post more frames than the host FIFO has slots, the receiver
// takes a frame only into free slots and releases the host slot only once the whole frame landed.
// Neither half blocks: progress() moves what it can and says what it waits for.
//
// Flags are the kernels' (kernels/cuda/simple_protocol.cuh) in memory both sides map: loads
// acquire what the writer published before its release store, stores release what was written.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "transport/staged/slot_uploader.h"
#include "transport/staged/staging_layout.h"
#include "transport/staged/staging_plan.h"
#include "transport/transport.h"

namespace coll {
namespace transport {

// What one round of progress found.
enum class StagedProgress {
  kIdle,            // no plan left
  kMoved,           // something changed hands
  kWaitsForKernel,  // the next lane is not posted (sender) or its slot not free (receiver)
  kWaitsForPeer,    // the host connection has no free slot (sender) or no frame yet (receiver)
  kWaitsForCopy,    // nothing moved and the receiver's copies into device memory are running
};

// The plans of one half's calls, in order, and where the next frame to move is.
class PlanQueue {
 public:
  void push(ConnectionPlan plan) {
    if (!plan.empty()) plans_.push_back(std::move(plan));
  }
  // The next frame (and its plan in *plan), dropping plans that are done; nullptr when none is left.
  const StagedFrame* next(const ConnectionPlan** plan);
  void advance() { ++nextFrame_; }
  bool empty() const { return plans_.empty(); }

 private:
  std::deque<ConnectionPlan> plans_;
  size_t nextFrame_ = 0;
};

class StagedSender {
 public:
  // region: the host's view of the pinned region the kernels write what they send to `peer`.
  StagedSender(int peer, char* region, const StagingLayout& layout) : peer_(peer), region_(region), layout_(layout) {}
  void enqueue(ConnectionPlan plan) { plans_.push(std::move(plan)); }
  // Throws CollError(collInternalError) for a connection whose slots are smaller than the frames.
  StagedProgress progress(SendConnection& connection);
  bool idle() const { return plans_.empty(); }
  int peer() const { return peer_; }

 private:
  bool lanesPosted(const ConnectionPlan& plan, const StagedFrame& frame) const;
  void handBack(const ConnectionPlan& plan, const StagedFrame& frame);

  int peer_;
  char* region_;
  StagingLayout layout_;
  PlanQueue plans_;
};

// Where a receiver's slots are read by the kernels: in its pinned region, or (copy-then-reduce) in
// device memory the uploader copies them into.
struct DeviceSlots {
  SlotUploader* uploader = nullptr;  // null: the kernels read the pinned slots
  char* slots = nullptr;             // the device's view of the lanes' slots (layout.slotsBytes())
  // A copy not complete after this long fails the receiver (0: never): on the GPU it can wait in
  // a hardware queue behind this rank's own collective stream, which waits for it.
  int64_t copyTimeoutNs = 0;
};

class StagedReceiver {
 public:
  // region: the host's view of the pinned region where what `peer` sends this rank lands.
  StagedReceiver(int peer, char* region, const StagingLayout& layout, DeviceSlots device = {});
  void enqueue(ConnectionPlan plan) { plans_.push(std::move(plan)); }
  // Throws CollError(collRemoteError) for a frame of another call (its tag) or whose size differs
  // from the plan's, collTimeout for a copy into device memory that does not complete.
  StagedProgress progress(RecvConnection& connection);
  bool idle() const { return plans_.empty() && uploads_.empty(); }
  int peer() const { return peer_; }

 private:
  struct Upload {
    uint64_t number;  // the uploader's
    uint32_t slot;    // lane * depth + slot
    uint32_t* flag;
    int64_t startedNs;
  };
  [[noreturn]] void throwFrameOfAnotherCall(const ConnectionPlan& plan, uint64_t tag) const;
  // Copies the frame's pieces from nextPiece_ on into free slots; false when a slot is not free.
  bool land(const ConnectionPlan& plan, const StagedFrame& frame, const char* data);
  // A transfer whose last bytes landed: marked full, or its copy into device memory started.
  void complete(const StagedTransfer& t, uint32_t* flag);
  // Marks full the slots whose copies completed; true when any was. Throws collTimeout for the
  // oldest copy running longer than the device slots' copyTimeoutNs.
  bool retireUploads();
  // What to say when nothing moved: a copy still running, or what the caller saw.
  StagedProgress waiting(StagedProgress otherwise) const {
    return uploads_.empty() ? otherwise : StagedProgress::kWaitsForCopy;
  }

  int peer_;
  char* region_;
  StagingLayout layout_;
  DeviceSlots device_;
  PlanQueue plans_;
  std::deque<Upload> uploads_;          // started, in order
  std::vector<uint64_t> uploadOfSlot_;  // per slot: its copy's number while it runs, else 0
  uint32_t nextPiece_ = 0;           // within the current frame
  uint64_t landedBytes_ = 0;         // of the current frame, by the pieces before nextPiece_
  const char* frameData_ = nullptr;  // the current frame, peeked and not yet released
};

}  // namespace transport
}  // namespace coll
