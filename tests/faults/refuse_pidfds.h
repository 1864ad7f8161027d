// Makes this process see a kernel without pidfd_open and pidfd_getfd (Linux before 5.6, or a
// container whose seccomp profile refuses them): a seccomp filter that answers both with ENOSYS.
// For the ranks of a fault test, installed in each child before init.
#pragma once

#include <string>

namespace colltest {

// Whether refusePidfdCalls can work here (this architecture's seccomp filter is known); why not.
bool canRefusePidfdCalls(std::string* why);
// Installs the filter for the rest of this process's life (and its children's). Aborts the
// process if the kernel refuses the filter: a rank that went on would test nothing.
void refusePidfdCalls();

}  // namespace colltest
