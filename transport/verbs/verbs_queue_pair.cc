#include "transport/verbs/verbs_queue_pair.h"

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace coll {
namespace transport {
namespace {

// Verbs calls answer an errno value, or -1 with errno set, depending on the call and provider.
int errnoOf(int rc) { return rc > 0 ? rc : errno; }

[[noreturn]] void refused(const char* step, int peer, int rc) {
  throwError(collSystemError, "verbs transport: the queue pair to rank %d did not reach %s: ibv_modify_qp: %s", peer,
             step, std::strerror(errnoOf(rc)));
}

const char* statusName(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS:
      return "IBV_WC_SUCCESS";
    case IBV_WC_LOC_LEN_ERR:
      return "IBV_WC_LOC_LEN_ERR";
    case IBV_WC_LOC_QP_OP_ERR:
      return "IBV_WC_LOC_QP_OP_ERR";
    case IBV_WC_LOC_PROT_ERR:
      return "IBV_WC_LOC_PROT_ERR";
    case IBV_WC_WR_FLUSH_ERR:
      return "IBV_WC_WR_FLUSH_ERR";
    case IBV_WC_REM_INV_REQ_ERR:
      return "IBV_WC_REM_INV_REQ_ERR";
    case IBV_WC_REM_ACCESS_ERR:
      return "IBV_WC_REM_ACCESS_ERR";
    case IBV_WC_REM_OP_ERR:
      return "IBV_WC_REM_OP_ERR";
    case IBV_WC_RETRY_EXC_ERR:
      return "IBV_WC_RETRY_EXC_ERR";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "IBV_WC_RNR_RETRY_EXC_ERR";
    case IBV_WC_FATAL_ERR:
      return "IBV_WC_FATAL_ERR";
    case IBV_WC_RESP_TIMEOUT_ERR:
      return "IBV_WC_RESP_TIMEOUT_ERR";
    case IBV_WC_GENERAL_ERR:
      return "IBV_WC_GENERAL_ERR";
    default:
      return "IBV_WC_?";
  }
}

}  // namespace

ibv_qp* createRcQp(const VerbsDevice& device, ibv_cq* cq, int sendWrs, int recvWrs, uint32_t* maxInline) {
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = static_cast<uint32_t>(sendWrs);
  init.cap.max_recv_wr = static_cast<uint32_t>(recvWrs);
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  // Small slots go inline: the device copies them at post, with no DMA read of the slot.
  init.cap.max_inline_data = 128;
  ibv_qp* qp = device.api().createQp(device.pd(), &init);
  if (qp == nullptr)
    throwError(collSystemError, "verbs transport: ibv_create_qp on %s failed: %s", device.name().c_str(),
               std::strerror(errno));
  *maxInline = init.cap.max_inline_data;
  return qp;
}

void verbsQpToInit(const VerbsDevice& device, ibv_qp* qp, int peer) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = device.portNumber();
  attr.pkey_index = 0;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  int rc = device.api().modifyQp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc != 0) refused("INIT", peer, rc);
}

void verbsQpToRts(const VerbsDevice& device, ibv_qp* qp, const VerbsPath& path, int peer) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = path.mtu;
  attr.dest_qp_num = path.remoteQpn;
  attr.rq_psn = 0;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.port_num = device.portNumber();
  attr.ah_attr.dlid = static_cast<uint16_t>(path.remoteLid);
  if (path.remoteLid == 0) {
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = path.remoteGid;
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device.gidIndex());
    attr.ah_attr.grh.hop_limit = 255;
  }
  int rc = device.api().modifyQp(qp, &attr,
                                 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) refused("RTR", peer, rc);
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = static_cast<uint8_t>(path.timeout);
  attr.retry_cnt = static_cast<uint8_t>(path.retryCount);
  // Credits keep the receiver's queue stocked, so receiver-not-ready never happens in steady
  // state; 7 (retry forever) covers the instant between a receive completing and its repost.
  attr.rnr_retry = 7;
  attr.sq_psn = 0;
  attr.max_rd_atomic = 1;
  rc = device.api().modifyQp(
      qp, &attr,
      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) refused("RTS", peer, rc);
}

std::string verbsStatusText(const VerbsApi& api, ibv_wc_status status) {
  std::string name = statusName(status);
  if (api.wcStatusStr == nullptr) return name + " (" + std::to_string(static_cast<int>(status)) + ")";
  return std::string(api.wcStatusStr(status)) + " (" + name + ")";
}

}  // namespace transport
}  // namespace coll
