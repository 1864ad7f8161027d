// Bringing a device and its reliable-connected queue pairs up: the device and port the domain uses,
// the QP state steps (RESET -> INIT -> RTR -> RTS) with the attributes each needs, and names for
// completion statuses. Every failure throws CollError naming the call and the peer, so that an
// init that cannot connect says why.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "transport/verbs/verbs_api.h"

namespace coll {
namespace transport {

// The active port that COLL_IB_HCA allows (`hca`, verbs_hca_spec.h; "" allows all) nearest to this
// rank's CPU binding (verbs_locality.h); among equally near ones the first in the order the library
// lists devices and then by port number. Its GID (`gidIndex`, COLL_IB_GID_INDEX;
// -1: the first the port reports usable) and a protection domain on it. A selection that matches
// no port throws collInvalidUsage naming the ports there are; a GID index the port lacks, too.
class VerbsDevice {
 public:
  VerbsDevice(std::shared_ptr<const VerbsApi> api, const std::string& hca, int gidIndex);
  ~VerbsDevice();
  VerbsDevice(const VerbsDevice&) = delete;
  VerbsDevice& operator=(const VerbsDevice&) = delete;

  const VerbsApi& api() const { return *api_; }
  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const ibv_port_attr& port() const { return port_; }
  const ibv_gid& gid() const { return gid_; }
  int maxCqe() const { return maxCqe_; }
  const std::string& name() const { return name_; }
  uint8_t portNumber() const { return portNumber_; }
  int gidIndex() const { return gidIndex_; }
  // "emu1:1 (PCI 0000:81:00.0, NUMA node 1, CPUs 1), near to this rank's CPUs 1; of emu0:1 far,
  // emu1:1 near": how the port was chosen, for the INFO line.
  const std::string& placement() const { return placement_; }

 private:
  // Opens the nearest selected active port; false when none (with what there is in *seen).
  bool openSelected(const std::string& hca, std::string* seen, bool* anyMatched);
  void chooseGid(int wanted);
  void release();  // what the constructor made so far, when it throws
  std::shared_ptr<const VerbsApi> api_;
  std::string name_;
  std::string placement_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_port_attr port_{};
  ibv_gid gid_{};
  uint8_t portNumber_ = 1;
  int gidIndex_ = 0;
  int maxCqe_ = 0;
};

// Where a QP connects to and how it retries: what RTR and RTS need.
struct VerbsPath {
  uint32_t remoteQpn = 0;
  uint32_t remoteLid = 0;  // 0: route by GID (RoCE)
  ibv_gid remoteGid{};
  ibv_mtu mtu = IBV_MTU_1024;
  int timeout = 18;    // COLL_IB_TIMEOUT: 4.096 us * 2^timeout per try
  int retryCount = 7;  // COLL_IB_RETRY_CNT
};

// An RC QP on `cq` with room for `sendWrs` and `recvWrs`; *maxInline gets the inline bytes the
// device granted. Throws collSystemError.
ibv_qp* createRcQp(const VerbsDevice& device, ibv_cq* cq, int sendWrs, int recvWrs, uint32_t* maxInline);
// RESET -> INIT with remote writes allowed. `peer` is for messages.
void verbsQpToInit(const VerbsDevice& device, ibv_qp* qp, int peer);
// INIT -> RTR -> RTS. Throws collSystemError naming the step that the device refused.
void verbsQpToRts(const VerbsDevice& device, ibv_qp* qp, const VerbsPath& path, int peer);

// "transport retry counter exceeded (IBV_WC_RETRY_EXC_ERR)": the library's own words where it has
// ibv_wc_status_str, and the enumerator's name always.
std::string verbsStatusText(const VerbsApi& api, ibv_wc_status status);

}  // namespace transport
}  // namespace coll
