#include "transport/shm/shm_card.h"

#include <cstdint>
#include <cstring>

#include "common/error.h"

namespace coll {
namespace transport {
namespace {

constexpr uint32_t kVerdictMagic = 0x76736d63;  // "cmsv"
constexpr char kSegmentPrefix[] = "shm1:";
constexpr size_t kMaxLocatorBytes = 255;

constexpr uint32_t kCanRead = 1, kCanTake = 2;

struct VerdictCard {
  uint32_t magic;
  uint32_t flags;  // kCanRead | kCanTake, nothing else
};

[[noreturn]] void malformed(int fromRank, const char* what, size_t bytes) {
  throwError(collRemoteError,
             "shared memory setup: rank %d sent a malformed %s card (%zu bytes; a different libcollective version?)",
             fromRank, what, bytes);
}

}  // namespace

std::string makeShmVerdictCard(const ShmVerdict& verdict) {
  VerdictCard card{kVerdictMagic,
                   (verdict.canReadPeers ? kCanRead : 0u) | (verdict.canTakeDescriptors ? kCanTake : 0u)};
  return std::string(reinterpret_cast<const char*>(&card), sizeof(card));
}

ShmVerdict parseShmVerdictCard(const std::string& bytes, int fromRank) {
  VerdictCard card;
  if (bytes.size() != sizeof(card)) malformed(fromRank, "verdict", bytes.size());
  memcpy(&card, bytes.data(), sizeof(card));
  if (card.magic != kVerdictMagic || (card.flags & ~(kCanRead | kCanTake)) != 0)
    malformed(fromRank, "verdict", bytes.size());
  ShmVerdict verdict;
  verdict.canReadPeers = (card.flags & kCanRead) != 0;
  verdict.canTakeDescriptors = (card.flags & kCanTake) != 0;
  return verdict;
}

std::string makeShmSegmentCard(const std::string& locator) { return kSegmentPrefix + locator; }

std::string parseShmSegmentCard(const std::string& card, int fromRank) {
  const size_t prefix = sizeof(kSegmentPrefix) - 1;
  if (card.size() <= prefix || card.size() > prefix + kMaxLocatorBytes || card.compare(0, prefix, kSegmentPrefix) != 0)
    malformed(fromRank, "segment", card.size());
  for (size_t i = prefix; i < card.size(); ++i)
    if (card[i] < 0x21 || card[i] > 0x7e) malformed(fromRank, "segment", card.size());
  return card.substr(prefix);
}

}  // namespace transport
}  // namespace coll
