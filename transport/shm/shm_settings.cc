#include "transport/shm/shm_settings.h"

#include "common/env_setting.h"
#include "common/hash.h"

namespace coll {
namespace transport {

void readShmSettings(TransportSettings* s) {
  s->shmFifoDepth = static_cast<int>(envInteger("COLL_SHM_FIFO_DEPTH", 2, 64, s->shmFifoDepth));
  s->singleCopyBytes = static_cast<size_t>(envInteger("COLL_SHM_SINGLE_COPY_BYTES", 0, 1LL << 50, s->singleCopyBytes));
  s->singleCopyBytesGiven = envIsSet("COLL_SHM_SINGLE_COPY_BYTES");
  s->singleCopyMaxBytes =
      static_cast<size_t>(envInteger("COLL_SHM_SINGLE_COPY_MAX_BYTES", 0, 1LL << 50, s->singleCopyMaxBytes));
  s->singleCopyMaxBytesGiven = envIsSet("COLL_SHM_SINGLE_COPY_MAX_BYTES");
  // Every host FIFO's slot, not only this transport's: the executor cuts a step into slices of
  // one size on both ends of every connection.
  s->slotBytes = static_cast<size_t>(envInteger("COLL_SHM_SLOT_BYTES", 4096, 64LL << 20, s->slotBytes));
  s->slotBytes = (s->slotBytes + 63) / 64 * 64;
  s->slotBytesGiven = envIsSet("COLL_SHM_SLOT_BYTES");
  s->shmNamedSegments = envBool("COLL_SHM_NAMED", false);
}

void shareShmSettings(const TransportSettings& s, std::vector<SharedSetting>* shared) {
  // Both ends of a FIFO cut it into the same slots, and the slot size shapes every plan.
  shared->push_back({"COLL_SHM_SLOT_BYTES", Fnv1a().add(s.slotBytes).value()});
  shared->push_back({"COLL_SHM_FIFO_DEPTH", Fnv1a().add(static_cast<uint64_t>(s.shmFifoDepth)).value()});
}

}  // namespace transport
}  // namespace coll
