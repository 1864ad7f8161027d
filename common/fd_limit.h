// The process's open-file limit, as the listeners see it. Every connection a listener accepts
// costs a descriptor, and a stranger can open connections as fast as it likes: under the usual
// soft limit of 1024 a flood used every descriptor before any slot limit applied, and accept()
// then failed for the real ranks too. So the first listener made raises the soft limit toward the
// hard one (docs/security.md), and each listener sizes its room for connections that have not yet
// proven themselves from what the limit then is (listener_gate.h).
#pragma once

#include <cstddef>

namespace coll {

// What raiseOpenFileLimit aims for: enough for a store serving thousands of ranks beside a flood,
// not so much that a program closing every possible descriptor (some do, up to the soft limit)
// walks millions of them.
constexpr size_t kWantedOpenFiles = 65536;

// Raises this process's soft RLIMIT_NOFILE to min(hard limit, kWantedOpenFiles) when it is lower,
// and says so at INFO; never lowers it. Every listener calls it when it is made (two system
// calls), so a limit lowered in between, or in a forked child, is raised again. Returns the soft
// limit as it is afterwards.
size_t raiseOpenFileLimit();

// The soft RLIMIT_NOFILE now (a large number when unlimited).
size_t openFileLimit();

}  // namespace coll
