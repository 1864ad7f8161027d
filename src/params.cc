#include "src/params.h"

#include <pthread.h>
#include <strings.h>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "common/env_setting.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/list_spec.h"
#include "common/logging.h"
#include "src/collective_table.h"
#include "transport/transport_settings.h"
#include "transport/transport_table.h"

namespace coll {
namespace {

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
  for (const LinkCosts::Named& link : costs.links)
    for (double value : {link.cost.latencyUs, link.cost.bytesPerUs}) {
      uint64_t bits = 0;
      memcpy(&bits, &value, sizeof(bits));
      digest.add(bits);
    }
  return digest.value();
}

// "a, b or c": the links COLL_LINK_COSTS knows, for its messages.
std::string linkNames(const LinkCosts& costs) {
  std::string names;
  for (size_t i = 0; i < costs.links.size(); ++i)
    names += (i == 0 ? "" : i + 1 == costs.links.size() ? " or " : ", ") + costs.links[i].name;
  return names;
}

// An example for COLL_LINK_COSTS's message: the last host link in the table, at its own price, so
// that the example is a sensible value.
std::string linkCostExample() {
  const transport::TransportEntry* example = nullptr;
  for (const transport::TransportEntry* t : transport::pricedEntries())
    if (t->memory == transport::MemoryKind::kHost) example = t;
  return formatString("%s=%g:%g", example->price.name, example->price.latencyUs, example->price.bytesPerUs / 1000.0);
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
               "[0, 1e6] and a rate in (0, 1e6], e.g. %s",
               whole.c_str(), item.c_str(), linkCostExample().c_str());
  return LinkCost{latency, rate * 1000.0};  // GB/s = 1000 bytes per us
}

}  // namespace

void parseLinkCosts(const std::string& text, LinkCosts* costs) {
  for (const std::string& item : splitList(text)) {
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    LinkCost* link = costs->find(name);
    if (link == nullptr || eq == std::string::npos)
      throwError(collInvalidUsage, "COLL_LINK_COSTS=\"%s\": unknown link in \"%s\"; expected %s", text.c_str(),
                 item.c_str(), linkNames(*costs).c_str());
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
      {"COLL_TRANSPORTS", Fnv1a().add(p.transports).value()},
      {"COLL_PROTO", Fnv1a().add(static_cast<uint64_t>(p.protocol)).value()},
      {"COLL_LINK_COSTS", linkCostsDigest(p.linkCosts)},
  };
  // Each transport's (its FIFOs' shape, its connections' terms), from its entry in the table.
  for (const SharedSetting& setting : transport::sharedTransportSettings(p.transportSettings))
    settings.push_back(setting);
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

namespace {

Params paramsFromEnvironment() {
  Params p;
  p.timeoutMs = static_cast<int>(envInteger("COLL_TIMEOUT_MS", 1, 1LL << 30, p.timeoutMs));
  p.checkConsistency = envBool("COLL_CHECK", false);
  if (const char* transports = getenv("COLL_TRANSPORTS")) p.transports = transports;
  transport::validateTransportSpec(p.transports);
  if (envIsSet("COLL_ALGO")) parseAlgoOverrides(getenv("COLL_ALGO"), p.algoOverride, p.algoOverrideWhereRunnable);
  p.transportSettings = transport::transportSettingsFromEnvironment();
  p.oneshotBytes = static_cast<size_t>(envInteger("COLL_ONESHOT_BYTES", 64, 64LL << 20, p.oneshotBytes));
  p.spinMicros = static_cast<int>(envInteger("COLL_SPIN_US", -1, 10000000, p.spinMicros));
  p.membarrier = envBool("COLL_MEMBARRIER", p.membarrier);
  p.directReadBytes = static_cast<size_t>(envInteger("COLL_DIRECT_READ_BYTES", 0, 1LL << 50, p.directReadBytes));
  p.streamingBytes = static_cast<size_t>(envInteger("COLL_STREAMING_BYTES", 0, 1LL << 50, p.streamingBytes));
  if (const char* host = getenv("COLL_HOSTID")) p.hostId = host;
  if (const char* exchange = getenv("COLL_BOOTSTRAP_EXCHANGE"); exchange != nullptr && *exchange != '\0') {
    const std::string value = exchange;
    if (value != "ranks" && value != "store")
      throwError(collInvalidUsage, "COLL_BOOTSTRAP_EXCHANGE is '%s': expected 'ranks' or 'store'", exchange);
    p.bootstrapBetweenRanks = value == "ranks";
  }
  if (const char* proto = getenv("COLL_PROTO"); proto != nullptr && *proto != '\0')
    p.protocol = parseProtoChoice(proto);
  if (const char* costs = getenv("COLL_LINK_COSTS")) parseLinkCosts(costs, &p.linkCosts);
  p.traceBuffer =
      static_cast<size_t>(envInteger("COLL_TRACE_BUFFER", 0, 1 << 20, static_cast<long long>(p.traceBuffer)));
  if (const char* dir = getenv("COLL_TRACE_DIR")) p.traceDir = dir;
  if (envIsSet("COLL_TRACE_DUMP_ON")) p.traceDumpOn = parseTraceDumpOn(getenv("COLL_TRACE_DUMP_ON"));
  p.traceProbeMs = static_cast<int>(envInteger("COLL_TRACE_PROBE_MS", 1, 600000, p.traceProbeMs));
  p.agreeTimeoutMs = static_cast<int>(envInteger("COLL_AGREE_TIMEOUT_MS", 1, 1LL << 30, p.agreeTimeoutMs));
  return p;
}

// What the environment said, once per process, and again in a forked child, which may have set
// variables of its own before its first communicator. Every reading stays where it was: a
// communicator the child inherited may still refer to its parent's. Never destroyed, so that no
// thread finds it gone at exit.
struct ParamsCache {
  ParamsCache() {
    // The mutex is held across fork, so that the child never inherits it held by a thread it lacks.
    pthread_atfork([] { cache().mutex.lock(); }, [] { cache().mutex.unlock(); },
                   [] {
                     cache().current.store(nullptr, std::memory_order_relaxed);
                     cache().mutex.unlock();
                   });
  }
  static ParamsCache& cache() {
    static ParamsCache* const instance = new ParamsCache;
    return *instance;
  }

  std::mutex mutex;
  std::deque<Params> readings;  // guarded by mutex
  std::atomic<const Params*> current{nullptr};
};

}  // namespace

const Params& processParams() {
  ParamsCache& cache = ParamsCache::cache();
  if (const Params* params = cache.current.load(std::memory_order_acquire)) return *params;
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (const Params* params = cache.current.load(std::memory_order_acquire)) return *params;
  cache.readings.push_back(paramsFromEnvironment());
  cache.current.store(&cache.readings.back(), std::memory_order_release);
  return cache.readings.back();
}

}  // namespace coll
