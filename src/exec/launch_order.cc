#include "src/exec/launch_order.h"

namespace coll {

LaunchOrder::Before LaunchOrder::before(const void* stream, bool capturing) const {
  Before b;
  b.external = capturing;
  // A capture always waits: the graph may be replayed after any later eager launch, and a wait
  // on an event never recorded returns at once. An eager launch waits unless the stream itself
  // orders it after the previous launch (same stream, and no graph that could have been replayed
  // in between: once anything was captured, the library cannot know, so it always waits).
  if (capturing)
    b.wait = true;
  else
    b.wait = launches_ > 0 && (anyCaptured_ || stream != lastStream_);
  return b;
}

void LaunchOrder::recorded(const void* stream, bool capturing) {
  lastStream_ = stream;
  anyCaptured_ = anyCaptured_ || capturing;
  ++launches_;
}

}  // namespace coll
