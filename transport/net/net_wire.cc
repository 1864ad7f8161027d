#include "transport/net/net_wire.h"

#include <arpa/inet.h>

#include <cstring>

#include "common/error.h"

namespace coll {
namespace transport {

NetCard makeNetCard(const std::string& host, uint16_t port, const uint64_t nonce[2]) {
  NetCard card;
  card.nonce[0] = nonce[0];
  card.nonce[1] = nonce[1];
  card.port = port;
  if (inet_pton(AF_INET, host.c_str(), card.address) == 1) {
    card.family = 4;
  } else if (inet_pton(AF_INET6, host.c_str(), card.address) == 1) {
    card.family = 6;
  } else {
    throwError(collInternalError, "socket transport: \"%s\" is not a numeric address", host.c_str());
  }
  return card;
}

NetCard parseNetCard(const std::string& bytes, int fromRank) {
  NetCard card;
  if (bytes.size() != sizeof(NetCard))
    throwError(collRemoteError, "rank %d published a socket address of %zu bytes, expected %zu", fromRank, bytes.size(),
               sizeof(NetCard));
  memcpy(&card, bytes.data(), sizeof(card));
  if (card.magic != kNetCardMagic || (card.family != 4 && card.family != 6) || card.port == 0)
    throwError(collRemoteError, "rank %d published a malformed socket address (family %u, port %u)", fromRank,
               static_cast<unsigned>(card.family), static_cast<unsigned>(card.port));
  return card;
}

std::string netCardHost(const NetCard& card) {
  char text[INET6_ADDRSTRLEN] = "";
  inet_ntop(card.family == 4 ? AF_INET : AF_INET6, card.address, text, sizeof(text));
  return text;
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

std::string checkNetFrameHeader(const NetFrameHeader& header, uint32_t expectedSeq, size_t slotBytes) {
  if (header.kind != kNetFrameData && header.kind != kNetFrameBye)
    return formatString("a frame of unknown kind 0x%08x (garbage on the connection?)", header.kind);
  if (header.seq != expectedSeq) return formatString("frame number %u where %u was expected", header.seq, expectedSeq);
  if (header.kind == kNetFrameBye && header.bytes != 0)
    return formatString("a closing frame with %llu payload bytes", static_cast<unsigned long long>(header.bytes));
  if (header.bytes > slotBytes)
    return formatString("a frame of %llu bytes, more than the %zu-byte slot",
                        static_cast<unsigned long long>(header.bytes), slotBytes);
  return "";
}

}  // namespace transport
}  // namespace coll
