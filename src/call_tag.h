// What every byte a rank sends carries about the call it belongs to, so that the receiver checks
// it before a byte lands (docs/errors.md, "Counts and datatypes that differ"): one 64-bit word,
// compared whole. Transports carry it as opaque bits (transport/transport.h): each FIFO slot, each
// socket frame, each one-shot input and each direct-read offer holds the tag of the call that
// wrote it.
//
//   bits 60-63  the collective, CollType + 1 (0: no tag); Send for both ends of a send/receive
//   bits 56-59  the datatype of a collective; 0 for a send/receive, which moves bytes
//   bits 0-55   the count of a collective, the bytes of a send/receive
//
// Every rank of a collective makes the same word from the same call, and a send and the receive
// that meets it make the same word from the same size, so equal words mean matching calls. Counts
// and byte sizes stay below 2^56: validation refuses larger ones (validate.cc).
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"
#include "src/coll_call.h"

namespace coll {

using CallTag = uint64_t;
constexpr int kCallTagSizeBits = 56;
constexpr uint64_t kCallTagSizeMask = (uint64_t{1} << kCallTagSizeBits) - 1;
static_assert(static_cast<int>(CollType::kCount) <= 15, "the collective and 0 (no tag) fit in a tag's 4 bits");

// Inline: every call makes one. A validated call's datatype is below 16 and its count below 2^56
// (validate.h), so nothing is masked.
inline CallTag collectiveTagOf(const CollCall& call) {
  return (uint64_t{static_cast<uint8_t>(call.type)} + 1) << 60 | uint64_t{static_cast<uint32_t>(call.datatype)}
                                                                        << kCallTagSizeBits |
         call.count;
}
inline CallTag pointToPointTagOf(const CollCall& call) {
  return (uint64_t{static_cast<uint8_t>(CollType::kSend)} + 1) << 60 | call.count * call.elemSize;
}
inline CallTag callTagOf(const CollCall& call) {
  return call.type == CollType::kSend || call.type == CollType::kRecv ? pointToPointTagOf(call)
                                                                      : collectiveTagOf(call);
}

// "AllReduce with count 100000 of float (400000 bytes)", "a send of 400000 bytes".
std::string describeCallTag(CallTag tag);

// Why a call cannot go on: rank `peer` sent bytes of the call `theirs` where this rank, `rank`,
// runs `mine`. It names both counts and says what every rank must do.
std::string describeTagMismatch(int peer, CallTag theirs, int rank, CallTag mine);

// A failure that says how calls differ between ranks: the communicator leaves its message where
// peers that learn of the failure only from a closed connection can read it (comm_failure.cc).
class CallMismatchError : public CollError {
 public:
  using CollError::CollError;
};

// Throws CallMismatchError (collRemoteError) with describeTagMismatch: a rank that sees a peer's
// bytes of another call fails, and so do the peers, which learn of it from this rank's failure.
[[noreturn]] void throwTagMismatch(int peer, CallTag theirs, int rank, CallTag mine);

}  // namespace coll
