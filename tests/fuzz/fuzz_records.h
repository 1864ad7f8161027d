// The keys the record fuzzer (fuzz_records.cc) opens with, shared with the program that wrote its
// seed corpus, so that the seeds are records that open and the fuzzer starts past the tag check.
#pragma once

#include <array>
#include <cstdint>

#include "common/record_layer.h"

namespace fuzzrecords {

inline coll::RecordKeys keys() {
  std::array<uint8_t, 32> secret{};
  for (size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<uint8_t>(i + 1);
  const uint8_t openerNonce[32] = {0x0f}, accepterNonce[32] = {0xac};
  return coll::deriveRecordKeys(secret, "fuzz_records", openerNonce, accepterNonce);
}

// The receiving side of the socket transport in the fuzzer: one socket, these slots.
constexpr int kDepth = 4;
constexpr size_t kSlotBytes = 4096;

}  // namespace fuzzrecords
