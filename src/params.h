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
#include "transport/transport_settings.h"

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
  size_t oneshotBytes = 64 << 10;      // COLL_ONESHOT_BYTES (per rank, per buffer)
  int spinMicros = -1;                 // COLL_SPIN_US (-1: chosen from ranks per core)
  bool membarrier = true;              // COLL_MEMBARRIER: peers ring doorbells without a fence
  size_t directReadBytes = 1 << 20;    // COLL_DIRECT_READ_BYTES (0: never)
  size_t streamingBytes = 0;           // COLL_STREAMING_BYTES (0: never)
  std::string hostId;                  // COLL_HOSTID (overrides host detection; tests simulate hosts)
  // COLL_BOOTSTRAP_EXCHANGE: false (store) sends init's all-gathers through the rendezvous store
  // instead of between the ranks (bootstrap/rank_exchange.h).
  bool bootstrapBetweenRanks = true;

  // The flight recorder and hang reports (src/trace/).
  size_t traceBuffer = 2000;  // COLL_TRACE_BUFFER: calls each communicator keeps (0: none)
  std::string traceDir;       // COLL_TRACE_DIR: where dumps go (empty: no dump files)
  unsigned traceDumpOn = kTraceDumpOnTimeout | kTraceDumpOnAbort;  // COLL_TRACE_DUMP_ON
  int traceProbeMs = 1000;     // COLL_TRACE_PROBE_MS: how long a timed-out rank waits for its peers' answers
  int agreeTimeoutMs = 10000;  // COLL_AGREE_TIMEOUT_MS: how long a shrink waits for a silent rank

  ProtoChoice protocol = ProtoChoice::kAuto;  // COLL_PROTO (device buffers)
  LinkCosts linkCosts;                        // COLL_LINK_COSTS (the planner's cost model)
  // Each transport's own variables, read by its entry in the transport table: the core copies
  // them into each communicator and compares the shared ones, and names none.
  transport::TransportSettings transportSettings;
};

// The environment, parsed at the first call in a process, and again at the first call in a forked
// child. Bad values throw CollError(collInvalidUsage) naming the variable.
const Params& processParams();

// A setting every rank must share, because it decides plans or the shape of the transports:
// ranks that differ would wait on each other forever, so init compares them.
using SharedSetting = transport::SharedSetting;
constexpr int kMaxSharedSettings = 16;
std::vector<SharedSetting> sharedSettings(const Params& params);

// Parses a COLL_ALGO value into per-collective overrides (exposed for tests).
// "ring" sets every collective the row serves, marked in *whereRunnable (when given); "allreduce:tree"
// sets one, unmarked. An empty item, an unknown name, or a collective named twice is refused.
void parseAlgoOverrides(const std::string& text, Algo* overrides, bool* whereRunnable = nullptr);
// Parses a COLL_LINK_COSTS value over `costs` (exposed for tests): "NAME=3:12,..." sets each named
// link's latency (us) and rate (GB/s), the names being the transport table's (LinkCosts); links
// not named keep their values.
void parseLinkCosts(const std::string& text, LinkCosts* costs);
// Parses a COLL_TRACE_DUMP_ON value: a comma list of timeout, abort, signal; "none" (exposed for tests).
unsigned parseTraceDumpOn(const std::string& text);
// Parses a COLL_PROTO value: auto, LL or Simple, any case (exposed for tests).
ProtoChoice parseProtoChoice(const std::string& text);

}  // namespace coll
