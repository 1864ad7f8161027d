#include "bootstrap/unique_id.h"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "bootstrap/tcp_store.h"
#include "common/error.h"
#include "common/logging.h"
#include "common/net_interfaces.h"
#include "common/random.h"
#include "common/socket.h"

namespace coll {
namespace bootstrap {

namespace {

constexpr uint32_t kIdMagic = 0x49554c43;  // "CLUI" in little-endian bytes
// How long collUniqueIdRelease waits for a server without clients to end.
constexpr auto kReleaseJoinWait = std::chrono::milliseconds(200);
constexpr uint16_t kIdVersion = 1;
constexpr size_t kOffMagic = 0, kOffVersion = 4, kOffPort = 6, kOffSecret = 8;
constexpr size_t kOffHostLen = kOffSecret + sizeof(Secret);  // 40
constexpr size_t kOffHost = kOffHostLen + 1;                 // 41
constexpr size_t kOffChecksum = COLL_UNIQUE_ID_BYTES - 4;    // 124
static_assert(kOffHost + kMaxUniqueIdHostBytes == kOffChecksum, "the host field fills the gap before the checksum");

void putLE(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t getLE(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// Detects an id damaged in transit (a truncated MPI_Bcast, a file written by something else);
// it is not a security measure, the secret is.
uint32_t fnv1a(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

[[noreturn]] void invalidId(const std::string& why) {
  throwError(collInvalidArgument,
             "collCommInitRank: the unique id is not valid (%s); pass the id from collGetUniqueId unchanged",
             why.c_str());
}

// Servers started by createUniqueId(). The caller hands the id to other processes and never
// gets an object to own, so the server must outlive the call. It runs until the communicator
// made from the id in this process is gone (releaseUniqueIdServer) and so are the other ranks'
// (each holds its store connection for life), and is then destroyed by the next createUniqueId,
// or at process exit. This is the one piece of process-wide state here; static destruction stops
// what still runs cleanly.
struct RunningServer {
  std::unique_ptr<TcpStoreServer> server;
  Secret secret;  // with the port, what names the server's id
};

struct ServerRegistry {
  std::mutex mutex;
  std::vector<RunningServer> servers;
};

ServerRegistry& registry();

// fork(): the child gets a copy of the registry but none of the servers' threads. Were it to
// destroy those copies (at exit), it would join threads that are not there and signal the
// parent's servers through the inherited eventfds: the child forgets them instead. The registry
// lock is held across the fork, so the child never inherits it taken.
void lockRegistryForFork() { registry().mutex.lock(); }
void unlockRegistryAfterFork() { registry().mutex.unlock(); }
void forgetParentServersInChild() {
  ServerRegistry& r = registry();
  for (RunningServer& s : r.servers) static_cast<void>(s.server.release());  // the parent's; not ours to stop
  r.servers.clear();
  r.mutex.unlock();
}

ServerRegistry& registry() {
  static ServerRegistry instance;
  static const bool forkHandlers =
      pthread_atfork(lockRegistryForFork, unlockRegistryAfterFork, forgetParentServersInChild) == 0;
  static_cast<void>(forkHandlers);
  return instance;
}

uint16_t storePortFromEnv() {
  const char* text = getenv("COLL_STORE_PORT");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 0 || value > 65535) {
    throwError(collInvalidUsage, "collGetUniqueId: COLL_STORE_PORT='%s' is not a port number (0-65535)", text);
  }
  return static_cast<uint16_t>(value);
}

}  // namespace

collUniqueId encodeUniqueId(const UniqueIdInfo& info) {
  if (info.host.empty() || info.host.size() > kMaxUniqueIdHostBytes || info.host.find('\0') != std::string::npos) {
    throwError(collInvalidArgument, "encodeUniqueId: host '%s' must be 1 to %zu bytes", info.host.c_str(),
               kMaxUniqueIdHostBytes);
  }
  if (info.port == 0) throwError(collInvalidArgument, "encodeUniqueId: port 0 is not a listening port");
  collUniqueId id;
  memset(&id, 0, sizeof(id));
  uint8_t* p = reinterpret_cast<uint8_t*>(id.internal);
  putLE(p + kOffMagic, kIdMagic, 4);
  putLE(p + kOffVersion, kIdVersion, 2);
  putLE(p + kOffPort, info.port, 2);
  memcpy(p + kOffSecret, info.secret.data(), info.secret.size());
  p[kOffHostLen] = static_cast<uint8_t>(info.host.size());
  memcpy(p + kOffHost, info.host.data(), info.host.size());
  putLE(p + kOffChecksum, fnv1a(p, kOffChecksum), 4);
  return id;
}

UniqueIdInfo decodeUniqueId(const collUniqueId& id) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(id.internal);
  uint32_t magic = static_cast<uint32_t>(getLE(p + kOffMagic, 4));
  if (magic != kIdMagic) invalidId(formatString("bad magic 0x%08x", magic));
  uint32_t version = static_cast<uint32_t>(getLE(p + kOffVersion, 2));
  if (version != kIdVersion) invalidId(formatString("version %u, this library reads version %u", version, kIdVersion));
  if (getLE(p + kOffChecksum, 4) != fnv1a(p, kOffChecksum)) invalidId("bad checksum");
  size_t hostLen = p[kOffHostLen];
  if (hostLen == 0 || hostLen > kMaxUniqueIdHostBytes) invalidId(formatString("host length %zu", hostLen));
  for (size_t i = kOffHost + hostLen; i < kOffChecksum; ++i) {
    if (p[i] != 0) invalidId("nonzero padding");
  }
  UniqueIdInfo info;
  info.host.assign(reinterpret_cast<const char*>(p + kOffHost), hostLen);
  if (info.host.find('\0') != std::string::npos) invalidId("NUL inside the host");
  info.port = static_cast<uint16_t>(getLE(p + kOffPort, 2));
  if (info.port == 0) invalidId("port 0");
  memcpy(info.secret.data(), p + kOffSecret, info.secret.size());
  return info;
}

Secret randomSecret() {
  Secret secret{};
  fillRandom(secret.data(), secret.size(), "the rendezvous secret");
  return secret;
}

std::string defaultServerAddress() {
  const char* spec = getenv("COLL_SOCKET_IFNAME");
  std::string address = chooseInterfaceAddress(listInterfaces(), spec != nullptr ? spec : "");
  COLL_INFO(kBootstrap, "server address %s (COLL_SOCKET_IFNAME=%s)", address.c_str(), spec != nullptr ? spec : "");
  return address;
}

namespace {

// Keeps a server that a unique id names until it is released and idle (ServerRegistry).
collUniqueId registerServer(std::unique_ptr<TcpStoreServer> server, UniqueIdInfo info) {
  info.port = server->port();
  collUniqueId id = encodeUniqueId(info);
  ServerRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  // Servers whose communicators are gone: their threads have ended; joining them frees the rest.
  r.servers.erase(std::remove_if(r.servers.begin(), r.servers.end(),
                                 [](const RunningServer& s) { return s.server->finished(); }),
                  r.servers.end());
  r.servers.push_back({std::move(server), info.secret});
  COLL_INFO(kBootstrap, "unique id: rendezvous store at %s", formatHostPort(info.host, info.port).c_str());
  return id;
}

}  // namespace

collUniqueId createUniqueId() {
  UniqueIdInfo info;
  info.host = defaultServerAddress();
  info.secret = randomSecret();
  return registerServer(std::make_unique<TcpStoreServer>(info.host, storePortFromEnv(), info.secret), info);
}

collUniqueId serveUniqueIdOn(Fd listener, const std::string& host, const Secret& secret) {
  UniqueIdInfo info;
  info.host = host;
  info.secret = secret;
  return registerServer(std::make_unique<TcpStoreServer>(std::move(listener), secret), info);
}

void releaseUniqueIdServer(const collUniqueId& id) {
  UniqueIdInfo info = decodeUniqueId(id);
  ServerRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (RunningServer& s : r.servers)
    if (s.server->port() == info.port && s.secret == info.secret) s.server->endWhenIdle();
}

void reapEndedUniqueIdServers() {
  ServerRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.servers.erase(std::remove_if(r.servers.begin(), r.servers.end(),
                                 [](const RunningServer& s) { return s.server->finished(); }),
                  r.servers.end());
}

bool joinReleasedUniqueIdServer(const collUniqueId& id, Deadline deadline) {
  UniqueIdInfo info = decodeUniqueId(id);
  ServerRegistry& r = registry();
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      auto it = std::find_if(r.servers.begin(), r.servers.end(), [&](const RunningServer& s) {
        return s.server->port() == info.port && s.secret == info.secret;
      });
      if (it == r.servers.end()) return true;
      if (it->server->finished()) {
        r.servers.erase(it);  // joins the thread, which has returned from its loop
        return true;
      }
    }
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void releaseUniqueId(const collUniqueId& id) {
  releaseUniqueIdServer(id);
  // A server nobody is connected to ends at once; one with clients ends when they leave, and is
  // joined by the next createUniqueId.
  joinReleasedUniqueIdServer(id, Clock::now() + kReleaseJoinWait);
}

std::shared_ptr<Store> connectStore(const collUniqueId& id, Deadline deadline) {
  UniqueIdInfo info = decodeUniqueId(id);
  return std::make_shared<TcpStoreClient>(info.host, info.port, info.secret, deadline);
}

}  // namespace bootstrap
}  // namespace coll
