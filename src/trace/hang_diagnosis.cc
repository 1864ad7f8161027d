#include "src/trace/hang_diagnosis.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "common/error.h"
#include "kernels/cpu/reduce.h"

namespace coll {
namespace trace {
namespace {

// What makes two ranks' calls the same call: a collective by its number and shape, a send or
// receive by its peer and shape.
using CallKey = std::tuple<int, uint64_t, uint64_t, int, int>;

CallKey keyOf(const CallRecord& r) {
  return {static_cast<int>(r.type), r.pointToPoint() ? 0 : r.seq, r.count, static_cast<int>(r.datatype),
          r.pointToPoint() ? r.peer : r.root};
}

std::string shapeOf(const CallRecord& r) {
  const uint64_t bytes = r.count * kernels::dataTypeSize(r.datatype);
  return formatString("%s %s", describeBytes(bytes).c_str(), kernels::dataTypeName(r.datatype));
}

// "all_reduce #1234 (4 MiB float)"; without the shape for a rank compared with the reference.
std::string describeCall(const CallRecord& r, bool withShape) {
  std::string text;
  if (r.type == CollType::kSend)
    text = formatString("send to rank %d", r.peer);
  else if (r.type == CollType::kRecv)
    text = formatString("recv from rank %d", r.peer);
  else
    text = formatString("%s #%llu", operationName(r.type), static_cast<unsigned long long>(r.seq));
  if (withShape && r.type != CollType::kBarrier) text += " (" + shapeOf(r) + ")";
  if (r.state == CallState::kQueued) text += withShape ? " queued on its stream" : " (queued on its stream)";
  return text;
}

// The call most ranks are in; among equals, the earliest.
bool findReference(const std::vector<RankStatus>& ranks, CallKey* reference) {
  std::map<CallKey, int> votes;
  for (const RankStatus& s : ranks)
    if (s.answered && s.inCall) ++votes[keyOf(s.current)];
  if (votes.empty()) return false;
  int best = 0;
  for (const auto& [key, count] : votes) {
    const bool earlier = std::get<1>(key) < std::get<1>(*reference);
    if (count > best || (count == best && earlier)) {
      best = count;
      *reference = key;
    }
  }
  return true;
}

// What a rank does, as a predicate after its ranks ("wait in ...", "did not answer ..."), in the
// singular or the plural.
std::string predicateOf(const RankStatus& s, bool matchesReference, bool plural) {
  if (!s.answered)
    return "did not answer" + (s.silence.empty() ? std::string() : " (" + s.silence + ")");
  if (matchesReference) return std::string(plural ? "wait in " : "waits in ") + describeCall(s.current, true);
  std::string text = formatString("last completed #%llu and %s ", static_cast<unsigned long long>(s.completed),
                                  plural ? "are" : "is");
  return text + (s.inCall ? "in " + describeCall(s.current, false) : "in no call");
}

}  // namespace

RankStatus statusFromTrace(const RankTrace& trace) {
  RankStatus s;
  s.rank = trace.header.rank;
  s.answered = true;
  s.completed = trace.header.collectivesCompleted;
  for (auto it = trace.calls.rbegin(); it != trace.calls.rend(); ++it) {
    if (it->state == CallState::kCompleted) break;
    s.inCall = true;
    s.current = *it;
    break;
  }
  return s;
}

RankStatus silentRank(int rank, const std::string& why) {
  RankStatus s;
  s.rank = rank;
  s.silence = why;
  return s;
}

std::string describeHang(std::vector<RankStatus> ranks) {
  std::sort(ranks.begin(), ranks.end(), [](const RankStatus& a, const RankStatus& b) { return a.rank < b.rank; });
  CallKey reference{};
  const bool haveReference = findReference(ranks, &reference);
  auto matches = [&](const RankStatus& s) { return haveReference && s.answered && s.inCall && keyOf(s.current) == reference; };
  // Ranks that read the same, in the order of their lowest rank, the reference's first; each group
  // keeps its first rank's status, which its line describes.
  struct Group {
    std::string key;
    std::vector<int> members;
    const RankStatus* first;
  };
  std::vector<Group> groups;
  for (const RankStatus& s : ranks) {
    std::string key = predicateOf(s, matches(s), false);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.key == key; });
    if (it == groups.end())
      groups.push_back({std::move(key), {s.rank}, &s});
    else
      it->members.push_back(s.rank);
  }
  std::stable_partition(groups.begin(), groups.end(), [&](const Group& g) { return matches(*g.first); });
  std::string line;
  for (const Group& group : groups) {
    const std::vector<int>& members = group.members;
    const RankStatus& first = *group.first;
    if (!line.empty()) line += "; ";
    line += describeRanks(members) + " " + predicateOf(first, matches(first), members.size() > 1);
  }
  return line.empty() ? "no rank reported" : line;
}

std::string describeRanks(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += j == i ? std::to_string(ranks[i]) : formatString("%d-%d", ranks[i], ranks[j]);
    i = j + 1;
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + text;
}

std::string describeBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0 || value == static_cast<double>(static_cast<uint64_t>(value)))
    return formatString("%llu %s", static_cast<unsigned long long>(value), kUnits[unit]);
  return formatString("%.1f %s", value, kUnits[unit]);
}

}  // namespace trace
}  // namespace coll
