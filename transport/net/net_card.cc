#include "transport/net/net_card.h"

#include <arpa/inet.h>

#include <cstring>

#include "common/error.h"
#include "common/logging.h"
#include "common/net_interfaces.h"

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

std::string chooseListenAddress(const std::vector<PeerInfo>& peers, int rank, const TransportSettings& settings) {
  bool allOnThisMachine = true;
  for (const auto& p : peers) allOnThisMachine = allOnThisMachine && p.machineHash == peers[rank].machineHash;
  std::vector<InterfaceAddress> interfaces = listInterfaces();
  std::string address, why;
  if (!settings.socketIfname.empty()) {
    address = chooseInterfaceAddress(interfaces, settings.socketIfname);
    why = "COLL_SOCKET_IFNAME=" + settings.socketIfname;
  } else if (allOnThisMachine) {
    address = "127.0.0.1";
    why = "every rank is on this host";
  } else {
    address = settings.rendezvousAddress;
    why = "the interface that reaches the rendezvous store";
    if (address.empty()) {
      address = chooseInterfaceAddress(interfaces, "");
      why = "the first interface that is not loopback";
    }
  }
  std::string name = "?";
  bool loopback = address == "127.0.0.1" || address == "::1";
  for (const auto& i : interfaces) {
    if (i.address != address) continue;
    name = i.name;
    loopback = loopback || i.loopback;
  }
  if (loopback && !allOnThisMachine)
    throwError(
        collInvalidUsage,
        "communicator init: rank %d would use loopback (%s) for sockets, but other ranks run on other hosts; set "
        "COLL_SOCKET_IFNAME to an interface they can reach, and MASTER_ADDR to a routable address",
        rank, address.c_str());
  COLL_INFO(kInit, "rank %d: socket transport on interface %s (%s): %s", rank, name.c_str(), address.c_str(),
            why.c_str());
  return address;
}

}  // namespace transport
}  // namespace coll
