//===- Dnnl.cpp -----------------------------------------------------------===//
#include "runtime/cpu/Dnnl.h"

namespace partita::rt::cpu {

const dnnl::engine &dnnlEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream &dnnlStream() {
  static dnnl::stream stream(dnnlEngine());
  return stream;
}

} // namespace partita::rt::cpu
