//===- Dnnl.cpp -----------------------------------------------------------===//
#include "runtime/cpu/Dnnl.h"
#include <cstdlib>
#include <string>

namespace partita::rt::cpu {

const dnnl::engine &dnnlEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

bool dnnlHasBf16Matmul() {
  static const bool yes = [] {
    if (const char *env = std::getenv("PARTITA_BF16_GEMM"); env && std::string(env) == "0")
      return false;
    unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa()), bf16 = dnnl_cpu_isa_avx512_core_bf16;
    return (isa & bf16) == bf16; // AMX's value includes these bits
  }();
  return yes;
}

dnnl::stream &dnnlStream() {
  static dnnl::stream stream(dnnlEngine());
  return stream;
}

} // namespace partita::rt::cpu
