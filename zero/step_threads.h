// The threads that share a host optimizer step (collZeroOptimizerStep). The step is elementwise,
// so a shard cut into contiguous pieces, each stepped by its own thread, gives the same bits as
// one pass: only the time changes. DeepSpeed's CPU Adam and torch's optimizers take
// OMP_NUM_THREADS threads, which launchers set to the ranks' share of the cores (collrun does;
// torchrun sets 1 when it starts several ranks); the step takes as many, or COLL_ZERO_THREADS.
//
// The threads are made at the first step that uses them and then wait on a condition variable
// between steps (no spinning). The calling thread takes every piece no helper has taken, so a step
// never waits for a helper to start. One step uses them at a time: a second thread stepping
// meanwhile (ranks that are threads of one process) steps alone, as does a process forked from the
// one that made them (whose lock a helper may have held at the fork).
#pragma once

#include <cstddef>
#include <functional>

namespace coll {
namespace zero {

// COLL_ZERO_THREADS, else OMP_NUM_THREADS (its first number), else 1. Throws
// CollError(collInvalidUsage) naming COLL_ZERO_THREADS when it is set to something else than
// 1-256 (OMP_NUM_THREADS is OpenMP's: a value it would refuse counts as unset).
int readStepThreads();
// The same, read once per process (again while it throws).
int stepThreadsFromEnvironment();

// The fewest elements a thread takes: below it waking a thread costs more than it saves.
constexpr size_t kElementsPerThread = size_t(1) << 15;

// Runs piece(begin, end) over [0, count) cut into contiguous pieces, at most `threads` at once
// (this thread runs one), pieces starting at multiples of `alignment` elements (the last ends at
// count); returns once every piece has returned. `piece` must not throw.
void forEachPiece(size_t count, int threads, size_t alignment, const std::function<void(size_t, size_t)>& piece);

}  // namespace zero
}  // namespace coll
