#include "transport/staged/staged_card.h"

#include <cstring>

#include "common/error.h"
#include "common/hash.h"

namespace coll {
namespace transport {
namespace {

// A carrier's card: its length (4 bytes), then its bytes.
constexpr size_t kLengthBytes = sizeof(uint32_t);
// No transport's card comes near this; a length above it is a malformed card, not an allocation.
constexpr uint32_t kMaxCarrierCardBytes = 1u << 20;

}  // namespace

uint64_t stagingLayoutDigest(const StagingLayout& layout, size_t frameBytes) {
  const device::ChannelGeometry& g = layout.geometry;
  return Fnv1a()
      .add(uint64_t(g.lanes))
      .add(uint64_t(g.slotBytes))
      .add(uint64_t(g.depth))
      .add(uint64_t(layout.regionBytes()))
      .add(uint64_t(frameBytes))
      .value();
}

std::string encodeStagedCard(const StagedCard& card) {
  std::string bytes(reinterpret_cast<const char*>(&card.header), sizeof card.header);
  for (const std::string& c : card.carrierCards) {
    const uint32_t length = static_cast<uint32_t>(c.size());
    bytes.append(reinterpret_cast<const char*>(&length), kLengthBytes);
    bytes += c;
  }
  return bytes;
}

StagedCard parseStagedCard(const std::string& bytes, int rank, int round, uint32_t carriers, uint64_t layoutDigest) {
  StagedCard card;
  if (bytes.size() < sizeof card.header)
    throwError(collInvalidUsage, "staged setup: rank %d sent a %zu-byte card, shorter than its %zu-byte header", rank,
               bytes.size(), sizeof card.header);
  memcpy(&card.header, bytes.data(), sizeof card.header);
  const StagedCardHeader& h = card.header;
  if (h.magic != kStagedCardMagic || h.rank != rank || h.round != round || h.carriers != carriers)
    throwError(collInvalidUsage,
               "staged setup: rank %d sent a card that is not one for round %d (magic, rank, round or its %u host "
               "transports differ from the %u expected)",
               rank, round, h.carriers, carriers);
  if (h.layoutDigest != layoutDigest)
    throwError(collInvalidUsage,
               "staged setup: rank %d stages device memory with another layout (a different build of libcollective, "
               "or COLL_SHM_SLOT_BYTES differs)",
               rank);
  size_t at = sizeof card.header;
  for (uint32_t i = 0; i < carriers; ++i) {
    uint32_t length = 0;
    if (bytes.size() - at < kLengthBytes)
      throwError(collInvalidUsage, "staged setup: rank %d's card ends before host transport %u's card", rank, i);
    memcpy(&length, bytes.data() + at, kLengthBytes);
    at += kLengthBytes;
    if (length > kMaxCarrierCardBytes || bytes.size() - at < length)
      throwError(collInvalidUsage,
                 "staged setup: rank %d's card gives host transport %u a %u-byte card, which it lacks", rank, i,
                 length);
    card.carrierCards.emplace_back(bytes.data() + at, length);
    at += length;
  }
  if (at != bytes.size())
    throwError(collInvalidUsage, "staged setup: rank %d's card has %zu bytes after its last part", rank,
               bytes.size() - at);
  return card;
}

}  // namespace transport
}  // namespace coll
