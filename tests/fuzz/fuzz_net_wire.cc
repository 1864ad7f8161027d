// Fuzz target: what the socket transport and the unique id read from strangers: a card read from
// the store (parseNetCard), a hello and a frame header read from a socket (checkNetHello,
// checkNetFrameHeader), and a unique id handed over by the user (decodeUniqueId). Malformed input
// must end in a CollError or a refusal message, never in a crash or an out-of-bounds read.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "bootstrap/unique_id.h"
#include "common/error.h"
#include "transport/net/net_card.h"
#include "transport/net/net_wire.h"

using namespace coll;
using namespace coll::transport;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const NetCard card = parseNetCard(bytes, 3);
    (void)netCardHost(card);
  } catch (const CollError&) {
  }
  if (size >= sizeof(NetHello)) {
    NetHello hello;
    std::memcpy(static_cast<void*>(&hello), data, sizeof(hello));
    const uint64_t nonce[2] = {1, 2};
    (void)checkNetHello(hello, nonce, 2, 8, 131072);
  }
  if (size >= sizeof(NetFrameHeader)) {
    NetFrameHeader header;
    std::memcpy(static_cast<void*>(&header), data, sizeof(header));
    (void)checkNetFrameHeader(header, 5, 131072);
    (void)checkNetFrameHeader(header, 5, 131072, /*sealed=*/true);
  }
  collUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::memcpy(id.internal, data, std::min(size, sizeof(id.internal)));
  try {
    (void)bootstrap::decodeUniqueId(id);
  } catch (const CollError&) {
  }
  return 0;
}
