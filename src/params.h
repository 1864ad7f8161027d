// Environment parameters, read once per process (the parameter cache the design allows) and then
// copied into each communicator, which is what the rest of the library reads. Every variable is
// documented in docs/env.md with its default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "src/coll_call.h"

namespace coll {

enum class Algo : uint8_t {
  kAuto,
  kOneShot,
  kRing,
  kTree,
  kChain,
  kDirect,
  kPairwise,
  kDirectRead,
  kHier,
  kDoubleTree
};
const char* algoName(Algo algo);

// COLL_PROTO: the device protocol, or kAuto to let the planner choose by size (src/plan/protocol.h).
enum class ProtoChoice : uint8_t { kAuto, kLL, kSimple };
const char* protoChoiceName(ProtoChoice choice);

struct Params {
  int timeoutMs = 300000;                                      // COLL_TIMEOUT_MS
  bool checkConsistency = false;                               // COLL_CHECK
  std::string transports;                                      // COLL_TRANSPORTS (empty: all)
  Algo algoOverride[static_cast<int>(CollType::kCount)] = {};  // COLL_ALGO
  int shmFifoDepth = 8;                                        // COLL_SHM_FIFO_DEPTH
  size_t shmSlotBytes = 128 << 10;                             // COLL_SHM_SLOT_BYTES
  size_t oneshotBytes = 64 << 10;                              // COLL_ONESHOT_BYTES (per rank, per buffer)
  int spinMicros = -1;                                         // COLL_SPIN_US (-1: chosen from ranks per core)
  size_t directReadBytes = 1 << 20;                            // COLL_DIRECT_READ_BYTES (0: never)
  bool shmNamedSegments = false;                               // COLL_SHM_NAMED
  size_t streamingBytes = 0;                                   // COLL_STREAMING_BYTES (0: never)
  std::string hostId;        // COLL_HOSTID (overrides host detection; tests simulate hosts)
  std::string socketIfname;  // COLL_SOCKET_IFNAME (empty: the interface that reaches the rendezvous)
  int socketsPerPeer = 2;    // COLL_SOCKET_NSOCKS

  ProtoChoice protocol = ProtoChoice::kAuto;  // COLL_PROTO (device buffers)
};

// Parses the environment. Bad values throw CollError(collInvalidUsage) naming the variable.
const Params& processParams();

// A digest of the settings every rank must share because they decide plans.
uint64_t planSettingsDigest(const Params& params);

// Parses a COLL_ALGO value into per-collective overrides (exposed for tests).
void parseAlgoOverrides(const std::string& text, Algo* overrides);
// Parses a COLL_PROTO value: auto, LL or Simple, any case (exposed for tests).
ProtoChoice parseProtoChoice(const std::string& text);

}  // namespace coll
