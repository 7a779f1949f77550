//===- PassManager.cpp ----------------------------------------------------===//
#include "compiler/pass/PassManager.h"
#include "compiler/ir/Verifier.h"
#include "llvm/ADT/StringExtras.h"

namespace partita {

llvm::Error Pass::setOption(llvm::StringRef key, llvm::StringRef value) {
  std::vector<std::string> known;
  for (PassOptionBase *o : options_) {
    if (o->name() == key) {
      if (!o->parse(value))
        return passError(name(), "option " + key + " expects " + o->expects() + ", got '" + value + "'");
      return llvm::Error::success();
    }
    known.push_back(o->name());
  }
  return passError(
      name(), "unknown option '" + key + "'" +
                  (known.empty() ? std::string(" (it takes none)") : " (it takes " + llvm::join(known, ", ") + ")"));
}

std::vector<std::string> describeOptions(const Pass &pass) {
  std::vector<std::string> lines;
  for (const PassOptionBase *o : pass.options()) {
    std::string def = o->defaultText();
    lines.push_back(o->name() + "=" + o->typeName().str() + " (" + (def.empty() ? "none" : def) + "): " + o->help());
  }
  return lines;
}

llvm::Error passError(llvm::StringRef pass, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), pass + ": " + msg);
}

PassRegistry &PassRegistry::get() {
  static PassRegistry registry;
  return registry;
}

const PassInfo *PassRegistry::find(llvm::StringRef name) const {
  for (const auto &p : passes_)
    if (p.name == name)
      return &p;
  return nullptr;
}

llvm::Error PassManager::addPipeline(llvm::StringRef pipeline) {
  while (!pipeline.empty()) {
    size_t end = 0;
    int depth = 0;
    for (; end < pipeline.size(); ++end) {
      char c = pipeline[end];
      if (c == '{')
        ++depth;
      else if (c == '}')
        --depth;
      else if (c == ',' && depth == 0)
        break;
    }
    llvm::StringRef item = pipeline.take_front(end).trim();
    pipeline = pipeline.drop_front(std::min(end + 1, pipeline.size()));
    if (item.empty())
      continue;
    auto [name, rest] = item.split('{');
    const PassInfo *info = PassRegistry::get().find(name.trim());
    if (!info)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "unknown pass '" + name.trim() + "' (see --list-passes)");
    auto pass = info->create();
    if (!rest.empty()) {
      if (!rest.endswith("}"))
        return passError(info->name, "unterminated option list in '" + item + "'");
      llvm::SmallVector<llvm::StringRef, 4> pieces;
      rest.drop_back().split(pieces, ',', -1, false);
      // A piece without '=' continues the previous option's value, so a
      // list-valued option reads `coords=dp:1,tp:0`.
      std::vector<std::pair<std::string, std::string>> opts;
      for (auto piece : pieces) {
        if (!opts.empty() && !piece.contains('=')) {
          opts.back().second += "," + piece.trim().str();
          continue;
        }
        auto [k, v] = piece.split('=');
        opts.emplace_back(k.trim().str(), v.trim().str());
      }
      for (const auto &[k, v] : opts)
        if (auto err = pass->setOption(k, v))
          return err;
    }
    add(std::move(pass));
  }
  return llvm::Error::success();
}

llvm::Error SplitPass::run(Graph &) {
  return passError(name(), "cuts the graph into several graphs: it runs where a pipeline may give several "
                           "(partita-opt), not on one graph in place");
}

/// Whether the pipeline verifies the graph after each pass (always in debug builds).
static bool verifying(bool verifyEach) {
#ifndef NDEBUG
  (void)verifyEach;
  return true;
#else
  return verifyEach;
#endif
}

/// Sorts what pass `p` left and, when asked, verifies it.
static llvm::Error checkAfter(const Pass &p, Graph &g, bool verify) {
  if (auto err = g.sortTopologically())
    return passError(p.name(), llvm::toString(std::move(err)));
  if (verify)
    if (auto err = verifyGraph(g))
      return passError(p.name(), "left an invalid graph: " + llvm::toString(std::move(err)));
  return llvm::Error::success();
}

llvm::Error PassManager::run(Graph &g) {
  for (auto &p : passes_) {
    if (auto err = p->run(g))
      return err;
    if (auto err = checkAfter(*p, g, verifying(verifyEach)))
      return err;
  }
  return llvm::Error::success();
}

llvm::Error PassManager::run(std::vector<std::unique_ptr<Graph>> &graphs) {
  for (auto &p : passes_) {
    if (!p->splits()) {
      for (auto &g : graphs) {
        if (auto err = p->run(*g))
          return err;
        if (auto err = checkAfter(*p, *g, verifying(verifyEach)))
          return err;
      }
      continue;
    }
    std::vector<std::unique_ptr<Graph>> parts;
    for (auto &g : graphs) {
      auto split = static_cast<SplitPass &>(*p).split(*g);
      if (!split)
        return split.takeError();
      for (auto &part : *split) {
        if (auto err = checkAfter(*p, *part, verifying(verifyEach)))
          return err;
        parts.push_back(std::move(part));
      }
    }
    graphs = std::move(parts);
  }
  return llvm::Error::success();
}

} // namespace partita
