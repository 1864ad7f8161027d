#include "transport/net/net_settings.h"

#include <cstdlib>

#include "common/env_setting.h"
#include "common/hash.h"
#include "common/record_layer.h"

namespace coll {
namespace transport {

void readNetSettings(TransportSettings* s) {
  s->netFifoDepth = static_cast<int>(envInteger("COLL_NET_FIFO_DEPTH", 2, 64, s->netFifoDepth));
  s->netEncrypt = encryptionRequested();
  if (const char* ifname = getenv("COLL_SOCKET_IFNAME")) s->socketIfname = ifname;
  s->socketsPerPeer = static_cast<int>(envInteger("COLL_SOCKET_NSOCKS", 1, 16, s->socketsPerPeer));
  s->socketBufferBytes =
      static_cast<size_t>(envInteger("COLL_SOCKET_BUFFER_BYTES", 0, 1LL << 30, s->socketBufferBytes));
}

void shareNetSettings(const TransportSettings& s, std::vector<SharedSetting>* shared) {
  shared->push_back({"COLL_NET_FIFO_DEPTH", Fnv1a().add(static_cast<uint64_t>(s.netFifoDepth)).value()});
  shared->push_back({"COLL_SOCKET_NSOCKS", Fnv1a().add(static_cast<uint64_t>(s.socketsPerPeer)).value()});
  // Both ends of a socket must agree, and a rank that sends plaintext must not join a job
  // whose others encrypt: every rank refuses the difference at init, naming both values.
  shared->push_back({"COLL_NET_ENCRYPT", s.netEncrypt ? 1u : 0u, true});
}

}  // namespace transport
}  // namespace coll
