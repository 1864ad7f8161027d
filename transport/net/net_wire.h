// What the socket transport puts on the wire, and how it reads it back. Everything here arrives
// from the network and is checked field by field before use: a frame whose length, magic or
// sequence number is off ends the connection with an error naming the peer, never a crash or an
// out-of-bounds write.
//
// What crosses a socket (the listener's card goes through the store: net_card.h):
//   - a mutual challenge-response when the connection opens, which proves on both sides that the
//     other knows the job's secret without sending it (a captured exchange is worthless on another
//     connection: each proof covers the other side's fresh nonce):
//       dialler:  NetHello      the listener's card nonce, who it is, its settings, a fresh nonce
//       listener: NetChallenge  a fresh nonce, and its proof: HMAC(key, "listener", hello, nonce)
//       dialler:  checks that proof, then NetProof: HMAC(key, "dialler", hello, nonce)
//     where key = HMAC(job secret, label) (netConnectionKey);
//   - frames: a 24-byte header (NetFrameHeader: kind, sequence number, length, padding and the
//     slot's tag), `lead` zero bytes, for data the payload of one FIFO slot, and `trail` zero
//     bytes (both fewer than 64; see NetFrameHeader for why).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/hmac.h"

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
  uint8_t diallerNonce[32] = {};  // fresh per connection
};
static_assert(sizeof(NetHello) == 80, "NetHello is a fixed-size record");

struct NetChallenge {
  uint8_t listenerNonce[32] = {};  // fresh per connection
  uint8_t listenerProof[32] = {};
};
static_assert(sizeof(NetChallenge) == 64, "NetChallenge is a fixed-size record");

struct NetProof {
  uint8_t diallerProof[32] = {};
};
static_assert(sizeof(NetProof) == 32, "NetProof is a fixed-size record");

// The key a job's socket connections prove: derived from the job's secret, so that it serves no
// other purpose than this one.
Digest256 netConnectionKey(const std::array<uint8_t, 32>& jobSecret);
enum class NetRole { kListener, kDialler };
// A side's proof for the connection that `hello` opened and `listenerNonce` challenged.
Digest256 netProof(const Digest256& key, NetRole role, const NetHello& hello, const uint8_t listenerNonce[32]);
// Writes that proof into out[32].
void writeNetProof(const Digest256& key, NetRole role, const NetHello& hello, const uint8_t listenerNonce[32],
                   uint8_t out[32]);
// Whether proof[32] is that proof (compared in constant time).
bool netProofMatches(const Digest256& key, NetRole role, const NetHello& hello, const uint8_t listenerNonce[32],
                     const uint8_t proof[32]);

// The padding around a payload keeps the kernel's copies fast. A socket's sendmsg copies into
// page fragments, each write from where the last one ended (offset 0 of a fresh or reused page),
// so the payload's place in the kernel's memory follows the bytes written before it. Sent right
// after a bare 16-byte header, a page-aligned payload landed 16 bytes past its source's
// alignment, and the kernel's copy ran several times slower (its loads wait on the stores just
// ahead of them; docs/performance.md, "Defaults, and the measurement behind each"). So the
// sender puts `lead` zero bytes after the header, which give the payload its source's alignment
// modulo 64 in the kernel's pages, and `trail` zero bytes after it, which end every frame on a
// 64-byte boundary so that the next frame starts aligned too (netFramePadding).
struct NetFrameHeader {
  uint32_t kind = kNetFrameData;
  uint32_t seq = 0;    // low 32 bits of the slot's sequence number: catches lost or reordered frames
  uint32_t bytes = 0;  // payload length, at most the slot size
  uint8_t lead = 0;    // zero bytes between the header and the payload (< kNetFrameAlign)
  uint8_t trail = 0;   // zero bytes after the payload (< kNetFrameAlign)
  uint16_t reserved = 0;
  // The slot's tag (transport.h): the receiver checks it before the payload lands anywhere but
  // its slot. Opaque here; 0 in a closing frame.
  uint64_t tag = 0;
};
static_assert(sizeof(NetFrameHeader) == 24, "NetFrameHeader is a fixed-size record");
constexpr size_t kNetFrameAlign = 64;
// Payloads from this size on get a lead; below it the copy is too short to gain, and `trail`
// alone keeps the frames that follow aligned.
constexpr size_t kNetAlignedPayloadBytes = 4096;

// Sets header.lead and header.trail for a payload of header.bytes at `payload`.
void netFramePadding(NetFrameHeader& header, const void* payload);
// The bytes a frame takes on the wire: header, padding and payload.
inline size_t netFrameWireBytes(const NetFrameHeader& header) {
  return sizeof(header) + header.lead + header.bytes + header.trail;
}

// Why a hello is refused, or "" when it is acceptable. Expected values are the listener's own.
std::string checkNetHello(const NetHello& hello, const uint64_t nonce[2], int socketsPerPeer, int depth,
                          uint64_t slotBytes);

// The indices, among a pair's `socketsPerPeer` sockets, of those that carry the frames rank `from`
// sends to rank `to`; both ends compute the same. Between ranks of one host each direction has
// sockets of its own (even indices from the lower rank, odd from the higher): over loopback one
// direction moved faster on one socket than striped over two, and two directions faster on two
// sockets than sharing one (docs/performance.md, "Defaults, and the measurement behind each").
// Across hosts every socket carries both directions, striped, as NCCL's several sockets per peer do
// to fill a real link. With one socket, it carries both.
std::vector<int> netSocketsCarrying(int from, int to, int socketsPerPeer, bool sameHost);

// Why a frame header is refused, or "" when it is acceptable.
std::string checkNetFrameHeader(const NetFrameHeader& header, uint32_t expectedSeq, size_t slotBytes);

}  // namespace transport
}  // namespace coll
