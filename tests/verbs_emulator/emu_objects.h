// The verbs emulator's process-local objects: each wraps the ibv_* struct that callers see (first
// member, so the pointer handed out converts back) and names its slot in the shared registry.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

// The emulator's entry points are the only symbols it exports.
#define EMU_EXPORT extern "C" __attribute__((visibility("default")))

namespace verbs_emu {

struct EmuPd {
  ibv_pd pd;
  uint32_t id;  // registry-wide, so that a key of another PD is refused
};

struct EmuCq {
  ibv_cq cq;
  int slot;
};

struct EmuQp {
  ibv_qp qp;
  int slot;
  uint32_t maxInline;
  bool signalAll;  // sq_sig_all
};

inline EmuPd* emu(ibv_pd* pd) { return reinterpret_cast<EmuPd*>(pd); }
inline EmuCq* emu(ibv_cq* cq) { return reinterpret_cast<EmuCq*>(cq); }
inline EmuQp* emu(ibv_qp* qp) { return reinterpret_cast<EmuQp*>(qp); }

// The data path, installed in every context's ops table (verbs.h's ibv_post_send and friends are
// inline and call through it, as with any provider).
int postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int pollCq(ibv_cq* cq, int entries, ibv_wc* wc);

// The QP state machine (emu_qp_state.cc): 0, or the errno real verbs gives.
int transition(EmuQp* qp, const ibv_qp_attr& attr, int mask);

}  // namespace verbs_emu
