// Fuzz target: the parsers of settings a user (or a launcher) writes in the environment:
// COLL_ALGO, COLL_PROTO, cpu lists (collrun --bind, COLL_*_CPUS), COLL_SOCKET_IFNAME and the other
// name selections. Bad text must end in a CollError naming it, never in a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "common/list_spec.h"
#include "common/net_interfaces.h"
#include "src/algorithms/algorithm_table.h"
#include "src/params.h"
#include "src/topo/cpu_list.h"

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
  return 0;
}
