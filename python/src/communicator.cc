#include "communicator.h"

#include <cstring>

#include "library_call.h"

namespace torch_collective {

std::string Communicator::newUniqueId() {
  collUniqueId id;
  checkResult(collGetUniqueId(&id));
  return std::string(id.internal, sizeof(id.internal));
}

Communicator::Communicator(int rank, int size, const std::string& uniqueId, int timeoutMs) {
  collUniqueId id;
  if (uniqueId.size() != sizeof(id.internal))
    throw std::invalid_argument("torch_collective: the unique id from the store has " +
                                std::to_string(uniqueId.size()) + " bytes, expected " +
                                std::to_string(sizeof(id.internal)));
  memcpy(id.internal, uniqueId.data(), sizeof(id.internal));
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs;
  config.commName = "torch";
  checkResult(collCommInitRankConfig(&comm_, size, id, rank, &config));
}

Communicator::~Communicator() {
  // A communicator that failed is still destroyed this way: its calls have all returned.
  if (comm_ != nullptr) collCommDestroy(comm_);
}

}  // namespace torch_collective
