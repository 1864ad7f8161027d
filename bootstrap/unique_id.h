// The unique id (collGetUniqueId): where the rendezvous store listens and the secret that every
// rank must present to it, packed into the 128 opaque bytes of collUniqueId.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/store.h"
#include "collective.h"
#include "common/fd.h"

namespace coll {
namespace bootstrap {

struct UniqueIdInfo {
  std::string host;  // numeric address or host name, at most kMaxUniqueIdHostBytes
  uint16_t port = 0;
  Secret secret{};
};

constexpr size_t kMaxUniqueIdHostBytes = 83;

// Layout (little-endian): u32 magic, u16 version, u16 port, 32-byte secret, u8 host length,
// host bytes, zero padding, and a u32 FNV-1a checksum of everything before it in the last 4
// bytes. Throws collInvalidArgument when the host does not fit or the port is 0.
collUniqueId encodeUniqueId(const UniqueIdInfo& info);
// Throws collInvalidArgument ("collCommInitRank: the unique id is not valid (...); pass the id
// from collGetUniqueId unchanged") for anything that encodeUniqueId could not have produced.
UniqueIdInfo decodeUniqueId(const collUniqueId& id);

// 32 bytes from getrandom(): unpredictable, so another job cannot guess its way in.
Secret randomSecret();

// The address a rendezvous server binds and advertises: chooseInterfaceAddress(listInterfaces(),
// $COLL_SOCKET_IFNAME) (common/net_interfaces.h).
std::string defaultServerAddress();

// Starts a TcpStoreServer in this process on defaultServerAddress() (COLL_SOCKET_IFNAME), on
// port $COLL_STORE_PORT if set, else an ephemeral one, with a fresh secret; it serves until the
// communicators made from it are gone (releaseUniqueIdServer), or the process exits. Returns the
// id naming it.
collUniqueId createUniqueId();

// The same for a socket that already listens on `host` (a communicator's meeting point, bound at
// its init so that its peers know the address: src/ft/meeting_point.h), with the job's secret.
collUniqueId serveUniqueIdOn(Fd listener, const std::string& host, const Secret& secret);

// A TcpStoreClient connected to the store the id names (retrying until the deadline).
std::shared_ptr<Store> connectStore(const collUniqueId& id, Deadline deadline);

// The communicator made from `id` in this process is gone: if this process runs the id's server,
// the server ends once no other rank is connected to it (at once if none is). Elsewhere a no-op.
void releaseUniqueIdServer(const collUniqueId& id);

// Joins the servers that have ended (released and idle) and frees what is left of them (an
// eventfd each); the next createUniqueId does it too.
void reapEndedUniqueIdServers();

// collUniqueIdRelease: the id makes no more communicators. As releaseUniqueIdServer, and a server
// with no client left is joined at once (briefly waited for), so that its thread and descriptors
// are gone when this returns. Throws collInvalidArgument for a malformed id.
void releaseUniqueId(const collUniqueId& id);

// For a process about to fork again (the test harness, between tests): after
// releaseUniqueIdServer, waits until the id's server has ended and joins its thread, so that the
// next fork finds no thread of it (one still ending may hold the allocator's lock, and a child
// forked then can hang in malloc). True once it has ended (or was never this process's); false
// if it still had clients at the deadline.
bool joinReleasedUniqueIdServer(const collUniqueId& id, Deadline deadline);

}  // namespace bootstrap
}  // namespace coll
