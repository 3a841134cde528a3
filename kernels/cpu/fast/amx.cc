// AmxAvailable (amx.h): CPUID, XCR0 and the Linux permission request for the tile data state.
#include "kernels/cpu/fast/amx.h"

#include <cstdio>
#include <cstdlib>

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#define TESSERA_AMX_PROBE 1
#endif

#include "kernels/cpu/fast/isa_limit.h"

namespace tessera::kernels::cpu::fast {

namespace {

#if defined(TESSERA_AMX_PROBE)
bool ProbeAmx() {
  unsigned a, b, c, d;
  if (__get_cpuid_max(0, nullptr) < 0xD) return false;
  __cpuid_count(7, 0, a, b, c, d);
  const bool tile = (d >> 24) & 1, bf16 = (d >> 22) & 1, int8 = (d >> 25) & 1;
  if (!tile || !bf16 || !int8) return false;
  __cpuid_count(1, 0, a, b, c, d);
  if (((c >> 27) & 1) == 0) return false;  // OSXSAVE: XGETBV is allowed
  // Linux asks each process to request the tile data state (XFEATURE 18) before its first use;
  // XCR0 bits 17 (TILECFG) and 18 (TILEDATA) say the kernel supports it at all.
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3) != 3) return false;
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}
#else
bool ProbeAmx() { return false; }
#endif

}  // namespace

bool AmxAvailable() {
  static const bool ok = [] {
    const char* off = std::getenv("TESSERA_DISABLE_AMX");
    if (off != nullptr && off[0] != '\0' && off[0] != '0') return false;
    // The AMX kernels' epilogues are AVX-512; TESSERA_CPU_ISA=avx512-vnni turns AMX off alone.
    if (!Avx512Allowed() || !AmxAllowed()) return false;
    return ProbeAmx();
  }();
  return ok;
}

#if defined(TESSERA_AMX_PROBE)
// The tile permission is per process, and a forked child inherits it.
ChildOutcome RunInChild(bool (*check)(), int* signal) {
  const pid_t pid = fork();
  if (pid < 0) return ChildOutcome::kNoChild;
  if (pid == 0) _exit(check() ? 0 : 1);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ChildOutcome::kNoChild;
  }
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status) == 0 ? ChildOutcome::kPassed : ChildOutcome::kFailed;
  }
  if (signal != nullptr) *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return ChildOutcome::kDied;
}
#else
ChildOutcome RunInChild(bool (*check)(), int*) {
  return check() ? ChildOutcome::kPassed : ChildOutcome::kFailed;
}
#endif

bool AmxPassesSelfCheck(bool (*check)(), const char* kernel) {
  if (!AmxAvailable()) return false;
  int signal = 0;
  switch (RunInChild(check, &signal)) {
    case ChildOutcome::kPassed:
      return true;
    case ChildOutcome::kFailed:
      std::fprintf(stderr, "tessera: the AMX %s kernel disagreed with AVX-512; not using AMX\n",
                   kernel);
      return false;
    case ChildOutcome::kDied:
      std::fprintf(stderr, "tessera: the AMX %s kernel died of signal %d in its self-check; not "
                   "using AMX\n", kernel, signal);
      return false;
    case ChildOutcome::kNoChild:
      break;
  }
  std::fprintf(stderr, "tessera: cannot fork the AMX %s self-check; not using AMX\n", kernel);
  return false;
}

}  // namespace tessera::kernels::cpu::fast
