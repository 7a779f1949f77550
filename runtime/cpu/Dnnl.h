//===- Dnnl.h - the process-wide oneDNN CPU engine and stream -------------===//
#pragma once
#include "oneapi/dnnl/dnnl.hpp"

namespace partita::rt::cpu {

const dnnl::engine &dnnlEngine();
dnnl::stream &dnnlStream();

} // namespace partita::rt::cpu
