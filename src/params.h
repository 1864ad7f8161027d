// Environment parameters, read once per process (the parameter cache the design allows) and then
// copied into each communicator, which is what the rest of the library reads. Every variable is
// documented in docs/env.md with its default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <vector>

#include "src/algorithms/algorithm_table.h"
#include "src/algorithms/plan_context.h"
#include "src/coll_call.h"

namespace coll {

// COLL_PROTO: the device protocol, or kAuto to let the planner choose by size (src/plan/protocol.h).
enum class ProtoChoice : uint8_t { kAuto, kLL, kSimple };
const char* protoChoiceName(ProtoChoice choice);

// COLL_TRACE_DUMP_ON's words: when a communicator dumps its flight recorder to COLL_TRACE_DIR.
constexpr unsigned kTraceDumpOnTimeout = 1;  // a call timed out here, or a peer's did and asked
constexpr unsigned kTraceDumpOnAbort = 2;    // collCommAbort
constexpr unsigned kTraceDumpOnSignal = 4;   // SIGUSR1 (installs the handler)

struct Params {
  int timeoutMs = 300000;                                      // COLL_TIMEOUT_MS
  bool checkConsistency = false;                               // COLL_CHECK
  std::string transports;                                      // COLL_TRANSPORTS (empty: all)
  Algo algoOverride[static_cast<int>(CollType::kCount)] = {};  // COLL_ALGO
  // COLL_ALGO named the algorithm alone (no collective): it applies where it can run, and the
  // planner chooses as usual for calls it cannot run.
  bool algoOverrideWhereRunnable[static_cast<int>(CollType::kCount)] = {};
  int shmFifoDepth = 8;                                        // COLL_SHM_FIFO_DEPTH
  size_t shmSingleCopyBytes = 32 << 10;                        // COLL_SHM_SINGLE_COPY_BYTES (0: never)
  // COLL_SHM_SINGLE_COPY_BYTES given: single copies even where ranks share cores.
  bool shmSingleCopyBytesSet = false;
  size_t shmSingleCopyMaxBytes = 64 << 10;  // COLL_SHM_SINGLE_COPY_MAX_BYTES
  // COLL_SHM_SINGLE_COPY_MAX_BYTES given: the window is the user's, and larger sends are not
  // measured against single copies (HostEngineArgs::pointToPointSingleCopyMax).
  bool shmSingleCopyMaxBytesSet = false;
  int netFifoDepth = 8;  // COLL_NET_FIFO_DEPTH
  // COLL_SHM_SLOT_BYTES: every host FIFO's slot (shared memory, sockets, self), since the executor
  // cuts a step into slices of one size on both ends of every connection.
  size_t slotBytes = 128 << 10;
  bool slotBytesSet = false;           // COLL_SHM_SLOT_BYTES given: no default chosen by the transports in use
  size_t oneshotBytes = 64 << 10;      // COLL_ONESHOT_BYTES (per rank, per buffer)
  int spinMicros = -1;                 // COLL_SPIN_US (-1: chosen from ranks per core)
  bool membarrier = true;              // COLL_MEMBARRIER: peers ring doorbells without a fence
  size_t directReadBytes = 1 << 20;    // COLL_DIRECT_READ_BYTES (0: never)
  bool shmNamedSegments = false;       // COLL_SHM_NAMED
  bool netEncrypt = false;             // COLL_NET_ENCRYPT: sockets and the store carry sealed records
  size_t streamingBytes = 0;           // COLL_STREAMING_BYTES (0: never)
  std::string hostId;                  // COLL_HOSTID (overrides host detection; tests simulate hosts)
  std::string socketIfname;            // COLL_SOCKET_IFNAME (empty: the interface that reaches the rendezvous)
  int socketsPerPeer = 2;              // COLL_SOCKET_NSOCKS
  size_t socketBufferBytes = 2 << 20;  // COLL_SOCKET_BUFFER_BYTES (0: the kernel's autotuning)
  // COLL_BOOTSTRAP_EXCHANGE: false (store) sends init's all-gathers through the rendezvous store
  // instead of between the ranks (bootstrap/rank_exchange.h).
  bool bootstrapBetweenRanks = true;
  int ibTimeout = 18;               // COLL_IB_TIMEOUT (verbs)
  int ibRetryCount = 7;             // COLL_IB_RETRY_CNT (verbs)
  std::string ibHca;                // COLL_IB_HCA (verbs; empty: every device and port)
  int ibGidIndex = -1;              // COLL_IB_GID_INDEX (verbs; -1: the port's first usable GID)
  int ibQpsPerConnection = 1;       // COLL_IB_QPS_PER_CONNECTION (verbs)
  size_t ibZcopyBytes = 256 << 10;  // COLL_IB_ZCOPY_BYTES (verbs; 0: never send from the caller's buffer)

  // The flight recorder and hang reports (src/trace/).
  size_t traceBuffer = 2000;  // COLL_TRACE_BUFFER: calls each communicator keeps (0: none)
  std::string traceDir;       // COLL_TRACE_DIR: where dumps go (empty: no dump files)
  unsigned traceDumpOn = kTraceDumpOnTimeout | kTraceDumpOnAbort;  // COLL_TRACE_DUMP_ON
  int traceProbeMs = 1000;     // COLL_TRACE_PROBE_MS: how long a timed-out rank waits for its peers' answers
  int agreeTimeoutMs = 10000;  // COLL_AGREE_TIMEOUT_MS: how long a shrink waits for a silent rank

  ProtoChoice protocol = ProtoChoice::kAuto;  // COLL_PROTO (device buffers)
  LinkCosts linkCosts;                        // COLL_LINK_COSTS (the planner's cost model)
};

// Parses the environment. Bad values throw CollError(collInvalidUsage) naming the variable.
const Params& processParams();

// A setting every rank must share, because it decides plans or the shape of the transports:
// ranks that differ would wait on each other forever, so init compares them.
struct SharedSetting {
  const char* name;  // the environment variable
  uint64_t digest;   // of its value
  bool plain = false;  // the digest is the value itself, which a mismatch then shows
};
constexpr int kMaxSharedSettings = 16;
std::vector<SharedSetting> sharedSettings(const Params& params);

// Parses a COLL_ALGO value into per-collective overrides (exposed for tests).
// "ring" sets every collective the row serves, marked in *whereRunnable (when given); "allreduce:tree"
// sets one, unmarked. An empty item, an unknown name, or a collective named twice is refused.
void parseAlgoOverrides(const std::string& text, Algo* overrides, bool* whereRunnable = nullptr);
// Parses a COLL_LINK_COSTS value over `costs` (exposed for tests): "verbs=3:12,socket=8:2" sets each
// named link's latency (us) and rate (GB/s); links not named keep their values.
void parseLinkCosts(const std::string& text, LinkCosts* costs);
// Parses a COLL_TRACE_DUMP_ON value: a comma list of timeout, abort, signal; "none" (exposed for tests).
unsigned parseTraceDumpOn(const std::string& text);
// Parses a COLL_PROTO value: auto, LL or Simple, any case (exposed for tests).
ProtoChoice parseProtoChoice(const std::string& text);

}  // namespace coll
