// What a rank publishes for the socket transport: where it listens (a numeric address and port)
// and a random nonce that a connecting peer must present in its hello (net_wire.h). Only a rank
// that read the card through the rendezvous store, and so knew the job's secret, can.
//
// Which address: loopback when every rank of the communicator runs on this machine (kernel and
// network namespace); otherwise the interface named by COLL_SOCKET_IFNAME, else the one this
// rank reaches the rendezvous store through. Loopback with ranks elsewhere is refused on the
// spot: they could never connect.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/domain.h"

namespace coll {
namespace transport {

constexpr uint64_t kNetCardMagic = 0x64726163636c6f63ull;  // "colccard"

struct NetCard {
  uint64_t magic = kNetCardMagic;
  uint64_t nonce[2] = {0, 0};
  uint8_t address[16] = {};  // IPv4 in the first 4 bytes, or IPv6
  uint16_t port = 0;
  uint8_t family = 0;  // 4 or 6
  uint8_t pad[5] = {};
};
static_assert(sizeof(NetCard) == 48, "NetCard is a fixed-size record");

// Builds the card for a numeric address ("10.0.0.1", "::1") and port.
NetCard makeNetCard(const std::string& host, uint16_t port, const uint64_t nonce[2]);
// Parses a card received through the store; throws CollError(collRemoteError) naming `fromRank`
// when it is malformed.
NetCard parseNetCard(const std::string& bytes, int fromRank);
// The card's address as text, e.g. "10.0.0.1".
std::string netCardHost(const NetCard& card);

// The numeric address `rank` listens on (above). Throws collInvalidUsage for loopback when some
// rank runs elsewhere, and for a COLL_SOCKET_IFNAME that matches no interface.
std::string chooseListenAddress(const std::vector<PeerInfo>& peers, int rank, const TransportSettings& settings);

}  // namespace transport
}  // namespace coll
