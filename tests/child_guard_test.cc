// tests/support/child_guard.cc: a process a test forks does not outlive
// the process that forked it (a test killed at its timeout must not leave
// producers or servers spinning).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

// A child forks a grandchild that would run for a minute holding the
// write end of a pipe, then the child is SIGKILLed: the grandchild must
// die with it, which closes the pipe.
TEST(ChildGuard, GrandchildDiesWithItsParent) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (fork() == 0) {
      // Running: sends its pid, then keeps the write end open while it
      // lives.
      pid_t me = getpid();
      if (write(fds[1], &me, sizeof(me)) != sizeof(me)) _exit(1);
      sleep(60);
      _exit(0);
    }
    close(fds[1]);
    pause();
    _exit(0);
  }
  close(fds[1]);
  pid_t grandchild = 0;
  ASSERT_EQ(read(fds[0], &grandchild, sizeof(grandchild)),
            static_cast<ssize_t>(sizeof(grandchild)))
      << "the grandchild never ran";
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  pollfd p{fds[0], POLLIN, 0};
  int ready = poll(&p, 1, 10000);
  char c = 0;
  bool eof = ready == 1 && read(fds[0], &c, 1) == 0;
  close(fds[0]);
  if (!eof) kill(grandchild, SIGKILL);  // this test cleans up after itself
  EXPECT_TRUE(eof) << "the grandchild outlived its parent by 10 s";
}

}  // namespace
