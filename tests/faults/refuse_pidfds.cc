#include "refuse_pidfds.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace colltest {
namespace {

#if defined(__x86_64__)
constexpr unsigned kThisArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kThisArch = AUDIT_ARCH_AARCH64;
#else
constexpr unsigned kThisArch = 0;
#endif

}  // namespace

bool canRefusePidfdCalls(std::string* why) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  if (kThisArch != 0) return true;
  *why = "no seccomp architecture code for this CPU in tests/faults/refuse_pidfds.cc";
#else
  *why = "this C library's headers name no pidfd_open or pidfd_getfd";
#endif
  return false;
}

void refusePidfdCalls() {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  // Another architecture's system call numbers mean other calls: such a call is let through.
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kThisArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
  };
  struct sock_fprog program = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    perror("refusePidfdCalls: installing the seccomp filter");
    abort();
  }
#endif
}

}  // namespace colltest
