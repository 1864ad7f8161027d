// What a rank publishes to the other ranks of its host, in the two setup rounds of the shared-
// memory domain:
//   round 0, the verdict: whether this rank may read the memory of every other local rank (it
//            probed them through the words their PeerInfo names, transport/peer_info.h), and
//            whether it may take their descriptors (ShmSegment::canTakePeerDescriptors);
//   round 1, the segment: where this rank's segment is ("memfd:PID:FD", or a name), made
//            anonymous only when every local rank said yes to both in round 0.
// Cards come from other processes: they are parsed strictly, and a malformed one is refused with
// an error naming its sender.
#pragma once

#include <string>

namespace coll {
namespace transport {

struct ShmVerdict {
  bool canReadPeers = false;
  bool canTakeDescriptors = false;
};

std::string makeShmVerdictCard(const ShmVerdict& verdict);
// Throws CollError(collRemoteError) naming fromRank when the card is malformed.
ShmVerdict parseShmVerdictCard(const std::string& card, int fromRank);

std::string makeShmSegmentCard(const std::string& locator);
// The locator (ShmSegment::open parses it further). Throws like parseShmVerdictCard.
std::string parseShmSegmentCard(const std::string& card, int fromRank);

}  // namespace transport
}  // namespace coll
