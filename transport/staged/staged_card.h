// What a rank publishes for the staged transport in each setup round: a fixed header (the staging
// layout's digest, which must match; its GPU, for the mode its kernels run in) followed by the
// cards of the host domains that carry its slices (their own setup rounds, nested in this one's).
// Everything from a peer is parsed strictly: sizes, counts and lengths before a byte is used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/staged/staging_layout.h"

namespace coll {
namespace transport {

constexpr uint32_t kStagedCardMagic = 0x73746731;  // "stg1"

struct StagedCardHeader {
  uint32_t magic;
  int32_t rank;
  int32_t round;
  uint32_t carriers;       // how many host domains' cards follow
  uint64_t layoutDigest;   // stagingLayoutDigest
  uint64_t gpuIdentity;    // StagingMemory::gpuIdentity
  int32_t mpsClient;       // 1: the rank reaches its GPU through MPS
  int32_t residentBlocks;  // blocks of the schedule kernel its GPU holds at once (0: unknown)
};

struct StagedCard {
  StagedCardHeader header;
  std::vector<std::string> carrierCards;  // one per host domain, in table order ("" past its rounds)
};

uint64_t stagingLayoutDigest(const StagingLayout& layout, size_t frameBytes);

std::string encodeStagedCard(const StagedCard& card);
// Throws collInvalidUsage naming `rank` when the card is malformed, of another round, or from a
// build or settings whose staging layout differs.
StagedCard parseStagedCard(const std::string& bytes, int rank, int round, uint32_t carriers, uint64_t layoutDigest);

}  // namespace transport
}  // namespace coll
