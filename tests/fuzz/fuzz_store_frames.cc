// Fuzz target: the rendezvous store's request handling (StoreService), fed the bytes a stranger
// or an authenticated but hostile client could send. The first input byte picks which: odd runs
// the real challenge-response first (with a secret the harness knows), so the fuzzer reaches the
// requests behind it. Frames are cut exactly as the server cuts them (checkFrame with the limits
// for the connection's state); a ProtocolError closes the connection, as on the server.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bootstrap/store_protocol.h"
#include "bootstrap/store_service.h"
#include "common/error.h"

using namespace coll::bootstrap;

namespace {

constexpr StoreService::ConnId kConn = 1;

bool authenticate(StoreService& service, const Secret& secret) {
  std::vector<StoreService::Outgoing> out;
  wire::Nonce clientNonce{};
  clientNonce.fill(7);
  const Bytes hello = wire::encodeHello(clientNonce);
  service.handleFrame(kConn, "fuzz", hello.data() + wire::kHeaderBytes, hello.size() - wire::kHeaderBytes, &out);
  if (out.size() != 1) return false;
  wire::Nonce serverNonce{};
  const uint8_t* body = out[0].frame.data() + wire::kHeaderBytes + wire::kOpAndSeqBytes;
  std::copy(body, body + serverNonce.size(), serverNonce.begin());
  const coll::Digest256 proof = wire::helloProof(secret, wire::ProofRole::kClient, clientNonce, serverNonce);
  const Bytes frame = wire::FrameWriter(wire::Op::kHelloProof, 0).raw(proof.data(), proof.size()).finish();
  out.clear();
  return service.handleFrame(kConn, "fuzz", frame.data() + wire::kHeaderBytes, frame.size() - wire::kHeaderBytes,
                             &out) &&
         service.authenticated(kConn);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Secret secret{};
  secret.fill(0x33);
  // A small table, so that the fuzzer can also reach "the store is full".
  StoreService service(secret, "fuzz", 1 << 20);
  if ((data[0] & 1) != 0 && !authenticate(service, secret)) __builtin_trap();  // the handshake itself broke
  std::vector<StoreService::Outgoing> out;
  size_t offset = 1;
  try {
    while (offset < size) {
      const size_t maxBody = service.authenticated(kConn) ? wire::kMaxBodyBytes : wire::kMaxUnauthenticatedBodyBytes;
      size_t frameBytes = 0;
      if (wire::checkFrame(data + offset, size - offset, maxBody, &frameBytes) != wire::FrameCheck::kComplete) break;
      out.clear();
      const bool keep =
          service.handleFrame(kConn, "fuzz", data + offset + wire::kHeaderBytes, frameBytes - wire::kHeaderBytes, &out);
      offset += frameBytes;
      if (!keep) break;
    }
  } catch (const ProtocolError&) {
    // The server closes the connection; nothing else happens.
  }
  out.clear();
  service.expire(coll::Clock::now() + std::chrono::hours(1), &out);
  service.disconnect(kConn, &out);
  return 0;
}
