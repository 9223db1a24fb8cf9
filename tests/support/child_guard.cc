// Linked into every test binary: each process a test forks is killed when
// the test process ends. ctest kills a test that runs past its timeout,
// and a forked producer, consumer or server it leaves behind keeps
// spinning on one of the two cores, slowing every later test and skewing
// every benchmark run after it (three such processes, from tests that
// timed out, once ran for half an hour before anyone noticed).
//
// A fork handler rather than a call at each of the tests' fork sites: the
// parent-death signal is not inherited across fork, and it has to be set
// in every child. It is kept across exec, so the shmc tool and shmkv
// servers the tests start die with them too.
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace {

pid_t g_forking_process = 0;

void BeforeFork() { g_forking_process = getpid(); }

void InChild() {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have ended before the signal was asked for.
  if (getppid() != g_forking_process) _exit(1);
}

[[maybe_unused]] const int kRegistered =
    pthread_atfork(BeforeFork, nullptr, InChild);

}  // namespace
