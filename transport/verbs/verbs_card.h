// What a rank publishes for the verbs transport at setup, and its strict parsing: the port it
// answers on (LID for InfiniBand, GID for RoCE), the settings both ends must share, and per peer
// the QP that peer must connect to and where that peer writes its slots, credits and landing
// records. The card comes through the bootstrap store from another process: every length, count
// and rank in it is checked before use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coll {
namespace transport {

struct VerbsCardHeader {
  uint32_t magic = 0;
  uint32_t version = 0;
  uint8_t gid[16] = {};
  uint32_t lid = 0;
  uint32_t activeMtu = 0;  // enum ibv_mtu
  uint32_t rkey = 0;       // of the one region holding every peer's slots and credit words
  uint32_t depth = 0;
  uint64_t slotBytes = 0;
  uint32_t entryCount = 0;
  uint32_t qpsPerPeer = 0;  // COLL_IB_QPS_PER_CONNECTION: entries per peer
};

// One per QP towards each peer of the publisher: a peer's entries are consecutive, in QP order.
struct VerbsCardEntry {
  int32_t rank = -1;        // the peer this entry is for
  uint32_t qpn = 0;         // the publisher's QP towards that peer
  uint64_t slotsAddr = 0;   // where that peer writes its data slots
  uint64_t creditAddr = 0;  // where that peer writes how many of the publisher's slots it released
  uint64_t probeAddr = 0;   // where that peer's liveness probes land (never read)
  // Zero-copy receives (verbs_landing.h): where that peer writes its landing records for the
  // publisher's sends, and how many of the publisher's records it took.
  uint64_t mailboxAddr = 0;
  uint64_t acknowledgementAddr = 0;
};

struct VerbsCard {
  VerbsCardHeader header;
  std::vector<VerbsCardEntry> entries;
};

std::string encodeVerbsCard(const VerbsCard& card);
// Throws CollError: collRemoteError for a malformed card (naming `sender`), collInvalidUsage for
// settings that differ from this rank's (depth, slot bytes, QPs per peer).
VerbsCard parseVerbsCard(const std::string& bytes, int sender, int nranks, uint32_t depth, uint64_t slotBytes,
                         uint32_t qpsPerPeer);
// The entries `sender`'s card has for `rank`, one per QP in order; throws collRemoteError unless
// there are exactly qpsPerPeer of them.
std::vector<VerbsCardEntry> verbsCardEntriesFor(const VerbsCard& card, int sender, int rank);

}  // namespace transport
}  // namespace coll
