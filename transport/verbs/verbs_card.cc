#include "transport/verbs/verbs_card.h"

#include <cstring>

#include "common/error.h"

namespace coll {
namespace transport {
namespace {

constexpr uint32_t kMagic = 0x76726273;  // "vrbs"
constexpr uint32_t kVersion = 3;         // 2: several QPs per peer; 3: landing mailboxes

}  // namespace

std::string encodeVerbsCard(const VerbsCard& card) {
  VerbsCardHeader header = card.header;
  header.magic = kMagic;
  header.version = kVersion;
  header.entryCount = static_cast<uint32_t>(card.entries.size());
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof(header));
  if (!card.entries.empty())
    bytes.append(reinterpret_cast<const char*>(card.entries.data()), card.entries.size() * sizeof(VerbsCardEntry));
  return bytes;
}

VerbsCard parseVerbsCard(const std::string& bytes, int sender, int nranks, uint32_t depth, uint64_t slotBytes,
                         uint32_t qpsPerPeer) {
  VerbsCard card;
  if (bytes.size() < sizeof(VerbsCardHeader))
    throwError(collRemoteError, "rank %d published a verbs card of %zu bytes, shorter than its header", sender,
               bytes.size());
  std::memcpy(&card.header, bytes.data(), sizeof(VerbsCardHeader));
  const VerbsCardHeader& h = card.header;
  if (h.magic != kMagic || h.version != kVersion)
    throwError(collRemoteError, "rank %d published a verbs card of another format (magic %#x, version %u)", sender,
               h.magic, h.version);
  if (h.qpsPerPeer != qpsPerPeer)
    throwError(collInvalidUsage,
               "rank %d connects with %u queue pair(s) per peer, this rank with %u (COLL_IB_QPS_PER_CONNECTION must be "
               "equal on every rank)",
               sender, h.qpsPerPeer, qpsPerPeer);
  if (h.entryCount > static_cast<uint64_t>(nranks) * qpsPerPeer ||
      bytes.size() != sizeof(VerbsCardHeader) + size_t{h.entryCount} * sizeof(VerbsCardEntry))
    throwError(collRemoteError, "rank %d published a verbs card of %zu bytes with %u entries (%d ranks)", sender,
               bytes.size(), h.entryCount, nranks);
  if (h.depth != depth || h.slotBytes != slotBytes)
    throwError(collInvalidUsage,
               "rank %d's verbs FIFOs have %u slots of %llu bytes, this rank's %u of %llu (COLL_NET_FIFO_DEPTH and "
               "COLL_SHM_SLOT_BYTES must be equal on every rank)",
               sender, h.depth, static_cast<unsigned long long>(h.slotBytes), depth,
               static_cast<unsigned long long>(slotBytes));
  card.entries.resize(h.entryCount);
  if (h.entryCount > 0)
    std::memcpy(card.entries.data(), bytes.data() + sizeof(VerbsCardHeader), h.entryCount * sizeof(VerbsCardEntry));
  for (const VerbsCardEntry& e : card.entries)
    if (e.rank < 0 || e.rank >= nranks || e.qpn == 0)
      throwError(collRemoteError, "rank %d published a verbs card entry for rank %d, qp %u", sender, e.rank, e.qpn);
  return card;
}

std::vector<VerbsCardEntry> verbsCardEntriesFor(const VerbsCard& card, int sender, int rank) {
  std::vector<VerbsCardEntry> found;
  for (const VerbsCardEntry& e : card.entries)
    if (e.rank == rank) found.push_back(e);
  if (found.empty())
    throwError(collRemoteError, "rank %d's verbs card has no queue pair for rank %d (routes that differ?)", sender,
               rank);
  if (found.size() != card.header.qpsPerPeer)
    throwError(collRemoteError, "rank %d's verbs card has %zu queue pairs for rank %d, not %u", sender, found.size(),
               rank, card.header.qpsPerPeer);
  return found;
}

}  // namespace transport
}  // namespace coll
