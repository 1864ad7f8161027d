// The emulator's fault injection, read from the environment of the process that uses it, so that
// a test can make one rank of several misbehave (README.md, "Controls for tests"). Test-only.
#pragma once

#include <cstdint>

namespace verbs_emu {

// COLL_VERBS_EMU_CORRUPT_RKEY=1: this process's memory regions hand out an rkey that names no
// region, so every peer's write into them fails with IBV_WC_REM_ACCESS_ERR.
bool corruptRkey();
// The rkey a corrupted region advertises: its key with a bit set that real keys never reach.
inline uint32_t corruptedRkey(uint32_t key) { return key | 0x80000000u; }

// COLL_VERBS_EMU_FAIL_AFTER=N: this process's link fails after N writes: later ones complete with
// IBV_WC_RETRY_EXC_ERR and all its QPs go to ERR. -1 when unset.
long failAfterWrites();

// COLL_VERBS_EMU_MAX_MRS=N: this process may hold at most N memory regions; ibv_reg_mr beyond that
// fails with ENOMEM, as a pinned-memory limit (RLIMIT_MEMLOCK) makes it fail. -1 when unset.
long maxMemoryRegions();

// COLL_VERBS_EMU_IMM_OR=MASK (decimal, or hex with 0x): the immediate of every write with
// immediate this process posts has MASK or'ed into it (immediates are carried as the caller gave
// them), so that a peer's checks meet immediates its writer never meant. 0 when unset.
uint32_t immediateOr();

// COLL_VERBS_EMU_DELAY_QP=K (0 or 1): the receive completions of QP K of every pair this process
// creates (creation index i with i % 2 == K; with two QPs per peer, each peer's QP K) are held back
// and delivered after later ones, so that arrivals across QPs come out of order.
bool delayedQp(int creationIndex);

}  // namespace verbs_emu
