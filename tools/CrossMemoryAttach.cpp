//===- CrossMemoryAttach.cpp ----------------------------------------------===//
#include "tools/CrossMemoryAttach.h"
#include <csignal>
#include <cstdint>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

namespace partita {

namespace {
volatile uint64_t marker = 0; // the target child's own value, which the reader must see
uint64_t markerOf(pid_t pid) { return 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(pid); }

bool exitedZero(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
} // namespace

bool crossMemoryAttachWorks() {
  int ready[2];
  if (pipe(ready) != 0)
    return false;
  pid_t target = fork();
  if (target == 0) { // sets its marker, says so, waits to be killed
    close(ready[0]);
    marker = markerOf(getpid());
    char c = 1;
    if (write(ready[1], &c, 1) != 1)
      _exit(1);
    for (;;)
      pause();
  }
  close(ready[1]);
  char c = 0;
  bool up = target > 0 && read(ready[0], &c, 1) == 1;
  close(ready[0]);
  bool works = false;
  if (up) {
    pid_t reader = fork();
    if (reader == 0) {
      uint64_t got = 0;
      iovec local{&got, sizeof got}, remote{const_cast<uint64_t *>(&marker), sizeof got};
      ssize_t n = process_vm_readv(target, &local, 1, &remote, 1, 0);
      _exit(n == static_cast<ssize_t>(sizeof got) && got == markerOf(target) ? 0 : 1);
    }
    works = reader > 0 && exitedZero(reader);
  }
  if (target > 0) {
    kill(target, SIGKILL);
    waitpid(target, nullptr, 0);
  }
  return works;
}

} // namespace partita
