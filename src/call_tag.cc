#include "src/call_tag.h"

#include "common/error.h"
#include "kernels/cpu/reduce.h"

namespace coll {
namespace {

constexpr uint64_t kPointToPointKind = uint64_t{static_cast<uint8_t>(CollType::kSend)} + 1;

uint64_t kindOf(CallTag tag) { return tag >> 60; }
uint64_t sizeOf(CallTag tag) { return tag & kCallTagSizeMask; }
bool isPointToPoint(CallTag tag) { return kindOf(tag) == kPointToPointKind; }

}  // namespace

std::string describeCallTag(CallTag tag) {
  const uint64_t kind = kindOf(tag);
  const auto size = static_cast<unsigned long long>(sizeOf(tag));
  if (kind == 0 || kind > static_cast<uint64_t>(CollType::kCount))
    return formatString("nothing this rank knows (tag 0x%016llx)", static_cast<unsigned long long>(tag));
  if (kind == kPointToPointKind) return formatString("%llu bytes", size);
  const int type = static_cast<int>((tag >> kCallTagSizeBits) & 0xf);
  const char* name = collTypeName(static_cast<CollType>(kind - 1));
  if (type >= collNumTypes) return formatString("%s with count %llu of datatype %d", name, size, type);
  const auto datatype = static_cast<collDataType_t>(type);
  return formatString("%s with count %llu of %s (%llu bytes)", name, size, kernels::dataTypeName(datatype),
                      size * static_cast<unsigned long long>(kernels::dataTypeSize(datatype)));
}

std::string describeTagMismatch(int peer, CallTag theirs, int rank, CallTag mine) {
  const std::string sent = describeCallTag(theirs), expected = describeCallTag(mine);
  if (isPointToPoint(theirs) && isPointToPoint(mine))
    return formatString(
        "rank %d sent %s where this rank (%d) receives %s: a send and the receive it meets must have the same size in "
        "bytes",
        peer, sent.c_str(), rank, expected.c_str());
  if (isPointToPoint(theirs) || isPointToPoint(mine))
    return formatString(
        "rank %d sent the bytes of %s%s where this rank (%d) runs %s%s: every rank must make the same calls in the "
        "same order",
        peer, isPointToPoint(theirs) ? "a send of " : "", sent.c_str(), rank,
        isPointToPoint(mine) ? "a receive of " : "", expected.c_str());
  return formatString(
      "rank %d called %s where this rank (%d) called %s: every rank must pass the same count and datatype "
      "(COLL_CHECK=1 names the first rank that differs)",
      peer, sent.c_str(), rank, expected.c_str());
}

void throwTagMismatch(int peer, CallTag theirs, int rank, CallTag mine) {
  throw CallMismatchError(collRemoteError, describeTagMismatch(peer, theirs, rank, mine));
}

}  // namespace coll
