// What one staged connection carries in one device call, and how it goes over the wire: a pure
// function of the call's lowered steps (kernels/cuda/device_step.h), so that the sender and the
// receiver of a connection, each from its own rank's program, derive the same plan and check
// every byte count the wire brings against it.
//
// The kernels move a step in slices and a slice in lanes: lane l of slice s of a step on a
// connection that carried `seq` slices before it is one *transfer*, held in slot
// (seq + s) % depth of lane l (device_step.h). A connection's transfers, in order of sequence
// number and then lane, are what its proxy moves between the pinned slots and a host connection.
//
// Frames. A host connection carries frames of at most `frameBytes` (its slot). A frame holds
// consecutive lanes of one slice only: small shares of many lanes travel together (one system
// call instead of sixteen), and a lane's share larger than a frame is split over several. A frame
// never mixes two slices, because a later slice may depend on what an earlier one delivers at
// the other end (a ring's next step), and a frame waits for all it holds. An empty transfer (a
// lane with no elements in a small slice) is a frame of 0 bytes that never goes on the wire: its
// slot still changes hands, in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/device_step.h"
#include "transport/device_channels.h"

namespace coll {
namespace transport {

// One lane's share of one slice on a connection.
struct StagedTransfer {
  uint32_t seq;  // the connection's slice number in this call
  uint32_t lane;
  uint64_t bytes;  // may be 0
};

// Bytes [offset, offset + bytes) of one transfer, carried in a frame.
struct FramePiece {
  uint32_t transfer;  // index into ConnectionPlan::transfers
  uint64_t offset;
  uint64_t bytes;
};

struct StagedFrame {
  uint32_t firstPiece;  // index into ConnectionPlan::pieces
  uint32_t pieces;      // at least 1
  uint64_t bytes;       // the pieces' total; 0: not sent, an empty transfer changing hands
};

struct ConnectionPlan {
  std::vector<StagedTransfer> transfers;
  std::vector<FramePiece> pieces;
  std::vector<StagedFrame> frames;
  uint64_t tag = 0;  // the call's (CallShape): every frame goes out with it and must arrive with it
  std::string (*describeTag)(uint64_t tag) = nullptr;
  bool empty() const { return transfers.empty(); }
  uint64_t bytes() const;
};

enum class StagedDirection { kSend, kReceive };

// The plan of this rank's connection to (kSend) or from (kReceive) `peer` in the call.
ConnectionPlan planConnection(const CallShape& call, int peer, StagedDirection direction, size_t frameBytes);

}  // namespace transport
}  // namespace coll
