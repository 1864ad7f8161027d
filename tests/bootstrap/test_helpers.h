// Helpers shared by the bootstrap tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "bootstrap/store_protocol.h"
#include "common/error.h"
#include "common/socket.h"
#include "tests/common/expect_coll_error.h"

namespace coll {
namespace bootstrap {
namespace testing {

// Saves the named environment variables, clears them, and restores them on destruction, so a
// test sees exactly the variables it sets.
class EnvGuard {
 public:
  explicit EnvGuard(const std::vector<std::string>& names) {
    for (const auto& name : names) {
      const char* value = getenv(name.c_str());
      saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
      unsetenv(name.c_str());
    }
  }
  ~EnvGuard() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  void set(const std::string& name, const std::string& value) {
    ASSERT_TRUE(saved_.count(name)) << name << " is not guarded";
    setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

inline Bytes toBytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
inline std::string toString(const Bytes& b) { return std::string(b.begin(), b.end()); }

inline Deadline in(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

// A loopback port nothing listens on right now (the kernel's pick, closed again).
inline uint16_t freePort() {
  Fd probe = listenOn("127.0.0.1", 0);
  return localAddressOf(probe.get()).port();
}

inline long long msSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

using colltest::expectCollError;

// The server nonce of a kHelloChallenge frame (length prefix included).
inline wire::Nonce challengeNonceOf(const Bytes& challenge) {
  wire::Nonce serverNonce{};
  if (challenge.size() >= wire::kHeaderBytes + wire::kOpAndSeqBytes + 32) {
    const uint8_t* body = challenge.data() + wire::kHeaderBytes + wire::kOpAndSeqBytes;
    std::copy(body, body + 32, serverNonce.begin());
  }
  return serverNonce;
}

// The client's side of the store's challenge-response (store_protocol.h), for tests that speak
// the protocol by hand. `challenge` is the whole kHelloChallenge frame (length prefix included).
// Returns the kHelloProof frame that proves `secret`, or an empty Bytes (and a test failure) when
// the frame is not a challenge or the store's own proof does not match `secret`.
inline Bytes proofFrameFor(const Bytes& challenge, const Secret& secret, const wire::Nonce& clientNonce) {
  if (challenge.size() != wire::kHeaderBytes + wire::kOpAndSeqBytes + 64 ||
      challenge[wire::kHeaderBytes] != static_cast<uint8_t>(wire::Op::kHelloChallenge)) {
    ADD_FAILURE() << "not a hello challenge frame (" << challenge.size() << " bytes)";
    return Bytes();
  }
  wire::Nonce serverNonce{};
  Digest256 serverProof{};
  const uint8_t* body = challenge.data() + wire::kHeaderBytes + wire::kOpAndSeqBytes;
  std::copy(body, body + 32, serverNonce.begin());
  std::copy(body + 32, body + 64, serverProof.begin());
  if (serverProof != wire::helloProof(secret, wire::ProofRole::kServer, clientNonce, serverNonce)) {
    ADD_FAILURE() << "the store's proof does not match the secret";
    return Bytes();
  }
  const Digest256 proof = wire::helloProof(secret, wire::ProofRole::kClient, clientNonce, serverNonce);
  return wire::FrameWriter(wire::Op::kHelloProof, 0).raw(proof.data(), proof.size()).finish();
}

inline wire::Nonce nonceOf(uint8_t v) {
  wire::Nonce n{};
  n.fill(v);
  return n;
}

}  // namespace testing
}  // namespace bootstrap
}  // namespace coll
