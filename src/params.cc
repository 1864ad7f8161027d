#include "src/params.h"

#include <strings.h>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/hash.h"
#include "common/list_spec.h"
#include "common/logging.h"
#include "common/record_layer.h"
#include "src/collective_table.h"
#include "transport/transport_table.h"

namespace coll {
namespace {

// Set, and not to the empty string (which means unset, as for every variable here).
bool isSet(const char* name) {
  const char* text = getenv(name);
  return text != nullptr && *text != '\0';
}

long long parseInteger(const char* name, long long minValue, long long maxValue, long long fallback) {
  if (!isSet(name)) return fallback;
  const char* text = getenv(name);
  char* end = nullptr;
  long long value = strtoll(text, &end, 0);
  if (end != nullptr && (*end == 'k' || *end == 'K'))
    value <<= 10, ++end;
  else if (end != nullptr && (*end == 'm' || *end == 'M'))
    value <<= 20, ++end;
  if (end == text || *end != '\0' || value < minValue || value > maxValue)
    throwError(collInvalidUsage, "environment variable %s=\"%s\" is not valid: expected an integer in [%lld, %lld]",
               name, text, minValue, maxValue);
  return value;
}

bool parseBool(const char* name, bool fallback) {
  if (!isSet(name)) return fallback;
  const char* text = getenv(name);
  if (!strcmp(text, "1") || !strcasecmp(text, "true") || !strcasecmp(text, "yes") || !strcasecmp(text, "on"))
    return true;
  if (!strcmp(text, "0") || !strcasecmp(text, "false") || !strcasecmp(text, "no") || !strcasecmp(text, "off"))
    return false;
  throwError(collInvalidUsage, "environment variable %s=\"%s\" is not valid: expected 0 or 1", name, text);
}

Algo parseAlgoName(const std::string& name, const std::string& whole) {
  if (strcasecmp(name.c_str(), "auto") == 0) return Algo::kAuto;
  if (const AlgorithmRow* row = findAlgorithm(name)) return row->id;
  throwError(collInvalidUsage, "COLL_ALGO=\"%s\": unknown algorithm \"%s\"; expected one of %s", whole.c_str(),
             name.c_str(), algorithmNames().c_str());
}

int collTypeByName(const std::string& name, const std::string& whole) {
  // The perf programs' spelling (all_reduce, reduce_scatter) as well as the library's.
  std::string plain;
  for (char c : name)
    if (c != '_') plain += c;
  for (int t = 0; t < static_cast<int>(CollType::kCount); ++t)
    if (strcasecmp(collectiveRow(static_cast<CollType>(t)).algoName, plain.c_str()) == 0) return t;
  throwError(collInvalidUsage, "COLL_ALGO=\"%s\": unknown collective \"%s\"; expected e.g. allreduce:ring",
             whole.c_str(), name.c_str());
}

uint64_t linkCostsDigest(const LinkCosts& costs) {
  Fnv1a digest;
  for (const LinkCost* link : {&costs.sharedMemory, &costs.socket, &costs.verbs, &costs.p2p, &costs.staging})
    for (double value : {link->latencyUs, link->bytesPerUs}) {
      uint64_t bits = 0;
      memcpy(&bits, &value, sizeof(bits));
      digest.add(bits);
    }
  return digest.value();
}

// "3:12": latency in us, rate in GB/s; throws naming the whole value and the item.
LinkCost parseLinkCost(const std::string& item, const std::string& value, const std::string& whole) {
  const size_t colon = value.find(':');
  char* end = nullptr;
  const double latency = colon == std::string::npos ? -1 : strtod(value.c_str(), &end);
  const bool latencyOk = colon != std::string::npos && end == value.c_str() + colon && latency >= 0 && latency <= 1e6;
  const char* rateText = latencyOk ? value.c_str() + colon + 1 : "";
  const double rate = latencyOk ? strtod(rateText, &end) : -1;
  if (!latencyOk || end == rateText || *end != '\0' || !(rate > 0 && rate <= 1e6))
    throwError(collInvalidUsage,
               "COLL_LINK_COSTS=\"%s\": \"%s\" is not valid: expected LINK=LATENCY_US:GB_PER_S, a latency in "
               "[0, 1e6] and a rate in (0, 1e6], e.g. verbs=3:12",
               whole.c_str(), item.c_str());
  return LinkCost{latency, rate * 1000.0};  // GB/s = 1000 bytes per us
}

}  // namespace

void parseLinkCosts(const std::string& text, LinkCosts* costs) {
  for (const std::string& item : splitList(text)) {
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    LinkCost* link = name == "shm"       ? &costs->sharedMemory
                     : name == "socket"  ? &costs->socket
                     : name == "verbs"   ? &costs->verbs
                     : name == "p2p"     ? &costs->p2p
                     : name == "staging" ? &costs->staging
                                         : nullptr;
    if (link == nullptr || eq == std::string::npos)
      throwError(collInvalidUsage,
                 "COLL_LINK_COSTS=\"%s\": unknown link in \"%s\"; expected shm, socket, verbs, p2p or staging",
                 text.c_str(), item.c_str());
    *link = parseLinkCost(item, item.substr(eq + 1), text);
  }
}

const char* protoChoiceName(ProtoChoice choice) {
  switch (choice) {
    case ProtoChoice::kLL:
      return "LL";
    case ProtoChoice::kSimple:
      return "Simple";
    default:
      return "auto";
  }
}

ProtoChoice parseProtoChoice(const std::string& text) {
  for (ProtoChoice choice : {ProtoChoice::kAuto, ProtoChoice::kLL, ProtoChoice::kSimple})
    if (strcasecmp(text.c_str(), protoChoiceName(choice)) == 0) return choice;
  throwError(collInvalidUsage, "COLL_PROTO=\"%s\" is not valid: expected LL, Simple or auto", text.c_str());
}

std::vector<SharedSetting> sharedSettings(const Params& p) {
  Fnv1a algo;
  for (Algo a : p.algoOverride) algo.add(static_cast<uint64_t>(a));
  std::vector<SharedSetting> settings = {
      {"COLL_ALGO", algo.value()},
      {"COLL_ONESHOT_BYTES", Fnv1a().add(p.oneshotBytes).value()},
      {"COLL_DIRECT_READ_BYTES", Fnv1a().add(p.directReadBytes).value()},
      {"COLL_SHM_SLOT_BYTES", Fnv1a().add(p.slotBytes).value()},
      {"COLL_SHM_FIFO_DEPTH", Fnv1a().add(static_cast<uint64_t>(p.shmFifoDepth)).value()},
      {"COLL_NET_FIFO_DEPTH", Fnv1a().add(static_cast<uint64_t>(p.netFifoDepth)).value()},
      {"COLL_TRANSPORTS", Fnv1a().add(p.transports).value()},
      {"COLL_SOCKET_NSOCKS", Fnv1a().add(static_cast<uint64_t>(p.socketsPerPeer)).value()},
      {"COLL_PROTO", Fnv1a().add(static_cast<uint64_t>(p.protocol)).value()},
      {"COLL_LINK_COSTS", linkCostsDigest(p.linkCosts)},
      // Both ends of a socket must agree, and a rank that sends plaintext must not join a job
      // whose others encrypt: every rank refuses the difference at init, naming both values.
      {"COLL_NET_ENCRYPT", p.netEncrypt ? 1u : 0u, true},
  };
  return settings;
}

void parseAlgoOverrides(const std::string& text, Algo* overrides, bool* whereRunnable) {
  // "ring" applies to every collective the ring serves; "allreduce:tree,broadcast:chain" to the
  // ones named, which win over an algorithm named alone wherever the list puts them.
  constexpr int kTypes = static_cast<int>(CollType::kCount);
  bool named[kTypes] = {};
  std::string notServed;
  const std::vector<std::string> items = splitList(text);
  if (items.empty())
    throwError(collInvalidUsage, "COLL_ALGO=\"%s\": no algorithm named; expected e.g. ring or allreduce:tree",
               text.c_str());
  if (text.front() == ',' || text.back() == ',' || text.find(",,") != std::string::npos)
    throwError(collInvalidUsage, "COLL_ALGO=\"%s\": an empty item; expected a comma list of ALGO or COLLECTIVE:ALGO",
               text.c_str());
  for (const std::string& item : items) {
    size_t colon = item.find(':');
    if (colon != std::string::npos) {
      const int type = collTypeByName(item.substr(0, colon), text);
      if (named[type])
        throwError(collInvalidUsage, "COLL_ALGO=\"%s\": %s is named twice", text.c_str(),
                   collTypeName(static_cast<CollType>(type)));
      named[type] = true;
      overrides[type] = parseAlgoName(item.substr(colon + 1), text);
      if (whereRunnable != nullptr) whereRunnable[type] = false;
      continue;
    }
    const Algo algo = parseAlgoName(item, text);
    for (int t = 0; t < kTypes; ++t) {
      if (named[t]) continue;
      const bool serving = algo == Algo::kAuto || serves(algorithmRow(algo), static_cast<CollType>(t));
      overrides[t] = serving ? algo : Algo::kAuto;
      if (whereRunnable != nullptr) whereRunnable[t] = serving;
      if (!serving) notServed += std::string(notServed.empty() ? "" : ", ") + collTypeName(static_cast<CollType>(t));
    }
  }
  if (!notServed.empty())
    COLL_INFO(kInit, "COLL_ALGO=\"%s\": the algorithm named alone does not serve %s, which choose as usual (so do "
              "calls it cannot run: COLL_DEBUG=TRACE names them)", text.c_str(), notServed.c_str());
}

unsigned parseTraceDumpOn(const std::string& text) {
  unsigned mask = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (word == "timeout")
      mask |= kTraceDumpOnTimeout;
    else if (word == "abort")
      mask |= kTraceDumpOnAbort;
    else if (word == "signal")
      mask |= kTraceDumpOnSignal;
    else if (word != "none")
      throwError(collInvalidUsage, "COLL_TRACE_DUMP_ON is '%s': expected a comma list of timeout, abort, signal, or none",
                 text.c_str());
    start = end + 1;
  }
  return mask;
}

const Params& processParams() {
  static const Params cached = [] {
    Params p;
    p.timeoutMs = static_cast<int>(parseInteger("COLL_TIMEOUT_MS", 1, 1LL << 30, p.timeoutMs));
    p.checkConsistency = parseBool("COLL_CHECK", false);
    if (const char* transports = getenv("COLL_TRANSPORTS")) p.transports = transports;
    transport::validateTransportSpec(p.transports);
    if (isSet("COLL_ALGO")) parseAlgoOverrides(getenv("COLL_ALGO"), p.algoOverride, p.algoOverrideWhereRunnable);
    p.shmFifoDepth = static_cast<int>(parseInteger("COLL_SHM_FIFO_DEPTH", 2, 64, p.shmFifoDepth));
    p.shmSingleCopyBytes =
        static_cast<size_t>(parseInteger("COLL_SHM_SINGLE_COPY_BYTES", 0, 1LL << 50, p.shmSingleCopyBytes));
    p.shmSingleCopyBytesSet = isSet("COLL_SHM_SINGLE_COPY_BYTES");
    p.shmSingleCopyMaxBytes =
        static_cast<size_t>(parseInteger("COLL_SHM_SINGLE_COPY_MAX_BYTES", 0, 1LL << 50, p.shmSingleCopyMaxBytes));
    p.shmSingleCopyMaxBytesSet = isSet("COLL_SHM_SINGLE_COPY_MAX_BYTES");
    p.netFifoDepth = static_cast<int>(parseInteger("COLL_NET_FIFO_DEPTH", 2, 64, p.netFifoDepth));
    p.slotBytes = static_cast<size_t>(parseInteger("COLL_SHM_SLOT_BYTES", 4096, 64LL << 20, p.slotBytes));
    p.slotBytes = (p.slotBytes + 63) / 64 * 64;
    p.slotBytesSet = isSet("COLL_SHM_SLOT_BYTES");
    p.oneshotBytes = static_cast<size_t>(parseInteger("COLL_ONESHOT_BYTES", 64, 64LL << 20, p.oneshotBytes));
    p.spinMicros = static_cast<int>(parseInteger("COLL_SPIN_US", -1, 10000000, p.spinMicros));
    p.membarrier = parseBool("COLL_MEMBARRIER", p.membarrier);
    p.shmNamedSegments = parseBool("COLL_SHM_NAMED", false);
    p.netEncrypt = encryptionRequested();
    p.directReadBytes = static_cast<size_t>(parseInteger("COLL_DIRECT_READ_BYTES", 0, 1LL << 50, p.directReadBytes));
    p.streamingBytes = static_cast<size_t>(parseInteger("COLL_STREAMING_BYTES", 0, 1LL << 50, p.streamingBytes));
    if (const char* host = getenv("COLL_HOSTID")) p.hostId = host;
    if (const char* ifname = getenv("COLL_SOCKET_IFNAME")) p.socketIfname = ifname;
    p.socketsPerPeer = static_cast<int>(parseInteger("COLL_SOCKET_NSOCKS", 1, 16, p.socketsPerPeer));
    p.socketBufferBytes =
        static_cast<size_t>(parseInteger("COLL_SOCKET_BUFFER_BYTES", 0, 1LL << 30, p.socketBufferBytes));
    if (const char* exchange = getenv("COLL_BOOTSTRAP_EXCHANGE"); exchange != nullptr && *exchange != '\0') {
      const std::string value = exchange;
      if (value != "ranks" && value != "store")
        throwError(collInvalidUsage, "COLL_BOOTSTRAP_EXCHANGE is '%s': expected 'ranks' or 'store'", exchange);
      p.bootstrapBetweenRanks = value == "ranks";
    }
    // The QP attribute fields are 5 and 3 bits wide (0 would mean an infinite timeout).
    p.ibTimeout = static_cast<int>(parseInteger("COLL_IB_TIMEOUT", 1, 31, p.ibTimeout));
    p.ibRetryCount = static_cast<int>(parseInteger("COLL_IB_RETRY_CNT", 0, 7, p.ibRetryCount));
    // Parsed (and refused) where verbs opens a device: a rank that never selects verbs ignores it.
    if (const char* hca = getenv("COLL_IB_HCA")) p.ibHca = hca;
    p.ibGidIndex = static_cast<int>(parseInteger("COLL_IB_GID_INDEX", -1, 255, p.ibGidIndex));
    p.ibQpsPerConnection = static_cast<int>(parseInteger("COLL_IB_QPS_PER_CONNECTION", 1, 16, p.ibQpsPerConnection));
    // Only the sender decides (the receiver cannot tell a zero-copy write from a slot's): ranks may differ.
    p.ibZcopyBytes = static_cast<size_t>(parseInteger("COLL_IB_ZCOPY_BYTES", 0, 1LL << 50, p.ibZcopyBytes));
    if (const char* proto = getenv("COLL_PROTO"); proto != nullptr && *proto != '\0')
      p.protocol = parseProtoChoice(proto);
    if (const char* costs = getenv("COLL_LINK_COSTS")) parseLinkCosts(costs, &p.linkCosts);
    p.traceBuffer = static_cast<size_t>(parseInteger("COLL_TRACE_BUFFER", 0, 1 << 20, static_cast<long long>(p.traceBuffer)));
    if (const char* dir = getenv("COLL_TRACE_DIR")) p.traceDir = dir;
    if (isSet("COLL_TRACE_DUMP_ON")) p.traceDumpOn = parseTraceDumpOn(getenv("COLL_TRACE_DUMP_ON"));
    p.traceProbeMs = static_cast<int>(parseInteger("COLL_TRACE_PROBE_MS", 1, 600000, p.traceProbeMs));
    p.agreeTimeoutMs = static_cast<int>(parseInteger("COLL_AGREE_TIMEOUT_MS", 1, 1LL << 30, p.agreeTimeoutMs));
    return p;
  }();
  return cached;
}

}  // namespace coll
