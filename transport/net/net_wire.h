// What the socket transport puts on the wire, and how it reads it back. Everything here arrives
// from the network and is checked field by field before use: a frame whose length, magic or
// sequence number is off ends the connection with an error naming the peer, never a crash or an
// out-of-bounds write.
//
// Two kinds of bytes cross a socket (the listener's card goes through the store: net_card.h):
//   - a hello, sent once by the connecting rank on each socket (NetHello), which must carry the
//     listener's random nonce: only a rank that read the store (and so knew the job's secret)
//     can produce it;
//   - frames: a 16-byte header (NetFrameHeader) and, for data, the payload of one FIFO slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace coll {
namespace transport {

constexpr uint64_t kNetHelloMagic = 0x6f6c6c656863636full;  // "occhello"
constexpr uint32_t kNetFrameData = 0x61746164;              // "data"
constexpr uint32_t kNetFrameBye = 0x20657962;               // "bye ": the peer destroyed its communicator

struct NetHello {
  uint64_t magic = kNetHelloMagic;
  uint64_t nonce[2] = {0, 0};  // the listener's nonce, from its card
  int32_t fromRank = -1;
  int32_t socketIndex = -1;
  int32_t socketsPerPeer = 0;
  int32_t depth = 0;
  uint64_t slotBytes = 0;
};
static_assert(sizeof(NetHello) == 48, "NetHello is a fixed-size record");

struct NetFrameHeader {
  uint32_t kind = kNetFrameData;
  uint32_t seq = 0;    // low 32 bits of the slot's sequence number: catches lost or reordered frames
  uint64_t bytes = 0;  // payload length, at most the slot size
};
static_assert(sizeof(NetFrameHeader) == 16, "NetFrameHeader is a fixed-size record");

// Why a hello is refused, or "" when it is acceptable. Expected values are the listener's own.
std::string checkNetHello(const NetHello& hello, const uint64_t nonce[2], int socketsPerPeer, int depth,
                          uint64_t slotBytes);

// Why a frame header is refused, or "" when it is acceptable.
std::string checkNetFrameHeader(const NetFrameHeader& header, uint32_t expectedSeq, size_t slotBytes);

}  // namespace transport
}  // namespace coll
