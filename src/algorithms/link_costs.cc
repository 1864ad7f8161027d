// LinkCosts (plan_context.h): the planner's prices of each transport's hops, from the transport
// table, so that the planner weighs links without naming a transport.
#include "common/error.h"
#include "src/algorithms/plan_context.h"
#include "transport/transport_table.h"

namespace coll {

LinkCosts::LinkCosts() {
  for (const transport::TransportEntry* t : transport::pricedEntries())
    links.push_back({t->price.name, LinkCost{t->price.latencyUs, t->price.bytesPerUs}});
}

LinkCost* LinkCosts::find(const std::string& name) {
  for (Named& link : links)
    if (link.name == name) return &link.cost;
  return nullptr;
}

const LinkCost& LinkCosts::of(const std::string& name) const {
  for (const Named& link : links)
    if (link.name == name) return link.cost;
  throwError(collInternalError, "no link is priced as \"%s\"", name.c_str());
}

const LinkCost& LinkCosts::of(transport::MemoryKind memory, transport::LinkKind link,
                              const std::vector<const transport::TransportEntry*>& used) const {
  return of(transport::pricedEntry(memory, link, used).price.name);
}

}  // namespace coll
