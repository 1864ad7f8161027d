#include "transport/net/net_wire.h"

#include <cstring>

#include "common/error.h"

namespace coll {
namespace transport {

std::vector<int> netSocketsCarrying(int from, int to, int socketsPerPeer, bool sameHost) {
  std::vector<int> sockets;
  const bool ownLanes = sameHost && socketsPerPeer >= 2;
  const int parity = from < to ? 0 : 1;
  for (int s = 0; s < socketsPerPeer; ++s)
    if (!ownLanes || s % 2 == parity) sockets.push_back(s);
  return sockets;
}

std::string checkNetHello(const NetHello& hello, const uint64_t nonce[2], int socketsPerPeer, int depth,
                          uint64_t slotBytes) {
  if (hello.magic != kNetHelloMagic) return "not a libcollective hello";
  if (hello.nonce[0] != nonce[0] || hello.nonce[1] != nonce[1]) return "wrong nonce (another job or communicator?)";
  if (hello.socketsPerPeer != socketsPerPeer || hello.depth != depth || hello.slotBytes != slotBytes)
    return formatString("different socket settings (%d sockets, depth %d, %llu-byte slots; here %d, %d, %llu)",
                        hello.socketsPerPeer, hello.depth, static_cast<unsigned long long>(hello.slotBytes),
                        socketsPerPeer, depth, static_cast<unsigned long long>(slotBytes));
  if (hello.socketIndex < 0 || hello.socketIndex >= socketsPerPeer)
    return formatString("socket index %d outside [0, %d)", hello.socketIndex, socketsPerPeer);
  return "";
}

Digest256 netConnectionKey(const std::array<uint8_t, 32>& jobSecret) {
  static const char kLabel[] = "libcollective socket transport v1: connection key";
  return hmacSha256({jobSecret.data(), jobSecret.size()}, {{kLabel, sizeof(kLabel) - 1}});
}

Digest256 netProof(const Digest256& key, NetRole role, const NetHello& hello, const uint8_t listenerNonce[32]) {
  static const char kListener[] = "libcollective socket transport v1: listener proof";
  static const char kDialler[] = "libcollective socket transport v1: dialler proof";
  const char* label = role == NetRole::kListener ? kListener : kDialler;
  return hmacSha256({key.data(), key.size()},
                    {{label, std::strlen(label)}, {&hello, sizeof(hello)}, {listenerNonce, 32}});
}

void writeNetProof(const Digest256& key, NetRole role, const NetHello& hello, const uint8_t listenerNonce[32],
                   uint8_t out[32]) {
  const Digest256 proof = netProof(key, role, hello, listenerNonce);
  std::memcpy(out, proof.data(), proof.size());
}

bool netProofMatches(const Digest256& key, NetRole role, const NetHello& hello, const uint8_t listenerNonce[32],
                     const uint8_t proof[32]) {
  const Digest256 expected = netProof(key, role, hello, listenerNonce);
  return equalInConstantTime(proof, expected.data(), expected.size());
}

std::string checkNetFrameHeader(const NetFrameHeader& header, uint32_t expectedSeq, size_t slotBytes) {
  if (header.kind != kNetFrameData && header.kind != kNetFrameBye)
    return formatString("a frame of unknown kind 0x%08x (garbage on the connection?)", header.kind);
  if (header.seq != expectedSeq) return formatString("frame number %u where %u was expected", header.seq, expectedSeq);
  if (header.kind == kNetFrameBye && (header.bytes != 0 || header.tag != 0))
    return formatString("a closing frame with %llu payload bytes and tag 0x%016llx (expected none)",
                        static_cast<unsigned long long>(header.bytes), static_cast<unsigned long long>(header.tag));
  if (header.bytes > slotBytes)
    return formatString("a frame of %llu bytes, more than the %zu-byte slot",
                        static_cast<unsigned long long>(header.bytes), slotBytes);
  if (header.lead >= kNetFrameAlign || header.trail >= kNetFrameAlign || header.reserved != 0)
    return formatString("a frame with %u and %u bytes of padding and reserved field 0x%04x (at most %zu, %zu and 0)",
                        header.lead, header.trail, header.reserved, kNetFrameAlign - 1, kNetFrameAlign - 1);
  return "";
}

void netFramePadding(NetFrameHeader& header, const void* payload) {
  const size_t align = kNetFrameAlign;
  const size_t address = reinterpret_cast<uintptr_t>(payload);
  header.lead =
      header.bytes >= kNetAlignedPayloadBytes ? static_cast<uint8_t>((address - sizeof(NetFrameHeader)) % align) : 0;
  header.trail = 0;
  header.trail = static_cast<uint8_t>((align - netFrameWireBytes(header) % align) % align);
}

}  // namespace transport
}  // namespace coll
