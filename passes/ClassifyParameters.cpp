//===- ClassifyParameters.cpp - classify-parameters pass -----------------===//
//
// Marks every Weight node trainable (a parameter: gradient, communication,
// optimizer state) or frozen (a buffer torch exported as an initializer),
// with the reason: attributes `trainable` (0/1) and `role`. The rule follows
// the math, not the names (torch.onnx calls folded buffers `onnx::Mul_438`):
// each float weight is followed forward through the ops that only move,
// reshape or look it up, or combine it with constants and integer inputs
// (positions, masks), to the first op that meets an activation. That op says
// what the weight is:
//
//   frozen     integer or bool dtype (position ids, token types, bool masks);
//              reaches Cos/Sin (rotary frequencies, inv_freq);
//              multiplied elementwise into a value that reaches QKᵀ without a
//              projection, and varies along two axes (rotary cos/sin table);
//              added to (or Where-selected into) attention scores before
//              Softmax, and every value is 0 or <= -1e4 (additive causal or
//              padding mask, a masked_fill value); unused;
//   trainable  a MatMul/Gemm/Linear/Conv operand (projection weight or bias),
//              a normalization scale/bias, an embedding table (Gather data),
//              added to activations (a bias, a learned position embedding such
//              as ViT's), concatenated with them (a class token), any other use.
//
// One trainable use makes the weight trainable: a buffer is frozen only when
// every use is one of the frozen kinds.
//
//   %c = Weight() {name = "onnx::Mul_438"} : f32[16,8]
//   %r = Mul(%q, %c) ...  ; %q reaches MatMul(%q', %kT)
//     →  %c = Weight() {name = "onnx::Mul_438", role = "rotary table ...", trainable = 0}
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/ClassifyParameters.h"
#include "passes/TieEmbeddings.h"
#include "passes/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"
#include <algorithm>
#include <map>
#include <set>
#include <cmath>
#include <optional>

namespace partita {

namespace {

/// Ops that move, select or map a tensor's elements one by one: a weight
/// through them is still that weight (transposed, cast, negated, ...).
bool mapsElements(const Node &n) {
  return hasTrait(n, OpTrait::MovesElements) || (hasTrait(n, OpTrait::Elementwise) && n.numInputs() == 1);
}

/// Elementwise and data-movement ops: a value through them is still, element
/// for element, that value's data.
bool carriesElements(const Node &n) {
  return hasTrait(n, OpTrait::Elementwise) || hasTrait(n, OpTrait::MovesElements);
}

/// A Weight, possibly through such ops (a projection's operand, not an activation).
bool isWeightView(const Value *v) {
  for (int depth = 0; v && depth < 8; ++depth) {
    const Node *d = v->definingNode();
    if (!d)
      return false;
    if (d->is("Weight"))
      return true;
    if (!mapsElements(*d))
      return false;
    v = d->input(0);
  }
  return false;
}

/// Values computed from integer inputs and constants only (positions, a
/// padding mask turned into -1e4s): combining a weight with them keeps it a
/// table.
class StaticValues {
public:
  bool operator()(const Value *v) {
    if (auto known = lookup(v))
      return *known;
    // Iterative post-order over the producers (a deep model would overflow
    // a recursive walk's stack).
    std::vector<const Value *> stack{v};
    while (!stack.empty()) {
      const Value *x = stack.back();
      if (lookup(x)) {
        stack.pop_back();
        continue;
      }
      const Node *d = x->definingNode();
      bool pending = false, result = true;
      for (const Value *in : d->inputs()) {
        auto known = lookup(in);
        if (!known) {
          stack.push_back(in);
          pending = true;
        } else {
          result = result && *known;
        }
      }
      if (pending)
        continue;
      memo_[x] = result;
      stack.pop_back();
    }
    return memo_[v];
  }

private:
  /// The answer when it needs no producer's: a non-float value, a Constant,
  /// a float weight or graph input; or one already computed.
  std::optional<bool> lookup(const Value *v) {
    if (!v || !isFloat(v->type().dtype))
      return true;
    auto it = memo_.find(v);
    if (it != memo_.end())
      return it->second;
    const Node *d = v->definingNode();
    if (!d)
      return false; // a float graph input
    if (d->is("Constant"))
      return true;
    if (d->is("Weight"))
      return false;
    return std::nullopt;
  }

  llvm::DenseMap<const Value *, bool> memo_;
};

/// Whether `v` flows through elementwise and data-movement ops into a node
/// for which `isTarget` holds; looks at most 64 values ahead.
template <typename Pred>
bool flowsInto(const Value *v, Pred isTarget) {
  std::vector<const Value *> work{v};
  llvm::DenseSet<const Value *> seen;
  while (!work.empty() && seen.size() < 64) {
    const Value *x = work.back();
    work.pop_back();
    if (!seen.insert(x).second)
      continue;
    for (const Node *u : x->users()) {
      if (isTarget(u))
        return true;
      if (carriesElements(*u))
        for (const Value *o : u->outputs())
          work.push_back(o);
    }
  }
  return false;
}

/// Whether `v` flows into a Softmax through elementwise and view ops only:
/// it is (part of) attention scores.
bool reachesSoftmax(const Value *v) {
  return flowsInto(v, [](const Node *u) { return u->is("Softmax") || u->is("LogSoftmax"); });
}

/// Whether `v` flows through elementwise, view and rotate-half ops into a
/// MatMul of two activations (QKᵀ): it is a query or key.
bool reachesScores(const Value *v) {
  return flowsInto(v, [](const Node *u) {
    return (u->is("MatMul") || u->is("Einsum")) && u->numInputs() == 2 && !isWeightView(u->input(0)) &&
           !isWeightView(u->input(1));
  });
}

/// A mask's values: 0 where attention is allowed, a large negative number
/// (or -inf) where it is not. A weight without readable data (IR text) is
/// judged by its place alone.
bool maskValued(const Graph &g, const Node &weight) {
  std::string name = weight.stringAttr("name", "");
  const WeightRef *ref = g.weights.find(name);
  if (!ref || !ref->hasData())
    return true;
  if (weight.output()->type().numel() > (int64_t(1) << 24))
    return false;
  auto t = g.weights.load(name);
  if (!t) {
    llvm::consumeError(t.takeError());
    return false;
  }
  for (int64_t i = 0, n = t->numel(); i < n; ++i) {
    double x = t->at(i);
    if (x != 0 && !(x <= -1e4))
      return false;
  }
  return true;
}

/// Dimensions of extent > 1: a rotary table varies along positions and the
/// head dimension; a norm scale only along features.
int varyingDims(const TensorType &t) {
  int n = 0;
  for (int64_t d : t.shape)
    n += d > 1;
  return n;
}

struct Verdict {
  bool trainable;
  std::string reason;
};

class Classifier {
public:
  explicit Classifier(const Graph &g) : g_(g) {}

  Verdict classify(const Node &weight) {
    const Value *w = weight.output();
    if (!isFloat(w->type().dtype))
      return {false, "integer or bool dtype (" + dtypeName(w->type().dtype).str() + "): no gradient"};
    // Forward from the weight through ops that keep it a table; `lookedUp`:
    // through a Gather of it (an embedding, or a rotary table by position).
    std::vector<std::pair<const Value *, bool>> work{{w, false}};
    llvm::DenseSet<const Value *> carried{w};
    std::string frozen;
    auto carry = [&](const Node &n, bool lookedUp) {
      for (const Value *o : n.outputs())
        if (isFloat(o->type().dtype) && carried.insert(o).second)
          work.push_back({o, lookedUp});
    };
    while (!work.empty()) {
      auto [v, lookedUp] = work.back();
      work.pop_back();
      auto learned = [&, lookedUp = lookedUp](std::string why) {
        return Verdict{true, lookedUp ? "embedding table (Gather data)" : why};
      };
      if (g_.isGraphOutput(v))
        return learned("reaches a graph output");
      for (const Node *n : v->users()) {
        // The other float operands: are they activations?
        bool activation = false;
        for (const Value *in : n->inputs())
          if (in && in != v && !carried.count(in) && !static_(in))
            activation = true;
        std::string op = n->qualifiedOp();
        if (n->is("Cos") || n->is("Sin")) {
          frozen = "rotary frequencies (reach " + op + ")";
          continue;
        }
        if (hasTrait(*n, OpTrait::Contraction)) {
          if (!activation) {
            carry(*n, lookedUp);
            continue;
          }
          bool bias = (n->is("Linear", "partita") || n->is("Gemm") || n->is("Conv")) && n->input(2) == v;
          return learned(bias ? "projection bias (" + op + ")" : "projection weight (" + op + ")");
        }
        if (hasTrait(*n, OpTrait::Normalizes))
          return learned(n->input(0) == v ? "normalized as data (" + op + ")" : "normalization scale/bias (" + op + ")");
        if (n->is("Gather") && n->input(0) == v) {
          carry(*n, lookedUp || !constantValue(n->input(1)));
          continue;
        }
        if (!activation) { // combined with constants, integer inputs or itself
          carry(*n, lookedUp);
          continue;
        }
        if (n->is("Add") || n->is("Sub") || (n->is("Where") && n->input(0) != v)) {
          if (reachesSoftmax(n->output()) && maskValued(g_, weight)) {
            frozen = "additive attention mask (" + op + " into the scores before Softmax)";
            continue;
          }
          return learned("added to activations (" + op + ": bias or learned embedding)");
        }
        if (n->is("Mul") || n->is("Div")) {
          if (varyingDims(w->type()) >= 2 && reachesScores(n->output())) {
            frozen = "rotary table (" + op + " with the queries/keys)";
            continue;
          }
          return learned("elementwise scale (" + op + ")");
        }
        if (n->is("Concat"))
          return learned("concatenated with activations (a learned token)");
        return learned("used by " + op);
      }
    }
    if (frozen.empty())
      return {false, "unused (reaches no output)"};
    return {false, frozen};
  }

private:
  const Graph &g_;
  StaticValues static_;
};

class ClassifyParameters : public Pass {
public:
  llvm::StringRef name() const override { return "classify-parameters"; }

  llvm::Error run(Graph &g) override {
    Classifier c(g);
    for (Node *n : g.nodes()) {
      if (!n->is("Weight"))
        continue;
      Verdict v = c.classify(*n);
      n->setAttr("trainable", Attribute::ofInt(v.trainable ? 1 : 0));
      n->setAttr("role", Attribute::ofString(v.reason));
    }
    return llvm::Error::success();
  }
};

} // namespace

bool isTrainableWeight(const Node &weight) {
  return weight.is("Weight") && isFloat(weight.output()->type().dtype) && weight.intAttr("trainable", 1) != 0;
}

llvm::Expected<TrainableList> readTrainableList(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "--trainable-file %s: cannot read it: %s",
                                   path.str().c_str(), buf.getError().message().c_str());
  TrainableList list{path.str(), {}};
  llvm::SmallVector<llvm::StringRef, 64> lines;
  (*buf)->getBuffer().split(lines, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i];
    for (size_t hash = line.find('#'); hash != llvm::StringRef::npos; hash = line.find('#', hash + 1))
      if (hash == 0 || llvm::isSpace(line[hash - 1])) { // a '#' inside a name is part of it
        line = line.take_front(hash);
        break;
      }
    line = line.trim();
    if (!line.empty())
      list.names.push_back({static_cast<unsigned>(i + 1), line.str()});
  }
  return list;
}

/// Exactly the listed weights trainable; the other float weights frozen.
/// The initializer names a Weight node answers to: its own, and those of the
/// heads tie-embeddings tied to it (one parameter: an override of either
/// name applies to it).
/// The names a user may give weight node `n` by: its own, the heads tied to
/// it, and the model's initializer it is part of (a fused q/k/v piece, a kv
/// head's copies: split-fused-projections and replicate-kv-heads rename them).
static std::vector<std::string> weightNames(const Graph &g, const Node &n) {
  std::vector<std::string> names{n.stringAttr("name", "")};
  for (std::string &h : tiedHeadNames(n))
    names.push_back(std::move(h));
  if (const WeightRef *ref = g.weights.find(names[0]); ref && !ref->source.empty() && ref->source != names[0])
    names.push_back(ref->source);
  return names;
}

static llvm::Error applyTrainableList(Graph &g, const TrainableList &list) {
  llvm::StringMap<llvm::SmallVector<Node *, 1>> weights; // by name (a name may have several nodes)
  for (Node *n : g.nodes())
    if (n->is("Weight"))
      for (const std::string &name : weightNames(g, *n))
        weights[name].push_back(n);
  llvm::StringMap<unsigned> listed; // name -> its first line
  for (const auto &[line, name] : list.names) {
    auto it = weights.find(name);
    auto where = list.path + ":" + std::to_string(line);
    if (it == weights.end())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--trainable-file %s: '%s' is not an initializer of the model",
                                     where.c_str(), name.c_str());
    DType dtype = it->second.front()->output()->type().dtype;
    if (!isFloat(dtype))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--trainable-file %s: '%s' is an integer or bool initializer (%s): it has "
                                     "no gradient and cannot be trainable",
                                     where.c_str(), name.c_str(),
                                     dtypeName(dtype).str().c_str());
    listed.try_emplace(name, line);
  }
  for (Node *n : g.nodes()) {
    if (!n->is("Weight") || !isFloat(n->output()->type().dtype))
      continue; // an integer weight keeps the default rule's reason
    std::string reason = "not in " + list.path;
    bool trainable = false;
    const WeightRef *ref = g.weights.find(n->stringAttr("name", ""));
    for (const std::string &name : weightNames(g, *n))
      if (auto it = listed.find(name); it != listed.end() && !trainable) {
        trainable = true;
        reason = "listed in " + list.path + ":" + std::to_string(it->second) +
                 (name == n->stringAttr("name", "") ? ""
                  : ref && ref->source == name ? " (as '" + name + "', the initializer it is part of)"
                                               : " (as '" + name + "', the head tied to it)");
      }
    n->setAttr("trainable", Attribute::ofInt(trainable ? 1 : 0));
    n->setAttr("role", Attribute::ofString(reason));
  }
  return llvm::Error::success();
}

llvm::Error applyParameterOverrides(Graph &g, const ParameterOverrides &o) {
  if (o.list)
    if (auto err = applyTrainableList(g, *o.list))
      return err;
  for (bool makeTrainable : {false, true}) {
    for (const std::string &pattern : makeTrainable ? o.trainable : o.freeze) {
      const char *flag = makeTrainable ? "--trainable" : "--freeze";
      auto glob = llvm::GlobPattern::create(pattern);
      if (!glob)
        return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s '%s': %s", flag, pattern.c_str(),
                                       llvm::toString(glob.takeError()).c_str());
      bool matched = false;
      for (Node *n : g.nodes()) {
        if (!n->is("Weight"))
          continue;
        std::vector<std::string> names = weightNames(g, *n);
        if (std::none_of(names.begin(), names.end(), [&](const std::string &s) { return glob->match(s); }))
          continue;
        matched = true;
        if (makeTrainable && !isFloat(n->output()->type().dtype))
          continue; // an integer table has no gradient
        n->setAttr("trainable", Attribute::ofInt(makeTrainable ? 1 : 0));
        n->setAttr("role", Attribute::ofString(std::string(flag) + " " + pattern));
      }
      if (!matched)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "%s '%s' matches no initializer (a glob over the whole name)", flag,
                                       pattern.c_str());
    }
  }
  return llvm::Error::success();
}

std::vector<ParameterClass> parameterClasses(const Graph &g) {
  std::vector<ParameterClass> out;
  llvm::StringSet<> seen;
  for (const Node *n : g.nodes()) {
    if (!n->is("Weight"))
      continue;
    std::string name = n->stringAttr("name", "");
    if (!seen.insert(name).second)
      continue;
    out.push_back({name, isTrainableWeight(*n), n->stringAttr("role", isFloat(n->output()->type().dtype)
                                                                           ? "unclassified"
                                                                           : "integer or bool dtype")});
  }
  return out;
}

PassInfo classifyParametersPass() {
  return {"classify-parameters", "Mark each weight trainable (a parameter) or frozen (a buffer), with the reason",
          "Follows every float weight through the ops that keep it a table (views, lookups, combinations with "
          "constants and integer inputs) to the op that meets an activation: projection operands, norm scales, "
          "embedding tables, biases and learned embeddings added to activations, concatenated tokens are "
          "trainable; integer weights, rotary frequencies (Cos/Sin) and tables "
          "(multiplied into q/k), additive attention masks (0 / <= -1e4, added to the scores before Softmax) are "
          "frozen. Sets attributes trainable = 0|1 and role = the reason; autodiff differentiates trainable "
          "weights only.", [] { return std::make_unique<ClassifyParameters>(); }};
}

} // namespace partita

namespace partita {

std::vector<std::string> sharedParameterWarnings(const Graph &g, size_t limit) {
  std::vector<std::string> lines;
  size_t more = 0;
  for (const Node *w : g.nodes()) {
    if (!w->is("Weight") || !isTrainableWeight(*w) || w->output()->type().numel() < 2)
      continue;
    std::map<std::string, std::vector<const Node *>> byOp; // the readers, through casts
    std::vector<const Value *> values{w->output()};
    for (size_t i = 0; i < values.size(); ++i)
      for (const Node *u : values[i]->users()) {
        if (u->is("Cast"))
          values.push_back(u->output());
        else
          byOp[u->op()].push_back(u);
      }
    for (const auto &[op, readers] : byOp) {
      std::set<const Node *> distinct(readers.begin(), readers.end());
      if (distinct.size() < 2)
        continue;
      if (lines.size() >= limit) {
        ++more;
        break;
      }
      lines.push_back("'" + w->stringAttr("name", w->output()->name()) + "' is one parameter read by " +
                      std::to_string(distinct.size()) + " " + op + " nodes (" + readers.front()->describe() +
                      ", ...): training updates it once for all of them. If the model does not share it, "
                      "the export merged equal initializers (torch.onnx.export in eval mode does): export with "
                      "training=torch.onnx.TrainingMode.TRAINING");
      break;
    }
  }
  if (more)
    lines.push_back(std::to_string(more) + " more such parameter(s)");
  return lines;
}

} // namespace partita
