#include <gtest/gtest.h>

#include <cstring>

#include "bootstrap/tcp_store.h"
#include "bootstrap/unique_id.h"
#include "common/socket.h"
#include "test_helpers.h"

namespace coll {
namespace bootstrap {
namespace {

using testing::EnvGuard;
using testing::expectCollError;
using testing::in;
using testing::toBytes;
using testing::toString;

UniqueIdInfo sampleInfo(const std::string& host) {
  UniqueIdInfo info;
  info.host = host;
  info.port = 29500;
  for (size_t i = 0; i < info.secret.size(); ++i) info.secret[i] = static_cast<uint8_t>(255 - i);
  return info;
}

void expectInvalidId(const collUniqueId& id, const std::string& reason) {
  std::string message = expectCollError(collInvalidArgument, [&] { decodeUniqueId(id); });
  EXPECT_NE(message.find("collCommInitRank: the unique id is not valid ("), std::string::npos) << message;
  EXPECT_NE(message.find("pass the id from collGetUniqueId unchanged"), std::string::npos) << message;
  EXPECT_NE(message.find(reason), std::string::npos) << message;
}

TEST(UniqueId, RoundTripIpv4Ipv6AndNames) {
  for (const std::string& host :
       std::vector<std::string>{"10.1.2.3", "fd00::2", "fe80::1%eth0", "node-17.cluster.example.org",
                                std::string(kMaxUniqueIdHostBytes, 'h')}) {
    UniqueIdInfo info = sampleInfo(host);
    UniqueIdInfo back = decodeUniqueId(encodeUniqueId(info));
    EXPECT_EQ(back.host, info.host);
    EXPECT_EQ(back.port, info.port);
    EXPECT_EQ(back.secret, info.secret);
  }
}

TEST(UniqueId, EncodeRejectsWhatCannotBeDecoded) {
  expectCollError(collInvalidArgument, [] { encodeUniqueId(sampleInfo(std::string(kMaxUniqueIdHostBytes + 1, 'h'))); });
  expectCollError(collInvalidArgument, [] { encodeUniqueId(sampleInfo("")); });
  UniqueIdInfo noPort = sampleInfo("10.0.0.1");
  noPort.port = 0;
  expectCollError(collInvalidArgument, [&] { encodeUniqueId(noPort); });
}

TEST(UniqueId, CorruptedIdsAreRejected) {
  collUniqueId zero;
  memset(&zero, 0, sizeof(zero));
  expectInvalidId(zero, "bad magic 0x00000000");

  const collUniqueId good = encodeUniqueId(sampleInfo("10.1.2.3"));
  collUniqueId id = good;
  id.internal[0] ^= 0x20;
  expectInvalidId(id, "bad magic");
  // Any single flipped byte after the magic is caught by the checksum (or a field check).
  for (size_t i = 4; i < COLL_UNIQUE_ID_BYTES; ++i) {
    id = good;
    id.internal[i] = static_cast<char>(id.internal[i] ^ 0x01);
    expectCollError(collInvalidArgument, [&] { decodeUniqueId(id); });
  }
  id = good;
  id.internal[50] ^= 0x7f;  // a byte of the host
  expectInvalidId(id, "bad checksum");
}

TEST(UniqueId, RandomSecretsDiffer) {
  Secret a = randomSecret();
  Secret b = randomSecret();
  EXPECT_NE(a, b);
  EXPECT_NE(a, Secret{});
}

TEST(UniqueId, CreateStartsAStoreThatConnectStoreReaches) {
  EnvGuard env({"COLL_STORE_PORT", "COLL_SOCKET_IFNAME"});
  env.set("COLL_SOCKET_IFNAME", "lo");  // a loopback rendezvous works in any sandbox
  collUniqueId id = createUniqueId();
  UniqueIdInfo info = decodeUniqueId(id);
  EXPECT_EQ(info.host, "127.0.0.1");
  EXPECT_NE(info.port, 0);
  EXPECT_NE(info.secret, Secret{});

  auto a = connectStore(id, in(5000));
  auto b = connectStore(id, in(5000));
  a->set("hello", toBytes("world"));
  EXPECT_EQ(toString(b->get("hello", in(2000))), "world");

  // A second id is a second store with its own secret.
  UniqueIdInfo other = decodeUniqueId(createUniqueId());
  EXPECT_NE(other.port, info.port);
  EXPECT_NE(other.secret, info.secret);

  // An id carrying the right address but another secret is refused.
  UniqueIdInfo forged = info;
  forged.secret[0] ^= 1;
  std::string message = expectCollError(collInvalidUsage, [&] { connectStore(encodeUniqueId(forged), in(2000)); });
  EXPECT_NE(message.find("wrong secret"), std::string::npos) << message;
}

TEST(UniqueId, StorePortFromEnvironment) {
  EnvGuard env({"COLL_STORE_PORT", "COLL_SOCKET_IFNAME"});
  env.set("COLL_SOCKET_IFNAME", "lo");
  uint16_t port;
  {
    Fd probe = listenOn("127.0.0.1", 0);
    port = localAddressOf(probe.get()).port();
  }
  env.set("COLL_STORE_PORT", std::to_string(port));
  UniqueIdInfo info = decodeUniqueId(createUniqueId());
  EXPECT_EQ(info.port, port);
  env.set("COLL_STORE_PORT", "http");
  std::string message = expectCollError(collInvalidUsage, [] { createUniqueId(); });
  EXPECT_NE(message.find("COLL_STORE_PORT='http'"), std::string::npos) << message;
}

}  // namespace
}  // namespace bootstrap
}  // namespace coll
