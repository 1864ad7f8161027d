#include "communicator.h"

#include <cstdlib>
#include <cstring>

#include "library_call.h"

namespace torch_collective {

std::string Communicator::newUniqueId() {
  collUniqueId id;
  checkResult(collGetUniqueId(&id));
  return std::string(id.internal, sizeof(id.internal));
}

Communicator::Communicator(int rank, int size, const std::string& uniqueId, int timeoutMs) : timeoutMs_(timeoutMs) {
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

int Communicator::rankOf(collComm_t comm) {
  int rank = -1;
  checkResult(collCommUserRank(comm, &rank));
  return rank;
}

int Communicator::sizeOf(collComm_t comm) {
  int size = 0;
  checkResult(collCommCount(comm, &size));
  return size;
}

int Communicator::timeoutMs() const {
  if (timeoutMs_ > 0) return timeoutMs_;
  // As the library decides (docs/env.md): COLL_TIMEOUT_MS, else 300 s.
  const char* fromEnvironment = std::getenv("COLL_TIMEOUT_MS");
  int milliseconds = fromEnvironment ? std::atoi(fromEnvironment) : 0;
  return milliseconds > 0 ? milliseconds : 300000;
}

void Communicator::abort() {
  collComm_t comm = comm_;
  comm_ = nullptr;
  if (comm != nullptr) collCommAbort(comm);
}

Communicator::~Communicator() {
  // A communicator that failed is still destroyed this way: its calls have all returned.
  if (comm_ != nullptr) collCommDestroy(comm_);
}

}  // namespace torch_collective
