//===- FuzzInput.h - hands a fuzz input to readers that take a path -------===//
//
// The ONNX importer, readPlan and readNpy read files, so each input is written
// to one file per fuzzer process (in /dev/shm when there is one: no disk I/O).
//===----------------------------------------------------------------------===//
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace partita::fuzz {

/// Writes data to this process's scratch file and returns its path.
inline const std::string &writeInput(const uint8_t *data, size_t size, const char *suffix) {
  static const std::string path = std::string(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
                                  "/partita-fuzz-" + std::to_string(getpid()) + suffix;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort();
  if (size && std::fwrite(data, 1, size, f) != size)
    std::abort();
  std::fclose(f);
  return path;
}

} // namespace partita::fuzz
