// The reliable-connected QP's state machine, as the InfiniBand spec and libibverbs have it:
// RESET -> INIT -> RTR -> RTS, each step with the attributes it must be given; any state to RESET
// or ERR; anything else EINVAL, which is what a real device's driver answers.
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "emu_objects.h"
#include "emu_registry.h"

namespace verbs_emu {
namespace {

constexpr int kToInit = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kToRtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kToRts =
    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

bool has(int mask, int required) { return (mask & required) == required; }

// Fault injection for tests: COLL_VERBS_EMU_REFUSE_RTS=1 in a process makes its QPs stop at RTR,
// as a device refusing the step would (the fault suite's "QP never reaching RTS").
bool refuseRts() {
  const char* refuse = std::getenv("COLL_VERBS_EMU_REFUSE_RTS");
  return refuse != nullptr && std::strcmp(refuse, "1") == 0;
}

// 0 when `from` may go to `to` with the attributes in `mask`.
int check(int from, int to, const ibv_qp_attr& attr, int mask) {
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return 0;
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) return has(mask, kToInit) && attr.port_num == 1 ? 0 : EINVAL;
  if (from == IBV_QPS_INIT && to == IBV_QPS_INIT) return 0;
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) return has(mask, kToRtr) && attr.dest_qp_num != 0 ? 0 : EINVAL;
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) return has(mask, kToRts) && !refuseRts() ? 0 : EINVAL;
  if (from == IBV_QPS_RTS && to == IBV_QPS_RTS) return 0;
  return EINVAL;
}

}  // namespace

int transition(EmuQp* qp, const ibv_qp_attr& attr, int mask) {
  Registry* r = registry();
  Locked lock(r);
  QpSlot& s = r->qps[qp->slot];
  int to = (mask & IBV_QP_STATE) != 0 ? attr.qp_state : s.state;
  if (int err = check(s.state, to, attr, mask); err != 0) return err;
  if (to == IBV_QPS_RESET) s.recvHead = s.recvTail = 0;  // RESET drops posted receives
  if (to == IBV_QPS_RTR) s.destQpn = attr.dest_qp_num;
  if (to == IBV_QPS_RTS && s.state == IBV_QPS_RTR) {
    // How long a write waits for its answer before it fails (a carried one: emu_carrier.h).
    s.timeout = attr.timeout;
    s.retryCount = attr.retry_cnt;
  }
  s.state = to;
  qp->qp.state = static_cast<ibv_qp_state>(to);
  return 0;
}

}  // namespace verbs_emu
