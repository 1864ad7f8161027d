// The settings transports read. Each transport reads its own COLL_* variables in its folder (the
// `readSettings` of its entry in transport_table.h), so that the core copies them into each
// communicator without naming one (docs/env.md lists them all).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace coll {
namespace transport {

struct TransportSettings {
  size_t slotBytes = 128 << 10;  // every host FIFO's slot (COLL_SHM_SLOT_BYTES): one slice size for the executor
  // The slot size was given: the communicator keeps it whatever transports it uses.
  bool slotBytesGiven = false;
  int shmFifoDepth = 8;  // COLL_SHM_FIFO_DEPTH
  // COLL_SHM_SINGLE_COPY_BYTES..COLL_SHM_SINGLE_COPY_MAX_BYTES: messages the receiver reads from
  // the sender's memory (a minimum of 0: never).
  size_t singleCopyBytes = 32 << 10;
  size_t singleCopyMaxBytes = 64 << 10;
  // The window's bottom was given: single copies even where ranks share cores.
  bool singleCopyBytesGiven = false;
  // The window's top was given: the window is the user's, and larger sends are not measured
  // against single copies (HostEngineArgs::pointToPointSingleCopyMax).
  bool singleCopyMaxBytesGiven = false;
  // Whether sends inside the window go by a single copy (off where ranks outnumber cores unless
  // set); above it the host engine may still choose one by measurement (singleCopyPossible).
  bool singleCopyWindow = true;
  int netFifoDepth = 8;                // COLL_NET_FIFO_DEPTH
  size_t oneshotBytes = 64 << 10;      // per one-shot buffer (COLL_ONESHOT_BYTES)
  bool shmNamedSegments = false;       // COLL_SHM_NAMED
  int socketsPerPeer = 2;              // COLL_SOCKET_NSOCKS
  bool netEncrypt = false;             // COLL_NET_ENCRYPT: the socket transport's frames are sealed records
  size_t socketBufferBytes = 2 << 20;  // COLL_SOCKET_BUFFER_BYTES: each data socket's buffers (0: autotuned)
  int ibTimeout = 18;                  // COLL_IB_TIMEOUT: a verbs QP's ack timeout, 4.096 us * 2^value
  int ibRetryCount = 7;                // COLL_IB_RETRY_CNT: a verbs QP's retries before an error completion
  std::string ibHca;                   // COLL_IB_HCA: the devices and ports verbs may use ("": all)
  int ibGidIndex = -1;                 // COLL_IB_GID_INDEX (-1: the port's first usable GID)
  int ibQpsPerConnection = 1;          // COLL_IB_QPS_PER_CONNECTION: verbs QPs per peer, slots striped over them
  size_t ibZcopyBytes = 256 << 10;     // COLL_IB_ZCOPY_BYTES: verbs sends from caller buffers this large (0: never)
  std::string socketIfname;            // COLL_SOCKET_IFNAME (empty: the interface that reaches the rendezvous)
  std::string rendezvousAddress;       // the local address that reaches the rendezvous store ("" if unknown)
  int timeoutMs = 300000;              // bounds setup and the flush of pending sends at destruction
  int device = -1;                     // this rank's GPU, for device-memory transports
  // COLL_STAGED_RECV=copy: staged slices are copied into device memory before the kernels reduce
  // them (copy-then-reduce); mapped (the default): the kernels read the pinned slots.
  bool stagedCopyReceive = false;
  // COLL_TRANSPORTS: the staged transport routes its slices over the host transports it selects.
  std::string transports;
  // The job's secret (the rendezvous store's): the socket transport's connections prove it.
  std::array<uint8_t, 32> jobSecret{};
};

// A setting every rank must share, because it decides plans or the shape of the transports:
// ranks that differ would wait on each other forever, so init compares them.
struct SharedSetting {
  const char* name;    // the environment variable
  uint64_t digest;     // of its value
  bool plain = false;  // the digest is the value itself, which a mismatch then shows
};

// Every transport's variables, read by the entries of the table in order. Bad values throw
// CollError(collInvalidUsage) naming the variable, its value and what was expected.
TransportSettings transportSettingsFromEnvironment();
// The settings of `settings` that every rank must share for the transports to connect, each
// transport's in table order.
std::vector<SharedSetting> sharedTransportSettings(const TransportSettings& settings);

}  // namespace transport
}  // namespace coll
