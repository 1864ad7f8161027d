#include "transport/p2p/p2p_card.h"

#include <cstring>

#include "common/error.h"
#include "common/hash.h"
#include "common/random.h"
#include "kernels/cuda/channel_layout.h"
#include "transport/p2p/same_gpu.h"

namespace coll {
namespace transport {

uint64_t p2pProcessIdentity() {
  static const uint64_t identity = [] {
    uint64_t value = 0;
    fillRandom(&value, sizeof(value), "the P2P process identity");
    return value;
  }();
  return identity;
}

uint64_t p2pLayoutDigest() {
  Fnv1a h;
  for (device::ChannelGeometry g : {device::kLLGeometry, device::kSimpleGeometry})
    h.add(uint64_t(g.protocol)).add(uint64_t(g.lanes)).add(uint64_t(g.slotBytes)).add(uint64_t(g.depth));
  return h.add(uint64_t(device::connectionBytes())).value();
}

std::string encodeP2pCard(const P2pCard& card) {
  return std::string(reinterpret_cast<const char*>(&card), sizeof card);
}

P2pCard parseP2pCard(const std::string& bytes, int expectedRank, int nranks) {
  P2pCard card;
  if (bytes.size() != sizeof(P2pCard))
    throwError(collInvalidUsage, "P2P setup: rank %d sent a %zu-byte locator, expected %zu", expectedRank, bytes.size(),
               sizeof(P2pCard));
  memcpy(&card, bytes.data(), sizeof card);
  if (card.magic != kP2pCardMagic || card.rank != expectedRank || card.nranks != nranks)
    throwError(collInvalidUsage, "P2P setup: rank %d sent a locator that is not one (magic, rank or size differ)",
               expectedRank);
  if (memchr(card.busId, '\0', sizeof card.busId) == nullptr)
    throwError(collInvalidUsage, "P2P setup: rank %d sent a GPU bus id of %zu bytes without an end", expectedRank,
               sizeof card.busId);
  if (card.layoutDigest != p2pLayoutDigest() || card.regionBytes != device::connectionBytes())
    throwError(collInvalidUsage, "P2P setup: rank %d uses another channel layout (a different build of libcollective?)",
               expectedRank);
  return card;
}

bool sameGpu(const P2pCard& a, const P2pCard& b) { return sameGpu(a.busId, a.device, b.busId, b.device); }

std::string gpuKey(const P2pCard& card) { return gpuKey(card.busId, card.device); }

}  // namespace transport
}  // namespace coll
