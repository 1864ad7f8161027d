// Fuzz target: the parsers of settings a user (or a launcher) writes in the environment:
// COLL_ALGO, COLL_PROTO, cpu lists (collrun --bind, COLL_*_CPUS), COLL_SOCKET_IFNAME and the other
// name selections; and the one-host job's secret file (bootstrap/host_secret.h), which another
// process writes. Bad text must end in a CollError naming it (or no secret), never in a crash.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "bootstrap/host_secret.h"
#include "common/error.h"
#include "common/list_spec.h"
#include "common/net_interfaces.h"
#include "src/algorithms/algorithm_table.h"
#include "src/params.h"
#include "topo/cpu_list.h"

using namespace coll;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Algo overrides[static_cast<int>(CollType::kCount)] = {};
  try {
    parseAlgoOverrides(text, overrides);
  } catch (const CollError&) {
  }
  try {
    (void)parseProtoChoice(text);
  } catch (const CollError&) {
  }
  try {
    (void)topo::parseCpuList(text);
  } catch (const CollError&) {
  }
  try {
    const NameSelection selection = parseInterfaceSpec(text);
    (void)selection.selects("eth0");
  } catch (const CollError&) {
  }
  (void)splitList(text);
  const NameSelection names = NameSelection::parse(text, NameSelection::Match::kPrefix);
  (void)names.selects("shm");
  // A secret that parses is written back as the same text.
  if (const std::optional<bootstrap::Secret> secret = bootstrap::parseHostSecret(text)) {
    const std::optional<bootstrap::Secret> again = bootstrap::parseHostSecret(bootstrap::formatHostSecret(*secret));
    if (again != secret) __builtin_trap();
  }
  return 0;
}
