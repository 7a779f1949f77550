//===- Layout.cpp ---------------------------------------------------------===//
#include "planner/Layout.h"

namespace partita::planner {

namespace {
std::string joined(const std::vector<int> &v) {
  std::string s;
  for (int x : v)
    s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}
} // namespace

std::string Layout::str() const {
  std::string s = "tp" + std::to_string(tp) + (sequenceParallel ? "+sp" : "") + " pp" + std::to_string(pp);
  if (!stageLayers.empty())
    s += " layers=" + joined(stageLayers);
  if (virtualStages > 1)
    s += " v" + std::to_string(virtualStages);
  s += " dp" + std::to_string(dp) + " zero" + std::to_string(zero);
  if (pp > 1)
    s += " " + schedule;
  s += " recompute=" + recompute + " " + precision + " m=" + std::to_string(microBatches) +
       " mbs=" + std::to_string(microBatchSize);
  return s;
}

std::string Layout::compileFlags() const {
  std::string s = "--train --tp " + std::to_string(tp) + " --pp " + std::to_string(pp) + " --dp " + std::to_string(dp);
  if (virtualStages > 1)
    s += " --virtual-stages " + std::to_string(virtualStages);
  if (!stageLayers.empty())
    s += " --pp-layers " + joined(stageLayers);
  if (zero > 0)
    s += " --zero " + std::to_string(zero);
  if (sequenceParallel)
    s += " --sequence-parallel";
  if (recompute != "none")
    s += " --recompute " + recompute;
  if (precision != "fp32")
    s += " --precision " + precision;
  return s;
}

std::string Layout::launchFlags() const {
  std::string s = "--micro-batches " + std::to_string(microBatches);
  if (pp > 1 && virtualStages == 1)
    s += " --schedule " + schedule;
  return s;
}

Layout Layout::compileClass() const {
  Layout c = *this;
  c.dp = 1;
  c.zero = 0;
  return c;
}

} // namespace partita::planner
