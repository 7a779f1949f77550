//===- Dnnl.h - the process-wide oneDNN CPU engine and stream -------------===//
#pragma once
#include "oneapi/dnnl/dnnl.hpp"

namespace partita::rt::cpu {

const dnnl::engine &dnnlEngine();
dnnl::stream &dnnlStream();
/// Whether oneDNN runs bf16 matmuls natively on this CPU (AVX-512 BF16 or
/// AMX, asked of oneDNN at run time), unless PARTITA_BF16_GEMM=0 says not to.
bool dnnlHasBf16Matmul();

} // namespace partita::rt::cpu
